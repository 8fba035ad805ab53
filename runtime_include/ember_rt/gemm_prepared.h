// The layout of a prepared GEMM operand: a constant B (a weight) packed once, in the order
// the packed path's micro-kernel reads it, so that no call packs it again (gemm.h).
//
// For each depth block [k0, k0 + klen) (blocks of kc rows of B, the last one shorter) and,
// in it, each panel of nr columns [n0, n0 + nr) (the last one zero-padded past N), the
// klen x nr panel row by row. Element (k, n) of a batch is at
//   k0 * round_up(N, nr) + (n0 / nr) * klen * nr + (k - k0) * nr + (n - n0)
// so a batch takes K * round_up(N, nr) floats whatever kc is. Batched operands hold one such
// matrix per batch, batch_stride floats apart (0: one matrix shared by every batch).
//
// kc and nr follow the ISA and blocking the kernel was compiled with (gemm.h:
// prepared_b_layout); this header only describes the layout, without SIMD, so that the host
// can read it back (unpack_prepared_b) when a saved model is re-prepared for another ISA.
#pragma once

#include <cstdint>

#include "lazy.h"

namespace ember_rt {

struct PreparedB {
  const float* data = nullptr;  // nullptr: B is read through GemmShape's strides
  int64_t K = 0, N = 0;         // the whole matrix
  int64_t kc = 0, nr = 0;       // depth of a block, width of a panel
  int64_t batch_stride = 0;     // floats between batches; 0: broadcast
  // Where the product starts in the matrix (a split-K part, a block of columns): a multiple
  // of kc and of nr.
  int64_t k_off = 0, n_off = 0;
};

EMBER_RT_LAZY
inline int64_t prepared_round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Floats one batch of a K x N operand takes with panels nr wide.
EMBER_RT_LAZY
inline int64_t prepared_b_floats(int64_t K, int64_t N, int64_t nr) {
  return K * prepared_round_up(N, nr);
}

// The panel holding rows [k, k + klen) of columns [n, n + nr) of batch b, k and n relative to
// the product's start (k at a block's start, n at a panel's).
EMBER_RT_LAZY
inline const float* prepared_b_panel(const PreparedB& p, int64_t b, int64_t k, int64_t n) {
  const int64_t ka = p.k_off + k, na = p.n_off + n;
  const int64_t klen = p.K - ka < p.kc ? p.K - ka : p.kc;
  return p.data + b * p.batch_stride + ka * prepared_round_up(p.N, p.nr) + na / p.nr * klen * p.nr;
}

// The inverse of packing: element (b, k, n) of the whole matrix goes to
// out[b * ob + k * ok + n * on], for b < batches.
EMBER_RT_LAZY
inline void unpack_prepared_b(const PreparedB& p, int64_t batches, float* out, int64_t ob,
                              int64_t ok, int64_t on) {
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t k0 = 0; k0 < p.K; k0 += p.kc)
      for (int64_t n0 = 0; n0 < p.N; n0 += p.nr) {
        const float* panel = prepared_b_panel(p, b, k0, n0);
        const int64_t klen = p.K - k0 < p.kc ? p.K - k0 : p.kc;
        const int64_t cols = p.N - n0 < p.nr ? p.N - n0 : p.nr;
        for (int64_t k = 0; k < klen; ++k)
          for (int64_t j = 0; j < cols; ++j)
            out[b * ob + (k0 + k) * ok + (n0 + j) * on] = panel[k * p.nr + j];
      }
}

// The function a kernel module using prepared operands exports under kPrepareGemmB
// (gemm.h prepare_gemm_b_entry): the host prepares constants with the module's own packing,
// so the layout always matches the ISA and blocking its kernels were compiled with.
using PrepareGemmBFn = int64_t (*)(const float* B, int64_t batches, int64_t b_batch, int64_t b_k,
                                   int64_t b_n, int64_t K, int64_t N, const int64_t* tuning,
                                   float* out, int64_t* layout);
inline constexpr const char* kPrepareGemmB = "ember_prepare_gemm_b";

}  // namespace ember_rt
