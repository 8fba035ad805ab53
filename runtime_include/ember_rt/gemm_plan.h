// How ember_rt::gemm (gemm.h) runs a call, decided from its GemmForm alone: the blocking
// plan, the path (a packed micro-kernel, dot products or matrix-vector), the number of K
// parts, the layout of a prepared B, and which pieces of the machinery a module needs. All
// of it is constexpr, so that a call whose shape is known when its kernel is compiled has
// its path chosen then (gemm_choice) and its module compiles only that path (gemm_erased.h).
#pragma once

#include <cstdint>

#include "gemm_base.h"  // GemmShape, GemmForm, GemmTuning, the shared helpers
#include "gemm_gemv.h"  // gemv_applies, gemv_block
#include "gemm_kernels.h"
#include "lazy.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

namespace gemm_detail {

// Rows of A (in micro-tile heights) up to which B is not packed when its rows are contiguous.
constexpr int64_t kDirectBMaxM = 2;
// Rows of A up to which x * W^T (both operands contiguous along K) uses dot products.
// Measured: on Zen 3 (AVX2) dot products win up to 64 rows; with AVX-512's wider packed
// micro-kernels (an Intel Xeon), up to 16: at 32 rows packing ran 1.2x faster, at 64 rows
// 1.9-2.0x (N 576-3072, K 768-1792).
constexpr int64_t kDotMaxM = vf::width >= 16 ? 16 : 64;

// Blocking chosen for one call.
struct Plan {
  int64_t mc, nc, kc;  // effective block sizes
  int64_t mb, nb;      // number of M and N blocks
  bool direct_b;       // B is read in place (small M, rows of B contiguous): no B packing
};

// Splits `total` into blocks of at most `block` (a multiple of `unit`), evened out so the
// last block is not a sliver.
constexpr void even_blocks(int64_t total, int64_t block, int64_t unit, int64_t& size,
                           int64_t& count) {
  count = ceil_div(total, block);
  size = round_up(ceil_div(total, count), unit);
  count = ceil_div(total, size);
}

constexpr Plan make_plan(const GemmForm& s, const GemmTuning& t, int mr, int nr, int threads) {
#if defined(EMBER_RT_AVX512)
  // Zen 4 (1 MiB of L2): a 32-float-wide B micro-panel is 96 KiB at kc = 768 and streams
  // from L2 at a small fraction of its bandwidth, next to the A block (mc x kc, 516 KiB);
  // the B block (kc x nc, 6 MiB) stays in L3. Against kc = 256, a micro-tile's stores and
  // the restarts of its streams come a third as often: 128 x 3072 x 768 with a GELU ran
  // 1.04x faster, 1024^3 1.03x (gemm_bench, 2 threads).
  const int64_t def_kc = 768, def_mc = 12 * mr, def_nc = 2048;
#elif defined(EMBER_RT_AVX2)
  // A 16-wide B micro-panel of kc = 256 is 16 KiB: half of L1. A block 144 x 256 in L2.
  const int64_t def_kc = 256, def_mc = 24 * mr, def_nc = 2048;
#else
  const int64_t def_kc = 256, def_mc = 64, def_nc = 256;
#endif
  Plan p;
  // With few rows of A, a packed B panel would be reused by only a few micro-tiles: reading
  // B in place is cheaper than copying it.
  p.direct_b = s.b_n == 1 && !s.b_rows && s.M <= kDirectBMaxM * mr;
  const int64_t kc = clamp64(t.kc > 0 ? t.kc : def_kc, 1, 1 << 16);
  const int64_t mc = clamp64(t.mc > 0 ? t.mc : def_mc, mr, 1 << 16);
  const int64_t nc = clamp64(t.nc > 0 ? t.nc : def_nc, nr, 1 << 20);
  int64_t kb;
  even_blocks(s.K, kc, 1, p.kc, kb);
  even_blocks(s.M, round_up(mc, mr), mr, p.mc, p.mb);
  even_blocks(s.N, round_up(nc, nr), nr, p.nc, p.nb);
  if (s.prepared) {  // B's blocks were packed once, kc deep (prepare_b)
    p.kc = s.prepared_kc;
    p.direct_b = false;
    // Nothing of B is packed per call, and with one K block no block of C is revisited:
    // when A is one block of rows too, N needs one block per thread, no more. Each N block
    // packs A again, and 25 blocks of GPT-2's 50257 logits shared 13 : 12 by two threads
    // (1.06x slower). (Not fewer: with the rows of A split between the threads instead,
    // both read all of B, and 197 x 3072 x 768 ran 1.1x slower. Several blocks of rows keep
    // nc, so that each reads a B block the last one left in L3.)
    if (s.K <= p.kc && t.nc <= 0 && p.mb == 1)
      even_blocks(s.N, round_up(ceil_div(s.N, threads > 1 ? threads : 1), nr), nr, p.nc, p.nb);
  }
  // Enough tasks for the threads: split N further (each thread then packs a disjoint part of
  // B), and keep the task count a multiple of the thread count when that is cheap.
  if (threads > 1) {
    const int64_t max_nb = ceil_div(s.N, nr);
    const int64_t per_nb = s.batch * p.mb;
    int64_t nb = p.nb;
    if (per_nb * nb < threads) nb = ceil_div(threads, per_nb);
    if (per_nb * nb < 4 * threads)
      for (int64_t cand = nb; cand <= nb + threads && cand <= max_nb; ++cand)
        if ((per_nb * cand) % threads == 0) {
          nb = cand;
          break;
        }
    if (nb > max_nb) nb = max_nb;
    if (nb != p.nb) even_blocks(s.N, round_up(ceil_div(s.N, nb), nr), nr, p.nc, p.nb);
    if (s.batch * p.mb * p.nb < threads && p.mc > mr)  // still too few: split M as well
      even_blocks(s.M, round_up(ceil_div(s.M, ceil_div(threads, s.batch * p.nb)), mr), mr, p.mc,
                  p.mb);
  }
  return p;
}

// ---- path choice -----------------------------------------------------------------------------

// The path a call takes without split-K: a packed micro-kernel index, or one of these.
constexpr int kPathGemv = -2, kPathDot = -3;

// The micro-kernel a prepared B is packed for, and that reads it: the tuning's, else the
// default one (whose panel width every M uses, see run_path).
constexpr int prepared_kernel(const GemmTuning& tune) {
  return tune.kernel >= 0 && tune.kernel < kNumKernels ? tune.kernel : 0;
}

constexpr int choose_path(const GemmForm& s, const GemmTuning& tune) {
  if (s.prepared) return prepared_kernel(tune);
  if (tune.kernel >= 0 && tune.kernel < kNumKernels) return tune.kernel;
  // The matrix-vector and dot-product paths read B's rows b_k apart, and store C.
  const bool b_strided = !s.b_rows && !s.accumulate;
  if (b_strided && (s.M == 1 || s.N == 1) && gemv_applies(s)) return kPathGemv;
  if (b_strided && s.a_k == 1 && s.b_k == 1 && s.M <= kDotMaxM) return kPathDot;
  // Least padding wins: the useful fraction of the computed tiles, preferring the default
  // kernel (index 0) unless another wastes clearly less.
  int kernel = 0;
  if (s.M <= 0 || s.N <= 0) return kernel;  // no tiles (and no 0 / 0 in a constant expression)
  double best = 0;
  for (int id = 0; id < kNumKernels; ++id) {
    const KernelShape ks = kernel_shape(id);
    const double used = static_cast<double>(s.M) / round_up(s.M, ks.mr) *
                        (static_cast<double>(s.N) / round_up(s.N, ks.nr));
    if (used > best * 1.15) best = used, kernel = id;
  }
  return kernel;
}

// The pieces of the GEMM machinery a call can run (a set of bits): gemm_erased, whose path
// is chosen at run time, compiles them all; gemm_chosen, called with a path chosen at compile
// time (gemm_choice), only those of the calls its shared object makes (gemm_erased.h).
constexpr uint32_t kUsesSplitK = 1u << 0;
constexpr uint32_t kUsesGemv = 1u << 1;
constexpr uint32_t kUsesDot = 1u << 2;
constexpr uint32_t kUsesPreparedM1 = 1u << 3;     // a prepared B read by 1-row tiles
constexpr uint32_t kUsesPreparedSmall = 1u << 4;  // ... by kPreparedSmallMR-row tiles
constexpr uint32_t kUsesPreparedMid = 1u << 5;    // ... by kPreparedMidMR-row tiles
constexpr uint32_t kUsesKernel0 = 1u << 6;        // packed micro-kernel `id`: kUsesKernel0 << id
constexpr uint32_t kUsesAll = ~0u;

// ---- split-K -------------------------------------------------------------------------------

constexpr int64_t kSplitMinPartK = 256;     // automatic split: depth of each part at least
constexpr double kSplitBelowBalance = 0.8;  // dot, gemv: split below this load balance
constexpr double kSplitMinGain = 0.9;       // packed: split when predicted at most 0.9x as slow
constexpr int64_t kSplitMaxParts = 256;     // any requested part count is clamped to this
constexpr int64_t kSplitMaxPartialFloats = int64_t{1} << 24;  // and to a 64 MiB buffer
// The automatic choice is made from the shape alone, for this many threads: the summation
// order must not depend on the pool's size, so that results are bit-identical whatever the
// number of threads (tests/python/test_core_threads.py). One thread runs the parts in turn.
constexpr int kSplitNominalThreads = 2;

// Whether splitting K into `parts` should pay on `path` (the automatic choice).
constexpr bool split_pays(const GemmForm& s, const GemmTuning& tune, int path, int threads,
                          int64_t parts) {
  if (path == kPathGemv || path == kPathDot) {
    // No packing to share: split when the blocks of outputs (gemv_block's, or run_dot's 48
    // columns per batch) share out unevenly over the threads.
    const bool row = s.M == 1;
    const int64_t J = path == kPathDot ? s.N : row ? s.N : s.M;
    const int64_t jb =
        path == kPathDot ? 48 : gemv_block(J, s.K, (row ? s.b_n : s.a_m) == 1, threads);
    const int64_t per_batch = ceil_div(J, jb);
    const int64_t tasks = path == kPathDot ? s.batch * per_batch : per_batch;
    if (tasks >= 8 * threads) return false;
    const double busiest = busiest_chunk(tasks, threads, [&](int64_t t, bool) {
      const int64_t j0 = t % per_batch * jb;
      return static_cast<double>(J - j0 < jb ? J - j0 : jb);
    });
    const double total = static_cast<double>(J) * (path == kPathDot ? s.batch : 1);
    return total / threads < kSplitBelowBalance * busiest;
  }
  // Packed: the busiest thread's predicted cost with and without the split.
  const KernelShape ks = kernel_shape(path);
  const Plan p = make_plan(s, tune, ks.mr, ks.nr, threads);
  const int64_t tasks = s.batch * p.mb * p.nb;
  if (tasks >= 8 * threads) return false;
  const double whole = busiest_chunk(tasks, threads, [&](int64_t t, bool first) {
    const int64_t m0 = (t % p.mb) * p.mc, n0 = ((t / p.mb) % p.nb) * p.nc;
    const int64_t mlen = s.M - m0 < p.mc ? s.M - m0 : p.mc;
    const int64_t nlen = s.N - n0 < p.nc ? s.N - n0 : p.nc;
    // A run of tasks with the same N block packs its B block once (run_packed).
    const bool pack_b = !p.direct_b && !s.prepared && (first || m0 == 0);
    return packed_cost(round_up(mlen, ks.mr), round_up(nlen, ks.nr), mlen, pack_b ? nlen : 0, s.K);
  });
  const Plan serial = make_plan(s, tune, ks.mr, ks.nr, 1);  // each part is a serial call
  const int64_t part_k = ceil_div(s.K, parts);
  const bool packs_b = !serial.direct_b && !s.prepared;
  const double part = packed_cost(round_up(s.M, ks.mr), serial.nb * round_up(serial.nc, ks.nr),
                                  s.M * serial.nb, packs_b ? s.N : 0, part_k);
  const double reduce = static_cast<double>(s.batch) * s.M * s.N * parts / threads + 5000.0;
  return busiest_chunk(s.batch * parts, threads, [&](int64_t, bool) { return part; }) + reduce <
         kSplitMinGain * whole;
}

// The number of K parts for this call (1: no split); it does not depend on the thread count.
constexpr int64_t split_parts(const GemmForm& s, const GemmTuning& tune, int path) {
  int64_t parts = tune.split_k;
  if (parts == 1 || s.accumulate) return 1;
  if (parts <= 0) {  // automatic (negative values too)
    const double work = 2.0 * static_cast<double>(s.batch) * s.M * s.N * s.K;
    if (s.K < 2 * kSplitMinPartK || work < 4 * 32768.0) return 1;
    parts = kSplitNominalThreads;
    if (!split_pays(s, tune, path, kSplitNominalThreads, parts)) return 1;
  }
  const int64_t outputs = s.batch * s.M * s.N;
  // A prepared B is split at its blocks' boundaries.
  const int64_t units = s.prepared ? ceil_div(s.K, s.prepared_kc) : s.K;
  parts = clamp64(parts, 1, kSplitMaxParts < units ? kSplitMaxParts : units);
  if (parts > 1 && (parts - 1) * outputs > kSplitMaxPartialFloats)
    parts = 1 + kSplitMaxPartialFloats / outputs;
  return parts;
}

}  // namespace gemm_detail

