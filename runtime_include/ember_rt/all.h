// Everything generated kernels may use; this is the header the code generator includes
// (and the one that gets precompiled).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "attention.h"
#include "conv_blocked.h"
#include "depthwise.h"
#include "gemm.h"
#include "half.h"
#include "kernel.h"
#include "lanes.h"
#include "library.h"
#include "linalg.h"
#include "linalg_orthogonal.h"
#include "math.h"
#include "random.h"
#include "resize.h"
#include "scalar_ops.h"  // float64 / integer helpers, in namespace ember_rt
#include "vec.h"
#include "winograd.h"
