// The definitions of ember_rt::gemm_detail::gemm_erased and gemm_chosen, the whole GEMM
// behind ember_rt::gemm (gemm.h). gemm.h includes it itself (inline definitions) unless
// EMBER_RT_GEMM_EXTERN is defined; then exactly one translation unit of the shared object
// includes it, after gemm.h and with the same ISA flags as the others, and compiles the GEMM
// machinery for all of them.
//
// gemm_erased chooses the path at run time and compiles every path. gemm_chosen runs the
// path chosen when the kernel was compiled (gemm_choice) and compiles only the paths that
// the GemmChoice list EMBER_RT_GEMM_CHOICES (defined before including this, by codegen:
// define_gemm_once, from the module's calls) can take; without the list, every path. A
// shared object linked with --gc-sections (ember's kernel modules are) keeps gemm_erased
// only when a call uses it: a module whose calls all have static shapes then holds only the
// micro-kernels it runs.
// The pieces it runs (packed_piece, dot_piece, gemv_piece) are defined in pieces.h.
#pragma once

#include "gemm.h"
#include "lazy.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace gemm_detail {

#if defined(EMBER_RT_GEMM_EXTERN) && defined(EMBER_RT_GEMM_CHOICES)
inline constexpr GemmChoice kModuleChoices[] = {EMBER_RT_GEMM_CHOICES};
consteval uint32_t module_uses() {
  uint32_t uses = 0;
  for (const GemmChoice& c : kModuleChoices) uses |= gemm_uses(c);
  return uses;
}
inline constexpr uint32_t kModuleUses = module_uses();
#else
inline constexpr uint32_t kModuleUses = kUsesAll;
#endif

// C = 0 then the epilogue, for an empty sum (K <= 0).
EMBER_RT_LAZY
inline void gemm_empty_sum(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx) {
  const double work = static_cast<double>(s.batch) * s.M * s.N;
  parallel_for(ctx, s.batch * s.M, work, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = s.C + (r / s.M) * s.c_batch + (r % s.M) * s.c_m;
      for (int64_t n = 0; n < s.N; ++n) row[n] = 0.0f;
      if (epi != nullptr) epi(epi_ctx, r / s.M, r % s.M, 0, s.N, row);
    }
  });
}

#if defined(EMBER_RT_GEMM_EXTERN)
void gemm_erased(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                 const GemmTuning& tune) {
#else
template <class>  // EMBER_RT_LAZY, as declared in gemm.h
inline void gemm_erased(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                        const GemmTuning& tune) {
#endif
  if (s.batch <= 0 || s.M <= 0 || s.N <= 0) return;
  if (s.K <= 0 && s.accumulate) return;  // C += an empty sum
  if (s.K <= 0) return gemm_empty_sum(s, ctx, epi, epi_ctx);
  const GemmForm form = form_of(s);
  const int path = choose_path(form, tune);
  const int64_t parts = split_parts(form, tune, path);
  if (parts > 1) return run_split_k<kUsesAll>(s, ctx, epi, epi_ctx, tune, path, parts);
  run_path<kUsesAll>(s, ctx, epi, epi_ctx, tune, path);
}

#if defined(EMBER_RT_GEMM_EXTERN)
void gemm_chosen(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                 const GemmChoice& c) {
#else
template <class>  // EMBER_RT_LAZY, as declared in gemm.h
inline void gemm_chosen(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx,
                        const GemmChoice& c) {
#endif
  if (!site_matches(s, c.site)) {  // the generated code's bug, never bad input
    std::fprintf(stderr, "ember: internal error: a GEMM call does not match its GemmSite\n");
    std::abort();
  }
  if (s.batch <= 0 || s.M <= 0 || s.N <= 0) return;
  if (s.K <= 0 && s.accumulate) return;  // C += an empty sum
  if (s.K <= 0) return gemm_empty_sum(s, ctx, epi, epi_ctx);
  const GemmTuning tune = site_tuning(c.site);
  if constexpr ((kModuleUses & kUsesSplitK) != 0)
    if (c.parts > 1) return run_split_k<kModuleUses>(s, ctx, epi, epi_ctx, tune, c.path, c.parts);
  if (c.parts > 1) missing_path(c.path);
  run_path<kModuleUses>(s, ctx, epi, epi_ctx, tune, c.path);
}

}  // namespace gemm_detail
}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