// ---- prepared B operands (gemm_prepared.h) ---------------------------------------------------

// The layout in which a constant K x N operand is prepared for products with this tuning on
// this ISA: the panel width of the micro-kernel that will read it and the plan's depth blocks.
constexpr PreparedB prepared_b_layout(const float* data, int64_t K, int64_t N, int64_t batch_stride,
                                      const GemmTuning& tune) {
  const gemm_detail::KernelShape ks = gemm_detail::kernel_shape(gemm_detail::prepared_kernel(tune));
  PreparedB pb;
  pb.data = data;
  pb.K = K;
  pb.N = N;
  pb.nr = ks.nr;
  pb.kc = 1;
  pb.batch_stride = batch_stride;
  if (K > 0 && N > 0) {
    GemmForm s;
    s.batch = s.M = 1;
    s.K = K;
    s.N = N;
    pb.kc = gemm_detail::make_plan(s, tune, ks.mr, ks.nr, 1).kc;
  }
  return pb;
}

// ---- paths chosen at compile time ---------------------------------------------------------

// What the path choice (choose_path, split_parts) reads of a call, when all of it is known
// when the kernel is compiled (static shapes, a fixed tuning): the generated code passes
// gemm_choice(GemmSite{...}) to ember_rt::gemm, and the module compiles only the paths its
// calls take (gemm_erased.h). b_rows and prepared: whether B is read through a row table,
// or from panels prepared for this tuning (prepared_b_layout).
struct GemmSite {
  int64_t batch, M, N, K, a_m, a_k, b_k, b_n, c_m, b_rows, prepared;
  GemmTuning tune;
};

