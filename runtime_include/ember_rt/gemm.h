// Single-precision GEMM for generated kernels: C[b] = A[b] * B[b] (+ a fused epilogue).
//
//   GemmShape s{batch, M, N, K, A, a_batch, a_m, a_k, B, b_batch, b_k, b_n, C, c_batch, c_m};
//   ember_rt::gemm(s, ctx, epilogue);             // or ember_rt::gemm(s, ctx, NoEpilogue{});
//
// A and B are read through arbitrary element strides (transposed or broadcast operands need
// no copy; batch strides may be 0), or B's rows through a table of offsets (GemmShape::b_rows:
// a convolution's padded input read in place). C is row-major per batch: (b, m, n) at
// C[b * c_batch + m * c_m + n]; distinct batches must not overlap. K == 0 gives C = 0.
//
// The epilogue is called as epi(b, m, n0, len, c_row) once for every finished row segment
// C[b, m, n0 : n0 + len], right after its last K block was stored (still in L1), and may
// rewrite c_row[0 : len) in place (bias, activation, residual, ...). Segments are disjoint
// and cover C exactly once; calls for different segments may run on different threads.
//
// Paths, chosen per call:
//   * packed (BLIS-style): B packed in kc x nc blocks, A in mc x kc blocks, and a register-
//     blocked micro-kernel (gemm_kernels.h: 14x32 or 6x64 zmm tiles with AVX-512, 6x16 ymm
//     with AVX2, 4x4 scalar) multiplies them; edge tiles are computed on zero-padded panels
//     and stored with masks. With few rows of A and B's rows contiguous, B is read in place.
//     A constant B prepared once (GemmShape::prepared, gemm_prepared.h: prepare_b) is read
//     from its panels, never packed, and takes this path at every M (1 x NR, 4 x NR and, with
//     AVX-512, 8 x NR tiles for M <= 8); split-K parts then start at its depth blocks.
//     A B read through b_rows takes this path always, packed through the table.
//   * dot products: M <= 64 with A and B both contiguous along K (x * W^T, the layout of a
//     Linear layer's weight): 4 x 3 (AVX2) / 4 x 6 (AVX-512) tiles of dot products, no packing.
//   * matrix-vector: M == 1 or N == 1 (memory bound): B streamed with FMAs, no packing.
// Threads split (batch x N blocks x M blocks) statically through parallel_for; each packs its
// own blocks into thread-local scratch that persists between calls.
//
// Split-K: when those tasks are too few or too uneven for the threads (64 x 64 outputs with
// K = 4096, a batch-1 1x1 convolution, a dot product) and K is long, threads instead compute
// the output over disjoint K ranges, every path (packed, dot, matrix-vector) serially on its
// range (cut into row or column blocks too when threads outnumber parts): part 0 straight
// into C, the others into one shared buffer ((parts - 1) x batch x M x N floats, cached per
// calling thread). A second parallel pass adds the partials into C, in part order, and calls
// the epilogue once per row segment, as above, on the complete sums. GemmTuning::split_k
// forces a number of parts (clamped to [1, min(K, 256)] and to a 16M-float buffer). The
// automatic choice depends on the shape only, never on the thread count (results stay
// bit-identical for any number of threads; one thread runs the parts in turn): 2 parts, of
// K >= 256 each, where for 2 threads a cost model of the packed path (micro-tiles + packing,
// busiest thread) predicts a 10% gain, or the output blocks of the dot-product and
// matrix-vector paths share out below 80% evenly.
//
// The machinery is compiled once per translation unit whatever the epilogue: the epilogue
// reaches it through a function pointer, called once per row segment (16-64 floats), which
// costs nothing measurable next to the tile that produced the segment. (See gemm_erased for
// compiling it once per shared object instead.)
//
// Performance on the 2-core Zen 3 development machine (AVX2, benchmarks/kernels/gemm_bench):
// ~90% of the measured FMA peak for 512^3 and 1024^3 on one thread, 1.9x on two.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "gemm_base.h"  // GemmShape, GemmTuning, NoEpilogue, shared helpers
#include "gemm_gemv.h"  // the matrix-vector path
#include "gemm_kernels.h"
#include "gemm_plan.h"  // blocking, path choice, split-K, paths chosen at compile time
#include "kernel.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

