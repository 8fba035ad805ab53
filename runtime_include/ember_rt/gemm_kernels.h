// Building blocks of ember_rt::gemm (gemm.h): the register-blocked micro-kernel, the packing
// routines, the per-ISA kernel table, per-thread scratch memory and the split-K helpers
// (reduction, cost model).
//
// Packed layouts (BLIS-style):
//   A block (mc x kc) -> micro-panels of MR rows; in a panel, element (i, k) at [k * MR + i].
//   B block (kc x nc) -> micro-panels of NR columns; element (k, j) at [k * NR + j].
// Rows / columns past the matrix edge are packed as zeros, so the micro-kernel always computes
// a full MR x NR tile and only the store is masked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "kernel.h"
#include "lanes.h"
#include "layout_convert.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace gemm_detail {

// ---- scratch memory ----------------------------------------------------------------------

// A 64-byte aligned buffer per thread and slot that only grows: packing buffers are allocated
// once per thread, not per call (large fresh allocations would also cost page faults). The
// runtime's (LaunchContext::scratch) when it gives one; else a thread_local of this module
// (tests and benchmarks that link the GEMM directly).
enum ScratchSlot { kSlotA = 0, kSlotB = 1, kSlotVec = 2, kSlotPartial = 3 };
EMBER_RT_LAZY
inline float* scratch(const LaunchContext* ctx, int slot, size_t floats) {
  if (ctx != nullptr && ctx->scratch != nullptr) return ctx->scratch(slot, floats);
  struct Buffers {
    float* p[kScratchSlots] = {};
    size_t n[kScratchSlots] = {};
    ~Buffers() {
      for (float* q : p)
        if (q) ::operator delete[](q, std::align_val_t{64});
    }
  };
  thread_local Buffers buf;
  if (buf.n[slot] < floats) {
    if (buf.p[slot]) ::operator delete[](buf.p[slot], std::align_val_t{64});
    const size_t want = floats + floats / 4 + 64;  // some headroom against regrowing
    buf.p[slot] = static_cast<float*>(::operator new[](want * sizeof(float), std::align_val_t{64}));
    buf.n[slot] = want;
  }
  return buf.p[slot];
}

// The busiest thread's cost when `tasks` tasks of cost cost(t, first task of its chunk) are
// split into contiguous chunks over the threads, as parallel_run does.
template <class Cost>
constexpr double busiest_chunk(int64_t tasks, int threads, Cost&& cost) {
  const int64_t chunks = tasks < threads ? tasks : threads;
  double busiest = 0;
  for (int64_t i = 0; i < chunks; ++i) {
    double w = 0;
    const int64_t t0 = tasks * i / chunks;
    for (int64_t t = t0; t < tasks * (i + 1) / chunks; ++t) w += cost(t, t == t0);
    busiest = w > busiest ? w : busiest;
  }
  return busiest;
}

// Relative cost of a packed-path block: its micro-tiles' FMAs (two vectors a cycle) plus
// kPackCost per element packed. Fitted to 2-thread measurements on Zen 3 (gemm_bench with
// EMBER_BENCH_SPLIT_K): with few output columns per thread, packing the same rows of A on
// every thread costs as much as a fifth of the run.
constexpr double kPackCost = 3.0;
constexpr double packed_cost(int64_t mpad, int64_t npad, int64_t a_rows, int64_t b_cols,
                             int64_t K) {
  return static_cast<double>(mpad) * npad * K / (2.0 * vf::width) +
         kPackCost * static_cast<double>(K) * (a_rows + b_cols);
}

