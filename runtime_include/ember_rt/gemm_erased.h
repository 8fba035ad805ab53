// The definition of ember_rt::gemm_detail::gemm_erased, the whole GEMM behind ember_rt::gemm
// (gemm.h). gemm.h includes it itself (an inline definition) unless EMBER_RT_GEMM_EXTERN is
// defined; then exactly one translation unit of the shared object includes it, after gemm.h
// and with the same ISA flags as the others, and compiles the GEMM machinery for all of them.
#pragma once

#include "gemm.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace gemm_detail {

#if defined(EMBER_RT_GEMM_EXTERN)
void gemm_erased(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                 const GemmTuning& tune) {
#else
inline void gemm_erased(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                        const GemmTuning& tune) {
#endif
  if (s.batch <= 0 || s.M <= 0 || s.N <= 0) return;
  if (s.K <= 0 && s.accumulate) return;  // C += an empty sum
  if (s.K <= 0) {                        // empty sum: C = 0, then the epilogue
    const double work = static_cast<double>(s.batch) * s.M * s.N;
    parallel_for(ctx, s.batch * s.M, work, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* row = s.C + (r / s.M) * s.c_batch + (r % s.M) * s.c_m;
        for (int64_t n = 0; n < s.N; ++n) row[n] = 0.0f;
        if (epi != nullptr) epi(epi_ctx, r / s.M, r % s.M, 0, s.N, row);
      }
    });
    return;
  }
  const int path = choose_path(s, tune);
  const int64_t parts = split_parts(s, tune, path);
  if (parts > 1) return run_split_k(s, ctx, epi, epi_ctx, tune, path, parts);
  run_path(s, ctx, epi, epi_ctx, tune, path);
}

}  // namespace gemm_detail
}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