namespace gemm_detail {

// The fewest micro-kernel calls per B micro-panel (row panels of A) at which run_packed
// prefetches the next panel during them.
constexpr int64_t kPrefetchCalls = 3;

// The packed path for one micro-kernel shape.
template <int MR, int NV>
inline void run_packed(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                       const Plan& p) {
  constexpr int NR = NV * vf::width;
  const int64_t per_batch = p.nb * p.mb;
  const double work = 2.0 * static_cast<double>(s.batch) * s.M * s.N * s.K;
  const bool prepared = s.prepared.data != nullptr;
  parallel_for(ctx, s.batch * per_batch, work, [&](int64_t t0, int64_t t1) {
    float* apack = scratch(ctx, kSlotA, static_cast<size_t>(p.mc * p.kc));
    float* bpack = prepared ? nullptr : scratch(ctx, kSlotB, static_cast<size_t>(p.nc * p.kc));
    for (int64_t t = t0; t < t1;) {
      // Task t = (batch, N block, M block), M block fastest: a run of consecutive tasks with
      // the same N block shares each packed B block.
      const int64_t b = t / per_batch;
      const int64_t jb = (t % per_batch) / p.mb;
      const int64_t ib0 = t % p.mb;
      const int64_t ib1 = ib0 + (t1 - t) < p.mb ? ib0 + (t1 - t) : p.mb;
      const int64_t n0 = jb * p.nc;
      const int64_t nlen = s.N - n0 < p.nc ? s.N - n0 : p.nc;
      const float* A = s.A + b * s.a_batch;
      float* C = s.C + b * s.c_batch;
      for (int64_t k0 = 0; k0 < s.K; k0 += p.kc) {
        const int64_t klen = s.K - k0 < p.kc ? s.K - k0 : p.kc;
        const bool first = k0 == 0, last = k0 + klen == s.K;
        const float* bblock = prepared ? prepared_b_panel(s.prepared, b, k0, n0) : bpack;
        const float* Bk = nullptr;
        if (!prepared && s.b_rows != nullptr) {  // rows at their own offsets: always packed
          pack_b_rows<NR>(s.B + b * s.b_batch + n0 * s.b_n, s.b_rows + k0, s.b_n, klen, nlen,
                          bpack);
        } else if (!prepared) {
          Bk = s.B + b * s.b_batch + k0 * s.b_k + n0 * s.b_n;
          if (!p.direct_b) pack_b<NR>(Bk, s.b_k, s.b_n, klen, nlen, bpack);
        }
        for (int64_t ib = ib0; ib < ib1; ++ib) {
          const int64_t m0 = ib * p.mc;
          const int64_t mlen = s.M - m0 < p.mc ? s.M - m0 : p.mc;
          pack_a<MR>(A + m0 * s.a_m + k0 * s.a_k, s.a_m, s.a_k, mlen, klen, apack);
          for (int64_t jr = 0; jr < nlen; jr += NR) {
            const int nv = static_cast<int>(nlen - jr < NR ? nlen - jr : NR);
            const float* bp = bblock + jr * klen;
            int64_t ldb = NR;
            if (p.direct_b && nv == NR) {  // small M, rows of B contiguous: read B in place
              bp = Bk + jr;
              ldb = s.b_k;
            } else if (p.direct_b) {  // ... except the last, partial panel, which is packed
              pack_b<NR>(Bk + jr, s.b_k, 1, klen, nv, bpack);
              bp = bpack;
            }
            // The next B micro-panel is brought into L2 while this one serves the A panels,
            // a slice of its lines per micro-kernel call, one line per K step (PanelPrefetch):
            // its first call then does not wait on memory. A model's weights (prepared B)
            // come from memory once per run. Measured with such cold panels (gemm_bench,
            // EMBER_BENCH_COLD_B=40, Zen 4), 128 x 768 x 768 ran 1.07x faster than with the
            // slices issued as a burst before each call. With fewer than kPrefetchCalls
            // calls per panel, no prefetch: a 1-row product on 4 MB of weights in L3 ran
            // 1.15x faster without (from memory, 4 to 8 rows ran 1.2x slower).
            const int64_t calls = (mlen + MR - 1) / MR;
            const float* next_b =
                calls >= kPrefetchCalls && jr + NR < nlen && !p.direct_b ? bp + NR * klen : nullptr;
            const int64_t next_lines = next_b != nullptr ? (klen * NR + 15) / 16 : 0;
            for (int64_t ir = 0; ir < mlen; ir += MR) {
              const int mv = static_cast<int>(mlen - ir < MR ? mlen - ir : MR);
              const int64_t call = ir / MR;
              const int64_t l0 = next_lines * call / calls, l1 = next_lines * (call + 1) / calls;
              const PanelPrefetch pf{next_b + l0 * 16, l1 - l0};
              float* c = C + (m0 + ir) * s.c_m + n0 + jr;
              if (mv == MR)
                micro_kernel<MR, NV>(klen, apack + ir * klen, bp, ldb, c, s.c_m, mv, nv,
                                     !first || s.accumulate, pf);
              else
                edge_tile<MR, NV>(klen, apack + ir * klen, bp, ldb, c, s.c_m, mv, nv,
                                  !first || s.accumulate, pf);
              if (last && epi != nullptr)
                for (int i = 0; i < mv; ++i)
                  epi(epi_ctx, b, m0 + ir + i, n0 + jr, nv, c + i * s.c_m);
            }
          }
        }
      }
      t += ib1 - ib0;
    }
  });
}

// ---- small M with both operands contiguous along K (dot products) -------------------------

// Tile shapes: kDotMB x kDotNB dot products, and kDot2NB columns when M <= 2.
#if defined(EMBER_RT_AVX512)
constexpr int kDotMB = 4, kDotNB = 6, kDot2NB = 8;  // 24 / 16 zmm accumulators
#elif defined(EMBER_RT_AVX2)
constexpr int kDotMB = 4, kDotNB = 3, kDot2NB = 4;  // 12 / 8 ymm accumulators
#else
constexpr int kDotMB = 2, kDotNB = 2, kDot2NB = 2;
#endif

// C = A * B with a_k == 1 and b_k == 1 and few rows: tasks are (batch, block of columns);
// a block of B (JB rows of B^T, in L2) is reused by every group of kDotMB rows of A, then the
// epilogue runs on each row of the block.
EMBER_RT_LAZY
inline void run_dot(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx) {
  constexpr int64_t JB = 48;  // B rows per task (in L2); a multiple of every tile width
  const int64_t blocks = ceil_div(s.N, JB);
  const double work = 2.0 * static_cast<double>(s.batch) * s.M * s.N * s.K;
  parallel_for(ctx, s.batch * blocks, work, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / blocks, n0 = (t % blocks) * JB;
      const int64_t nlen = s.N - n0 < JB ? s.N - n0 : JB;
      const float* A = s.A + b * s.a_batch;
      const float* B = s.B + b * s.b_batch + n0 * s.b_n;
      float* C = s.C + b * s.c_batch + n0;
      if (s.M <= 2) {  // two rows: twice the columns per tile instead
        const int mv = static_cast<int>(s.M);
        for (int64_t q = 0; q < nlen; q += kDot2NB) {
          const int nv = static_cast<int>(nlen - q < kDot2NB ? nlen - q : kDot2NB);
          dot_tile<2, kDot2NB>(s.K, A, s.a_m, B + q * s.b_n, s.b_n, C + q, s.c_m, mv, nv);
        }
      }
      for (int64_t m = 0; m < s.M && s.M > 2; m += kDotMB) {
        const int mv = static_cast<int>(s.M - m < kDotMB ? s.M - m : kDotMB);
        for (int64_t q = 0; q < nlen; q += kDotNB) {
          const int nv = static_cast<int>(nlen - q < kDotNB ? nlen - q : kDotNB);
          dot_tile<kDotMB, kDotNB>(s.K, A + m * s.a_m, s.a_m, B + q * s.b_n, s.b_n,
                                   C + m * s.c_m + q, s.c_m, mv, nv);
        }
      }
      if (epi != nullptr)
        for (int64_t m = 0; m < s.M; ++m) epi(epi_ctx, b, m, n0, nlen, C + m * s.c_m);
    }
  });
}