// row[0 : len) += part[p * stride + 0 : len) for p < parts (the split-K reduction).
EMBER_RT_LAZY
inline void add_partials(float* row, const float* part, int64_t stride, int parts, int64_t len) {
  constexpr int W = vf::width;
  int64_t j = 0;
  for (; j + W <= len; j += W) {
    vf acc = vf::load(row + j);
    for (int p = 0; p < parts; ++p) acc += vf::load(part + p * stride + j);
    acc.store(row + j);
  }
  if (j < len) {
    const int n = static_cast<int>(len - j);
    vf acc = vf::load_partial(row + j, n);
    for (int p = 0; p < parts; ++p) acc += vf::load_partial(part + p * stride + j, n);
    acc.store_partial(row + j, n);
  }
}

// Makes the compiler materialize v in a register here: otherwise it folds a load used by
// several FMAs into each of them as a memory operand, which turns an FMA-bound loop into a
// load-bound one.
EMBER_RT_LAZY
inline void keep_in_register(vf& v) {
#if defined(EMBER_RT_EMULATE_AVX512)
  (void)v;
#elif defined(EMBER_RT_AVX512)
  asm("" : "+v"(v.v));
#else
  asm("" : "+x"(v.v));
#endif
}

// ---- micro-kernel ------------------------------------------------------------------------

// Lines that a micro-kernel call prefetches into L2 while it runs, one per K step from its
// first step on: a slice of the next B micro-panel (run_packed).
struct PanelPrefetch {
  const float* p = nullptr;
  int64_t lines = 0;  // 64-byte lines from p; at most 2 kc
};

// C[0:m_valid, 0:n_valid] (+)= A_panel * B_panel over kc steps; NR = NV * vf::width.
// B's rows are ldb floats apart: NR for a packed panel, B's own row stride when a small-M
// product reads B in place. `accumulate` adds to C (later K blocks), otherwise C is
// overwritten (first K block). A's panel holds AS rows per step (AS = MR, or the taller
// panel of which a short tile computes the first MR rows: edge_tile).
template <int MR, int NV, int AS = MR>
inline void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                         int64_t ldb, float* __restrict c, int64_t ldc, int m_valid, int n_valid,
                         bool accumulate, PanelPrefetch pf = {}) {
  constexpr int W = vf::width;
  constexpr int NR = NV * W;
  vf acc[MR][NV];  // zero-initialized; kept in registers once the loops are unrolled
  const auto step = [&] {
    vf bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      // Loaded once into a register: folded into each FMA as a memory operand instead, the
      // loads outnumbered the FMAs of short tiles (a 4 x 32 tile ran at 38% of the peak).
      vf v = vf::load(b + j * W);
      keep_in_register(v);
      bv[j] = v;
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const vf ai = vf::broadcast(a[i]);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = fma(ai, bv[j], acc[i][j]);
    }
    a += AS;
    b += ldb;
  };
  // The prefetches ride one per step (a second one past kc lines): issued together before
  // the call, hundreds of them filled the core's miss queue and its own loads waited.
  constexpr int64_t kLine = 64 / sizeof(float);
  const int64_t pk = pf.lines < kc ? pf.lines : kc;
  int64_t k = 0;
  for (; k < pk; ++k) {
    __builtin_prefetch(pf.p + k * kLine, 0, 2);
    if (k + kc < pf.lines) __builtin_prefetch(pf.p + (k + kc) * kLine, 0, 2);
    step();
  }
  for (; k < kc; ++k) step();
  if (m_valid == MR && n_valid == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* row = c + i * ldc;
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        vf v = acc[i][j];
        if (accumulate) v += vf::load(row + j * W);
        v.store(row + j * W);
      }
    }
    return;
  }
  for (int i = 0; i < m_valid; ++i) {  // edge tile: masked stores, rows past m_valid skipped
    float* row = c + i * ldc;
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      const int n = n_valid - j * W;
      if (n <= 0) break;
      vf v = acc[i][j];
      if (n >= W) {
        if (accumulate) v += vf::load(row + j * W);
        v.store(row + j * W);
      } else {
        if (accumulate) v += vf::load_partial(row + j * W, n);
        v.store_partial(row + j * W, n);
      }
    }
  }
}

