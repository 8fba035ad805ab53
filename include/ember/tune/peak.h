// What this machine can do at most: the floating-point throughput and the memory bandwidth
// that the profile (CompiledGraph::profile, ember.profile_table) compares each kernel with.
//
// machine_peak(threads) measures, on the thread pool with `threads` threads,
//   gflops  float32 FMA throughput with the vector instructions the kernels are generated for
//           (isa_from_env(): AVX-512, AVX2 or scalar): independent chains of fused
//           multiply-adds in registers, no memory traffic;
//   gbps    memory bandwidth of a streaming triad a[i] = b[i] + s * c[i] over three arrays
//           four times the last-level cache together (64 MiB to 512 MiB), counting 12 bytes
//           per element (two reads and a write, as STREAM does);
//   gbps_l2, gbps_llc  the same triad over half of each thread's level-2 cache, and over half
//           of the last-level cache: the bandwidth of data that lives in those caches (a
//           kernel whose data fits there is compared with them, not with memory);
// each the best of a few repetitions, in well under a second. The result is kept as a
// tuning record (ember/tune/tune.h: <cache_dir()>/tuning/), keyed by the CPU's model name,
// the ISA, the thread count and ember's version, and read back by the next call, in this
// process or another; a record that cannot be read or holds impossible values is measured
// again and replaced, never trusted. A peak measured while other work ran is too low, and
// stays in the record: machine_peak(threads, true) measures again and keeps the larger of
// each figure (the profile asks for it when a kernel runs faster than the recorded peak).
#pragma once

#include <cstdint>
#include <string>

namespace ember {

struct MachinePeak {
  double gflops = 0.0;       // float32 FMA throughput, GFLOP/s (an FMA is two operations)
  double gbps = 0.0;         // triad bandwidth from memory, GB/s (1e9 bytes per second)
  double gbps_l2 = 0.0;      // ... from the level-2 caches of the threads
  double gbps_llc = 0.0;     // ... from the last-level cache
  int64_t l2_bytes = 0;      // one core's level-2 cache
  int64_t llc_bytes = 0;     // the last-level cache
  int threads = 0;           // the threads measured with
  std::string isa;           // isa_name() of the instructions measured
  std::string cpu;           // the CPU's model name
  bool from_record = false;  // read from the record, not measured by this call
  std::string record;        // the record's path
};

// The peaks with `threads` threads (0: get_num_threads(); more than the thread pool has
// measure with the pool's), from the record when there is a valid one, else measured now
// and recorded. With `remeasure`, measured now whatever the record holds; each figure is the
// larger of the new measurement and the record's, and is recorded.
MachinePeak machine_peak(int threads = 0, bool remeasure = false);

}  // namespace ember