// ---- the pieces ------------------------------------------------------------------------------

// The parts of the GEMM that take the compiler its time: the packed product of each
// micro-tile shape, the dot products and the matrix-vector product. run_path calls them
// through these. Where EMBER_RT_GEMM_EXTERN is defined (generated modules) they are only
// declared here and pieces.h defines them (see there).
#if defined(EMBER_RT_GEMM_EXTERN)
template <int MR, int NV>
[[gnu::visibility("hidden")]] void packed_piece(const GemmShape& s, const LaunchContext* ctx,
                                                EpiFn epi, void* epi_ctx, const Plan& p);
[[gnu::visibility("hidden")]] void dot_piece(const GemmShape& s, const LaunchContext* ctx,
                                             EpiFn epi, void* epi_ctx);
[[gnu::visibility("hidden")]] bool gemv_piece(const GemmShape& s, const LaunchContext* ctx,
                                              EpiFn epi, void* epi_ctx);
#else
template <int MR, int NV>
inline void packed_piece(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                         const Plan& p) {
  run_packed<MR, NV>(s, ctx, epi, epi_ctx, p);
}
EMBER_RT_LAZY
inline void dot_piece(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx) {
  run_dot(s, ctx, epi, epi_ctx);
}
EMBER_RT_LAZY
inline bool gemv_piece(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx) {
  return try_gemv(s, ctx, epi, epi_ctx);
}
#endif