// The micro-tile of an MR-row panel of which only m_valid rows are real (the last panel of
// A when M is not a multiple of MR): tall kernels compute it with a 4- or 8-row tile over
// the same packed panel instead of computing up to MR - 1 rows of padding (M = 128 on
// 14-row tiles: 2 real rows of 14 in the last panel, 8.6% of the product). Each output's
// sum is formed in the same order whichever tile computes it.
template <int MR, int NV>
inline void edge_tile(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t ldb,
                      float* __restrict c, int64_t ldc, int m_valid, int n_valid, bool accumulate,
                      PanelPrefetch pf = {}) {
  if constexpr (MR > 8) {
    if (m_valid <= 4)
      return micro_kernel<4, NV, MR>(kc, a, b, ldb, c, ldc, m_valid, n_valid, accumulate, pf);
    if (m_valid <= 8)
      return micro_kernel<8, NV, MR>(kc, a, b, ldb, c, ldc, m_valid, n_valid, accumulate, pf);
  }
  micro_kernel<MR, NV>(kc, a, b, ldb, c, ldc, m_valid, n_valid, accumulate, pf);
}

// Small-M products with both operands contiguous along K (x * W^T, a Linear layer's
// layout): C[i, q] = sum_k a[i * lda + k] * b[q * ldb + k] for i < mv, q < nv, as MB x NB
// dot products accumulated in vectors and reduced at the end. No packing at all.
template <int MB, int NB>
inline void dot_tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t ldc, int mv, int nv) {
  constexpr int W = vf::width;
  const float* ar[MB];
  const float* br[NB];
  for (int i = 0; i < MB; ++i) ar[i] = a + (i < mv ? i : 0) * lda;  // spare rows repeat row 0
  for (int q = 0; q < NB; ++q) br[q] = b + (q < nv ? q : 0) * ldb;
  vf acc[MB][NB];
  int64_t k = 0;
  for (; k + W <= K; k += W) {
    vf bv[NB];
#pragma GCC unroll 8
    for (int q = 0; q < NB; ++q) {
      // Through a local: given the array element itself, GCC at -O2 (the JIT's level) kept
      // acc in memory and stored every accumulator in every iteration (2.9x slower).
      vf v = vf::load(br[q] + k);
      keep_in_register(v);
      bv[q] = v;
    }
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) {
      vf av = vf::load(ar[i] + k);
      keep_in_register(av);
#pragma GCC unroll 8
      for (int q = 0; q < NB; ++q) acc[i][q] = fma(av, bv[q], acc[i][q]);
    }
  }
  if (k < K) {
    const int n = static_cast<int>(K - k);
    vf bv[NB];
#pragma GCC unroll 8
    for (int q = 0; q < NB; ++q) bv[q] = vf::load_partial(br[q] + k, n);
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) {
      const vf av = vf::load_partial(ar[i] + k, n);
#pragma GCC unroll 8
      for (int q = 0; q < NB; ++q) acc[i][q] = fma(av, bv[q], acc[i][q]);
    }
  }
  for (int i = 0; i < mv; ++i)
    for (int q = 0; q < nv; ++q) c[i * ldc + q] = reduce_add(acc[i][q]);
}

// ---- packing -----------------------------------------------------------------------------

// One MR-row panel of a row-major A (element (i, k) at a[i * sm + k]), as pack_a lays it out,
// in 16 x 16 tiles transposed in registers; false where this build has no such tiles. (At 2
// threads both pack the same rows of A: the scalar copies took 2.5% of a 128 x 768 x 768
// product with a prepared B.)
template <int MR>
inline bool pack_a_transposed(const float* a, int64_t sm, int64_t klen, float* __restrict out) {
#if defined(EMBER_RT_AVX512)
  if constexpr (MR <= 16) {
    // Each step k's MR values by one masked store (whole vectors overlapping the next
    // step's ran 1.8x slower): 1.8x faster than the scalar copies.
    for (int64_t k = 0; k < klen; k += 16) {
      const int cols = static_cast<int>(klen - k < 16 ? klen - k : 16);
      layout_detail::tile16(a + k, sm, out + k * MR, MR, MR, cols, false);
    }
    return true;
  }
#endif
  (void)a, (void)sm, (void)klen, (void)out;
  return false;
}