struct GemmChoice {
  GemmSite site;
  int path;       // choose_path's
  int64_t parts;  // split_parts's
};

namespace gemm_detail {

constexpr GemmTuning site_tuning(const GemmSite& c) { return c.tune; }

// The call as choose_path sees it.
constexpr GemmForm site_form(const GemmSite& c) {
  GemmForm s;
  s.batch = c.batch, s.M = c.M, s.N = c.N, s.K = c.K;
  s.a_m = c.a_m, s.a_k = c.a_k, s.b_k = c.b_k, s.b_n = c.b_n, s.c_m = c.c_m;
  s.b_rows = c.b_rows != 0;
  s.prepared = c.prepared != 0;
  if (s.prepared) s.prepared_kc = prepared_b_layout(nullptr, c.K, c.N, 0, site_tuning(c)).kc;
  return s;
}

// The pieces (kUses*) a call on `path`, in `parts` K parts, can run, whatever the threads.
constexpr uint32_t gemm_uses(const GemmForm& s, int path, int64_t parts) {
  if (s.batch <= 0 || s.M <= 0 || s.N <= 0 || s.K <= 0) return 0;  // no product
  uint32_t uses = parts > 1 ? kUsesSplitK : 0;
  if (path == kPathGemv) return uses | kUsesGemv;
  if (path == kPathDot) return uses | kUsesDot;
  if (s.prepared && path == 0) {
    // Split-K's parts may take fewer rows each (blocks of 8, run_split_k).
    const int64_t lo = parts > 1 ? 1 : s.M;
    if (lo <= 1 && s.M >= 1) uses |= kUsesPreparedM1;
    if (lo <= kPreparedSmallMR && s.M > 1) uses |= kUsesPreparedSmall;
    if (lo <= kPreparedMidMR && s.M > kPreparedSmallMR) uses |= kUsesPreparedMid;
    if (s.M <= kPreparedMidMR) return uses;
  }
  return uses | (kUsesKernel0 << path);
}

constexpr uint32_t gemm_uses(const GemmChoice& c) {
  return gemm_uses(site_form(c.site), c.path, c.parts);
}

// Whether a call is the one its choice was made for (gemm_chosen checks).
EMBER_RT_LAZY
inline bool site_matches(const GemmShape& s, const GemmSite& c) {
  return s.batch == c.batch && s.M == c.M && s.N == c.N && s.K == c.K && s.a_m == c.a_m &&
         s.a_k == c.a_k && s.c_m == c.c_m && (s.b_rows != nullptr) == (c.b_rows != 0) &&
         (s.prepared.data != nullptr) == (c.prepared != 0) &&
         (c.prepared != 0 || (s.b_k == c.b_k && s.b_n == c.b_n));
}

// The path gemm_erased would choose for the call (gemm_choice, at compile time).
constexpr GemmChoice choose(const GemmSite& site) {
  const GemmForm s = site_form(site);
  const GemmTuning t = site_tuning(site);
  const int path = choose_path(s, t);
  const int64_t parts = s.batch > 0 && s.M > 0 && s.N > 0 && s.K > 0 ? split_parts(s, t, path) : 1;
  return GemmChoice{site, path, parts};
}

}  // namespace gemm_detail

// The path of a call known when the kernel is compiled (GemmSite), chosen then.
consteval GemmChoice gemm_choice(const GemmSite& site) { return gemm_detail::choose(site); }

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