// A GEMM that a path the shared object did not compile was chosen for: a bug in
// gemm_uses, never bad input.
EMBER_RT_LAZY
[[noreturn, gnu::cold, gnu::noinline]] inline void missing_path(int path) {
  std::fprintf(stderr,
               "ember: internal error: a GEMM took path %d, which its module did not "
               "compile (gemm_uses)\n",
               path);
  std::abort();
}

// Runs the product (K >= 1) on the given path, without split-K, with the pieces in `Uses`.
// Not inlined: inlined into run_split_k's task loop, GCC spilled the dot-product tile's
// accumulators to the stack in its inner loop (measured 2x slower).
template <uint32_t Uses>
[[gnu::noinline]] inline void run_path(const GemmShape& s, const LaunchContext* ctx, EpiFn epi,
                                       void* epi_ctx, const GemmTuning& tune, int path) {
  if constexpr ((Uses & kUsesGemv) != 0)
    if (path == kPathGemv && gemv_piece(s, ctx, epi, epi_ctx)) return;
  if constexpr ((Uses & kUsesDot) != 0)
    if (path == kPathDot) return dot_piece(s, ctx, epi, epi_ctx);
  const int kernel = path >= 0 ? path : 0;
  const KernelShape ks = kernel_shape(kernel);
  const Plan p = make_plan(form_of(s), tune, ks.mr, ks.nr, num_threads(ctx));
  // A prepared B has no other form to fall back on: with few rows, the default kernel's
  // panels go through a shorter micro-tile instead of one mostly computing padding.
  if (s.prepared.data != nullptr && kernel == 0 && s.M <= kPreparedMidMR) {
    constexpr int NV0 = kDefaultNV;
    if (s.M == 1) {
      if constexpr ((Uses & kUsesPreparedM1) != 0)
        return packed_piece<1, NV0>(s, ctx, epi, epi_ctx, p);
    } else if (s.M <= kPreparedSmallMR) {
      if constexpr ((Uses & kUsesPreparedSmall) != 0)
        return packed_piece<kPreparedSmallMR, NV0>(s, ctx, epi, epi_ctx, p);
    } else if constexpr (kPreparedMidMR > kPreparedSmallMR && (Uses & kUsesPreparedMid) != 0) {
      return packed_piece<kPreparedMidMR, NV0>(s, ctx, epi, epi_ctx, p);
    }
    missing_path(path);
  }
#define EMBER_RT_RUN_CASE(ID, MR, NV)                 \
  if constexpr ((Uses & (kUsesKernel0 << (ID))) != 0) \
    if (kernel == ID) return packed_piece<MR, NV>(s, ctx, epi, epi_ctx, p);
  EMBER_RT_GEMM_KERNELS(EMBER_RT_RUN_CASE)
#undef EMBER_RT_RUN_CASE
  missing_path(path);
}