// Packs rows [0, mlen) x columns [0, klen) of A (element (m, k) at a[m * sm + k * sk]) into
// MR-row micro-panels.
template <int MR>
inline void pack_a(const float* a, int64_t sm, int64_t sk, int64_t mlen, int64_t klen,
                   float* __restrict out) {
  for (int64_t m0 = 0; m0 < mlen; m0 += MR) {
    const int rows = static_cast<int>(mlen - m0 < MR ? mlen - m0 : MR);
    const float* src = a + m0 * sm;
    if (sm == 1 && rows == MR) {  // columns of A are contiguous: copy MR floats per k
      for (int64_t k = 0; k < klen; ++k)
        std::memcpy(out + k * MR, src + k * sk, sizeof(float) * MR);
    } else if (sk == 1 && rows == MR && pack_a_transposed<MR>(src, sm, klen, out)) {
      // rows contiguous (A row-major, a Linear layer's input): tiles transposed in registers
    } else if (sk == 1 && rows == MR) {  // rows contiguous: interleave MR row streams
      const float* r[MR];
      for (int i = 0; i < MR; ++i) r[i] = src + i * sm;
      for (int64_t k = 0; k < klen; ++k)
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) out[k * MR + i] = r[i][k];
    } else {
      for (int64_t k = 0; k < klen; ++k) {
        for (int i = 0; i < rows; ++i) out[k * MR + i] = src[i * sm + k * sk];
        for (int i = rows; i < MR; ++i) out[k * MR + i] = 0.0f;
      }
    }
    out += MR * klen;
  }
}

// Copies cols (<= NR) contiguous floats of one row of B into an NR-wide panel row,
// zero-filled past the edge.
template <int NR>
inline void pack_b_row(const float* s, int cols, float* __restrict d) {
  constexpr int W = vf::width;
  for (int j = 0; j < NR; j += W) {
    const int n = cols - j;
    if (n >= W)
      vf::load(s + j).store(d + j);
    else if (n > 0)
      vf::load_partial(s + j, n).store(d + j);
    else
      vf(0.0f).store(d + j);
  }
}

// Packs rows [0, klen) x columns [0, nlen) of B (element (k, n) at b[k * sk + n * sn]) into
// NR-column micro-panels.
template <int NR>
inline void pack_b(const float* b, int64_t sk, int64_t sn, int64_t klen, int64_t nlen,
                   float* __restrict out) {
  for (int64_t n0 = 0; n0 < nlen; n0 += NR) {
    const int cols = static_cast<int>(nlen - n0 < NR ? nlen - n0 : NR);
    const float* src = b + n0 * sn;
    if (sn == 1) {  // rows of B are contiguous: vector copies, zero-filled past the edge
      for (int64_t k = 0; k < klen; ++k) pack_b_row<NR>(src + k * sk, cols, out + k * NR);
    } else if (sk == 1 && cols == NR && vf::width >= 16) {
      // Columns contiguous (B transposed), AVX-512: each panel row gathered, vf::width
      // columns at a time (a 64-row product with B transposed ran 1.13x faster than with the
      // scalar copies below; AVX2's gathers are slower, and Zen 3 keeps the copies).
      constexpr int W = vf::width;
      for (int64_t k = 0; k < klen; ++k)
#pragma GCC unroll 4
        for (int j = 0; j < NR; j += W) load_strided(src + j * sn + k, sn).store(out + k * NR + j);
    } else if (sk == 1 && cols == NR) {  // columns contiguous (B transposed): 8 k at a time
      int64_t k = 0;
      for (; k + 8 <= klen; k += 8) {
        for (int j = 0; j < NR; ++j) {
          const float* s = src + j * sn + k;
#pragma GCC unroll 8
          for (int kk = 0; kk < 8; ++kk) out[(k + kk) * NR + j] = s[kk];
        }
      }
      for (; k < klen; ++k)
        for (int j = 0; j < NR; ++j) out[k * NR + j] = src[j * sn + k];
    } else {
      for (int64_t k = 0; k < klen; ++k) {
        for (int j = 0; j < cols; ++j) out[k * NR + j] = src[k * sk + j * sn];
        for (int j = cols; j < NR; ++j) out[k * NR + j] = 0.0f;
      }
    }
    out += NR * klen;
  }
}

