// EMBER_RT_AS_TORCH_BEGIN ... EMBER_RT_AS_TORCH_END: the functions defined in between follow
// formulas of torch's CPU kernels (Cephes' series, the polynomials' recurrences, bilinear
// resizing) and round as torch's build of them does: its AVX2 and AVX-512 kernels are
// compiled by g++ with FMA instructions and its default contraction of a * b + c into one
// fma. Generated kernels are compiled with -ffp-contract=off (every multiply and add of a
// fused expression rounds on its own, as eager's separate operations do), so these functions
// ask g++ for contraction themselves; g++ then calls them rather than inlining them into a
// kernel. Other compilers keep the kernels' setting: results within a few ulps of torch's,
// no longer equal to them.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#define EMBER_RT_AS_TORCH_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC optimize(\"fp-contract=fast\")")
#define EMBER_RT_AS_TORCH_END _Pragma("GCC pop_options")
#else
#define EMBER_RT_AS_TORCH_BEGIN
#define EMBER_RT_AS_TORCH_END
#endif