// Split-K: tasks (batch, part, block) compute the product over the part's K range serially
// on `path`, part 0 into C and the others into a shared buffer; then the partials are added
// into C, row segment by row segment, and the epilogue runs on each finished segment. With
// more threads than (batch, part) pairs, the output is cut into blocks of rows or columns
// too: an element's summation order does not depend on the cut.
template <uint32_t Uses>
inline void run_split_k(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                        const GemmTuning& tune, int path, int64_t parts) {
  const int64_t MN = s.M * s.N, stride = s.batch * MN;  // partial p - 1 at part + (p - 1) * stride
  // The calling thread's slot: every thread of the call writes its parts there, and
  // epilogues (elementwise) never start a GEMM of their own that could take it over.
  float* part = scratch(ctx, kSlotPartial, static_cast<size_t>((parts - 1) * stride));
  GemmTuning serial = tune;
  serial.split_k = 1;
  const int threads = num_threads(ctx);
  const bool by_rows = s.M >= s.N;
  const bool prepared = s.prepared.data != nullptr;
  const int64_t extent = by_rows ? s.M : s.N;
  const int64_t unit = by_rows ? 8 : prepared ? s.prepared.nr : 16;  // whole panels
  const int64_t kblocks = prepared ? ceil_div(s.K, s.prepared.kc) : s.K;
  int64_t blocks = 1;
  if (threads > s.batch * parts) blocks = ceil_div(threads, s.batch * parts);
  int64_t blk;
  even_blocks(extent, round_up(ceil_div(extent, blocks), unit), unit, blk, blocks);
  const double work = 2.0 * static_cast<double>(s.batch) * MN * s.K;
  parallel_for(ctx, s.batch * parts * blocks, work, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (parts * blocks), p = t / blocks % parts, x0 = t % blocks * blk;
      // K range of the part: whole blocks of a prepared B.
      const int64_t kb = prepared ? s.prepared.kc : 1;
      const int64_t k0 = kblocks * p / parts * kb;
      const int64_t k_end = kblocks * (p + 1) / parts * kb, k1 = k_end < s.K ? k_end : s.K;
      GemmShape sub = s;
      sub.batch = 1;
      sub.K = k1 - k0;
      sub.A = s.A + b * s.a_batch + k0 * s.a_k;
      if (prepared) {
        sub.prepared.data = s.prepared.data + b * s.prepared.batch_stride;
        sub.prepared.k_off += k0;
      } else if (s.b_rows != nullptr) {
        sub.B = s.B + b * s.b_batch;
        sub.b_rows = s.b_rows + k0;
      } else {
        sub.B = s.B + b * s.b_batch + k0 * s.b_k;
      }
      sub.C = p == 0 ? s.C + b * s.c_batch : part + (p - 1) * stride + b * MN;
      sub.c_m = p == 0 ? s.c_m : s.N;
      const int64_t len = extent - x0 < blk ? extent - x0 : blk;
      if (by_rows) {
        sub.M = len, sub.A += x0 * s.a_m, sub.C += x0 * sub.c_m;
      } else if (prepared) {
        sub.N = len, sub.prepared.n_off += x0, sub.C += x0;
      } else {
        sub.N = len, sub.B += x0 * s.b_n, sub.C += x0;
      }
      run_path<Uses>(sub, nullptr, nullptr, nullptr, serial, path);
    }
  });
  // Reduction: whole rows when there are enough of them, else rows cut into segments.
  const int64_t rows = s.batch * s.M;
  int64_t seg = s.N;
  if (rows < 4 * threads) seg = round_up(ceil_div(s.N, ceil_div(4 * threads, rows)), 16);
  const int64_t segs = ceil_div(s.N, seg);
  const double reduce_work = static_cast<double>(stride) * (parts + (epi != nullptr ? 8 : 0));
  parallel_for(ctx, rows * segs, reduce_work, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / segs / s.M, m = r / segs % s.M, n0 = r % segs * seg;
      const int64_t len = s.N - n0 < seg ? s.N - n0 : seg;
      float* row = s.C + b * s.c_batch + m * s.c_m + n0;
      add_partials(row, part + b * MN + m * s.N + n0, stride, static_cast<int>(parts - 1), len);
      if (epi != nullptr) epi(epi_ctx, b, m, n0, len, row);
    }
  });
}

// The whole GEMM, with the epilogue type-erased (its definition: gemm_erased.h). Normally an
// inline function compiled in every translation unit that calls gemm (~0.5 s of compile time
// with the default kernels), which the linker then keeps one copy of. Where
// EMBER_RT_GEMM_EXTERN is defined (ember_rt/all.h, the header of generated modules) it is
// only declared here, with hidden visibility, and the one translation unit of the shared
// object that includes gemm_erased.h compiles it (codegen: make_translation_units). The
// ISA-named namespace makes a flag mismatch between the units a link error rather than a
// silent ABI mismatch.
// gemm_chosen is the same with the path chosen when the kernel was compiled (gemm_choice);
// gemm_erased.h compiles it with only the paths of the module's calls.
#if defined(EMBER_RT_GEMM_EXTERN)
[[gnu::visibility("hidden")]] void gemm_erased(const GemmShape& s, const LaunchContext* ctx,
                                               EpiFn epi, void* epi_ctx, const GemmTuning& tune);