// pack_b for a B whose rows start at their own offsets (GemmShape::b_rows): element (k, n)
// at b[rows[k] + n * sn].
template <int NR>
inline void pack_b_rows(const float* b, const int64_t* rows, int64_t sn, int64_t klen, int64_t nlen,
                        float* __restrict out) {
  for (int64_t n0 = 0; n0 < nlen; n0 += NR) {
    const int cols = static_cast<int>(nlen - n0 < NR ? nlen - n0 : NR);
    const float* src = b + n0 * sn;
    if (sn == 1) {
      for (int64_t k = 0; k < klen; ++k) pack_b_row<NR>(src + rows[k], cols, out + k * NR);
    } else {
      for (int64_t k = 0; k < klen; ++k) {
        for (int j = 0; j < cols; ++j) out[k * NR + j] = src[rows[k] + j * sn];
        for (int j = cols; j < NR; ++j) out[k * NR + j] = 0.0f;
      }
    }
    out += NR * klen;
  }
}

// ---- kernel table --------------------------------------------------------------------------

// Micro-tile shapes compiled for this ISA: {MR, NV}; NR = NV * vf::width. Entry 0 is the
// default for large matrices.
// Every kernel compiled costs ~0.2 s of compile time in each translation unit using gemm.
// kDefaultNV is entry 0's NV; products with a prepared B of few rows (M <= kPreparedMidMR)
// read its panels through 1, kPreparedSmallMR or kPreparedMidMR rows x NR tiles instead
// (gemm.h run_path).
#if defined(EMBER_RT_AVX512)
// 14x32: 28 zmm accumulators + 2 B vectors + 1 broadcast; 6x64: 24 + 4 + 1.
#define EMBER_RT_GEMM_KERNELS(X) X(0, 14, 2) X(1, 6, 4)
constexpr int kNumKernels = 2, kDefaultNV = 2;
#elif defined(EMBER_RT_AVX2)
// 6x16: 12 ymm accumulators + 2 B vectors + 1 broadcast. (4x24 and 2x32 were measured on
// Zen 3 too: 20-30% slower at every M, so they are not compiled.)
#define EMBER_RT_GEMM_KERNELS(X) X(0, 6, 2)
constexpr int kNumKernels = 1, kDefaultNV = 2;
#else
#define EMBER_RT_GEMM_KERNELS(X) X(0, 4, 4)
constexpr int kNumKernels = 1, kDefaultNV = 4;
#endif
constexpr int kPreparedSmallMR = 4;
#if defined(EMBER_RT_AVX512)
constexpr int kPreparedMidMR =
    8;  // 5 to 8 rows: 8 x 32 tiles (M = 8 was 0.85x dot products on 14 x 32)
#else
constexpr int kPreparedMidMR = kPreparedSmallMR;
#endif

struct KernelShape {
  int mr, nr;
};
constexpr KernelShape kernel_shape(int id) {
#define EMBER_RT_SHAPE_CASE(ID, MR, NV) \
  if (id == ID) return KernelShape{MR, (NV)*vf::width};
  EMBER_RT_GEMM_KERNELS(EMBER_RT_SHAPE_CASE)
#undef EMBER_RT_SHAPE_CASE
  return KernelShape{0, 0};
}

}  // namespace gemm_detail
}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
