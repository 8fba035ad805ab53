// Everything generated kernels may use; this is the header the code generator includes
// (and the one that gets precompiled).
#pragma once

// libstdc++'s <cmath> defines C++17's mathematical special functions (std::cyl_bessel_j, ...)
// as inline functions over templates, which the compiler instantiates in every translation
// unit, used or not (about 0.04 s each; see lazy.h). Kernels do not use them: ember_rt has
// its own. Other standard libraries have no such header and are left as they are.
#if __has_include(<bits/c++config.h>)
#include <bits/c++config.h>
#undef _GLIBCXX_USE_STD_SPEC_FUNCS
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// The order matters (EMBER_RT_GEMM_EXTERN before gemm.h): clang-format must not sort it.
// clang-format off
#include "kernel.h"
#include "half.h"
#include "vec.h"
#include "math.h"
#include "random.h"
#include "lanes.h"
// A module compiles the GEMM machinery once: gemm.h only declares it, and the unit that
// includes gemm_erased.h defines it (make_translation_units).
#define EMBER_RT_GEMM_EXTERN
#include "gemm.h"
#include "library.h"
#include "conv_wgrad.h"  // calls the GEMM
#include "depthwise.h"
#include "conv_blocked.h"
#include "depthwise_blocked.h"
#include "layout_convert.h"
#include "pool_indices.h"
#include "resize.h"
#include "attention.h"
#include "linalg.h"
#include "linalg_orthogonal.h"
#include "winograd.h"
#include "scalar_ops.h"  // float64 / integer helpers, in namespace ember_rt
// clang-format on