[[gnu::visibility("hidden")]] void gemm_chosen(const GemmShape& s, const LaunchContext* ctx,
                                               EpiFn epi, void* epi_ctx, const GemmChoice& c);
#else
EMBER_RT_LAZY
inline void gemm_erased(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                        const GemmTuning& tune);
EMBER_RT_LAZY
inline void gemm_chosen(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                        const GemmChoice& c);
#endif

template <class E>
gemm_detail::EpiFn erase_epilogue() {
  if constexpr (std::is_same_v<std::remove_cv_t<E>, NoEpilogue>) {
    return nullptr;
  } else {
    return [](void* e, int64_t b, int64_t m, int64_t n0, int64_t len, float* row) {
      (*static_cast<E*>(e))(b, m, n0, len, row);
    };
  }
}

}  // namespace gemm_detail

template <class Epilogue>
inline void gemm(const GemmShape& s, const LaunchContext* ctx, Epilogue&& epi,
                 const GemmTuning& tune = {}) {
  using E = std::remove_reference_t<Epilogue>;
  gemm_detail::gemm_erased(s, ctx, gemm_detail::erase_epilogue<E>(),
                           const_cast<void*>(static_cast<const void*>(&epi)), tune);
}

// The same call with its path chosen when the kernel was compiled: `c` is
// gemm_choice(GemmSite{...}) of this call (its tuning is the site's).
template <class Epilogue>
inline void gemm(const GemmShape& s, const LaunchContext* ctx, Epilogue&& epi,
                 const GemmChoice& c) {
  using E = std::remove_reference_t<Epilogue>;
  gemm_detail::gemm_chosen(s, ctx, gemm_detail::erase_epilogue<E>(),
                           const_cast<void*>(static_cast<const void*>(&epi)), c);
}

// Packs `batches` K x N matrices (element (b, k, n) at B[b * b_batch + k * b_k + n * b_n])
// into `out`, batches * prepared_b_floats(K, N, layout.nr) floats, in `layout`.
EMBER_RT_LAZY
inline void prepare_b(const float* B, int64_t batches, int64_t b_batch, int64_t b_k, int64_t b_n,
                      const PreparedB& layout, float* out) {
  const int64_t per = prepared_b_floats(layout.K, layout.N, layout.nr);
  const int64_t npad = per / (layout.K > 0 ? layout.K : 1);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t k0 = 0; k0 < layout.K; k0 += layout.kc) {
      const int64_t klen = layout.K - k0 < layout.kc ? layout.K - k0 : layout.kc;
      const float* src = B + b * b_batch + k0 * b_k;
      float* dst = out + b * per + k0 * npad;
#define EMBER_RT_PACK_CASE(ID, MR, NV)                                       \
  if (layout.nr == (NV)*vf::width) {                                         \
    gemm_detail::pack_b<(NV)*vf::width>(src, b_k, b_n, klen, layout.N, dst); \
    continue;                                                                \
  }
      EMBER_RT_GEMM_KERNELS(EMBER_RT_PACK_CASE)
#undef EMBER_RT_PACK_CASE
    }
}

// What a kernel module exports as kPrepareGemmB (gemm_prepared.h): tuning is the kernel's
// {mc, nc, kc, kernel, split_k}; returns the floats per batch and sets layout = {kc, nr};
// packs into out unless it is null.
EMBER_RT_LAZY
inline int64_t prepare_gemm_b_entry(const float* B, int64_t batches, int64_t b_batch, int64_t b_k,
                                    int64_t b_n, int64_t K, int64_t N, const int64_t* tuning,
                                    float* out, int64_t* layout) {
  const GemmTuning t{tuning[0], tuning[1], tuning[2], static_cast<int>(tuning[3]),
                     static_cast<int>(tuning[4])};
  const PreparedB pb = prepared_b_layout(nullptr, K, N, 0, t);
  layout[0] = pb.kc;
  layout[1] = pb.nr;
  if (out != nullptr) prepare_b(B, batches, b_batch, b_k, b_n, pb, out);
  return prepared_b_floats(K, N, pb.nr);
}

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt

#if !defined(EMBER_RT_GEMM_EXTERN)
#include "gemm_erased.h"  // the inline definition
#endif
