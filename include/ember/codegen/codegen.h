// Code generation: Task -> C++ source for the x86-64 CPU back end.
//
// A kernel is an `extern "C"` function with the signature of ember_kernel_fn
// (runtime_include/ember_rt/kernel.h). Stages become loop nests; the innermost loop of an
// elementwise computation, a reduction and a matmul epilogue is written with the vector
// type ember_rt::vf, whose width and instructions follow the ISA the source is compiled
// for (AVX-512, AVX2, or scalar). Matmul stages call the GEMM template of
// runtime_include/ember_rt/gemm.h with a generated epilogue.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/ir/task.h"

namespace ember::codegen {

// The blocking of the GEMM template (ember_rt::GemmTuning, runtime_include/ember_rt/gemm.h)
// that a kernel's matmul stages use. All zero (kernel -1) is the template's analytic default;
// any value is valid (the template clamps), so a tuner may try anything.
struct GemmConfig {
  int64_t mc = 0, nc = 0, kc = 0;
  int kernel = -1;  // micro-kernel index; -1: automatic (incl. dot-product and matvec paths)
  int split_k = 0;  // 0: automatic; 1: K is never split; n >= 2: K split into n parts
  bool is_default() const { return mc == 0 && nc == 0 && kc == 0 && kernel < 0 && split_k == 0; }
  bool operator==(const GemmConfig&) const = default;
  std::string str() const;  // "mc=.. nc=.. kc=.. kernel=.. split_k=.."
};

// How the kernel's matmul stages are configured.
struct KernelConfig {
  GemmConfig gemm;
  // The tuning build: matmul stages read their GemmTuning at run time from the module's
  // `ember_tuning` array (kTuningGlobal), so one compiled kernel serves every candidate.
  bool gemm_from_global = false;
  // Input buffers of the task that are constant B operands of its matmul stages, given to
  // the kernel prepared (ember_rt/gemm_prepared.h) by the module's own kPrepareGemmB with
  // this config's blocking: the stage reads their panels, never the matrix.
  std::vector<int> prepared_b;
  // The names of the task's values as comments beside its buffers and stages, for people
  // reading the source. Off for the text that finds identical kernels (two layers of a model
  // that compute the same on buffers of the same shapes have one kernel).
  bool name_comments = true;
};

// The module-level array a tuning build's kernels read {mc, nc, kc, kernel, split_k} from;
// make_translation_units defines it when any kernel uses it.
inline constexpr const char* kTuningGlobal = "ember_tuning";

// The C++ definition of one kernel named `fn_name`. `symbols` gives the order of the
// symbolic dimensions in the kernel's `syms` argument. Buffers of the task must be ordered
// inputs, outputs, scratch (the kernel's `args` order).
std::string generate_kernel(const ir::Task& task, const std::string& fn_name,
                            const std::vector<std::string>& symbols,
                            const KernelConfig& config = {});

// How a generated kernel calls the GEMM (runtime_include/ember_rt/gemm.h).
inline constexpr const char* kGemmCall = "ember_rt::gemm(";
// A call with static sizes passes the facts its path is chosen from, as
// ember_rt::gemm_choice(ember_rt::GemmSite{...}); define_gemm_once lists them for the
// definition, which then compiles only the paths those calls take.
inline constexpr const char* kGemmSite = "ember_rt::GemmSite{";

// Groups kernel definitions into at most `max_units` translation units, each with the
// includes it needs; the first one also defines ember_module_abi(), ember_rt::kPrepareGemmB
// when a kernel reads prepared operands, and the GEMM machinery (define_gemm_once).
std::vector<std::string> make_translation_units(const std::vector<std::string>& kernels,
                                                int max_units);

// The units of one shared object compile the GEMM machinery once: ember_rt/all.h only
// declares it, and when any unit calls the GEMM, the first unit includes its definition
// (ember_rt/gemm_erased.h) unless one already does. Sources saved by an ember that compiled it
// in every unit go through this too before they are built again.
void define_gemm_once(std::vector<std::string>* units);
// Includes ember_rt/pieces.h in the first unit, unless a unit does already: the pieces of the
// runtime's routines the kernels may call (the JIT links them prebuilt; see compile_shared).
void define_pieces_once(std::vector<std::string>* units);

}  // namespace ember::codegen
