// The GEMM template's types (GemmShape, GemmTuning, NoEpilogue) and the small helpers its
// paths share; see gemm.h for the whole.
#pragma once

#include <cstdint>

#include "gemm_kernels.h"
#include "gemm_prepared.h"
#include "kernel.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

struct GemmShape {
  int64_t batch, M, N, K;
  const float* A;
  int64_t a_batch, a_m, a_k;  // element (b, m, k) at A[b * a_batch + m * a_m + k * a_k]
  const float* B;
  int64_t b_batch, b_k, b_n;  // element (b, k, n) at B[b * b_batch + k * b_k + n * b_n]
  float* C;
  int64_t c_batch, c_m;  // element (b, m, n) at C[b * c_batch + m * c_m + n]
  // When its data is set, B is read from these prepared panels (gemm_prepared.h) instead of
  // through B and its strides, which are then not read.
  PreparedB prepared{};
  // When set, B's rows are not b_k apart: row k of batch b starts at B[b * b_batch +
  // b_rows[k]] (K entries; b_k is not read), its columns b_n apart. A convolution reads its
  // (padded) input in place this way (implicit GEMM). Such a B is always packed.
  const int64_t* b_rows = nullptr;
  // C += A * B instead of C = A * B (a sum computed in parts: a convolution's weight
  // gradient, chunk by chunk). Takes the packed path, K unsplit; K == 0 leaves C as it is.
  bool accumulate = false;
};

// Blocking parameters. 0 (or -1 for kernel) picks the analytic default; any other value is
// clamped to something valid, so a tuner may pass anything.
struct GemmTuning {
  int64_t mc = 0;  // rows of A per packed block (rounded up to the micro-tile height)
  int64_t nc = 0;  // columns of B per packed block (rounded up to the micro-tile width)
  int64_t kc = 0;  // depth of a packed block
  // -1: automatic (matrix-vector and dot-product paths where they apply, else the packed
  // micro-kernel that wastes least on padding). An index in [0, gemm_kernel_count()) forces
  // the packed path with that micro-kernel; out-of-range values mean -1.
  int kernel = -1;
  int split_k = 0;  // 0: automatic; 1: never split K; n >= 2: split K into n parts
};

// What the blocking plan and the path choice (gemm_plan.h) read of a call: its sizes, its
// strides and how B is read, without pointers. The same functions then choose at run time
// (form_of a GemmShape) and when a kernel is compiled (gemm_choice), where comparing an
// object's address with null is not a constant expression under every compiler flag (GCC
// with -fsanitize=null).
struct GemmForm {
  int64_t batch = 0, M = 0, N = 0, K = 0;
  int64_t a_m = 0, a_k = 0, b_k = 0, b_n = 0, c_m = 0;
  bool b_rows = false;      // B's rows are read through a table (GemmShape::b_rows)
  bool prepared = false;    // B is read from prepared panels (GemmShape::prepared) ...
  int64_t prepared_kc = 0;  // ... in depth blocks of this many rows
  bool accumulate = false;
};

EMBER_RT_LAZY
inline GemmForm form_of(const GemmShape& s) {
  GemmForm f;
  f.batch = s.batch, f.M = s.M, f.N = s.N, f.K = s.K;
  f.a_m = s.a_m, f.a_k = s.a_k, f.b_k = s.b_k, f.b_n = s.b_n, f.c_m = s.c_m;
  f.b_rows = s.b_rows != nullptr;
  f.prepared = s.prepared.data != nullptr;
  f.prepared_kc = s.prepared.kc;
  f.accumulate = s.accumulate;
  return f;
}

struct NoEpilogue {
  void operator()(int64_t, int64_t, int64_t, int64_t, float*) const {}
};

// The micro-kernels compiled for the current ISA, for tuners.
EMBER_RT_LAZY
inline int gemm_kernel_count() { return gemm_detail::kNumKernels; }
EMBER_RT_LAZY
inline int gemm_kernel_mr(int kernel) { return gemm_detail::kernel_shape(kernel).mr; }
EMBER_RT_LAZY
inline int gemm_kernel_nr(int kernel) { return gemm_detail::kernel_shape(kernel).nr; }

namespace gemm_detail {

using EpiFn = void (*)(void* epi, int64_t b, int64_t m, int64_t n0, int64_t len, float* row);

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
constexpr int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
EMBER_RT_LAZY
inline int num_threads(const LaunchContext* ctx) {
  return ctx != nullptr && ctx->num_threads > 1 ? ctx->num_threads : 1;
}

}  // namespace gemm_detail
}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
