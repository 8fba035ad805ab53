// Everything generated kernels may use; this is the header the code generator includes
// (and the one that gets precompiled).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel.h"
#include "half.h"
#include "vec.h"
#include "math.h"
#include "random.h"
#include "lanes.h"
#include "gemm.h"
#include "library.h"
#include "depthwise.h"
#include "resize.h"
#include "attention.h"
#include "linalg.h"
#include "linalg_orthogonal.h"
#include "winograd.h"
#include "scalar_ops.h"  // float64 / integer helpers, in namespace ember_rt
