// How a kernel's GEMM calls receive their blocking (codegen::KernelConfig).
#pragma once

#include <string>

#include "ember/codegen/codegen.h"

namespace ember::codegen {

// The trailing argument of an `ember_rt::gemm(g, ctx, epilogue...)` call: empty for the template's
// defaults (so the generated source, and its cache key, do not change), a GemmTuning literal for a
// fixed configuration, or one read from kTuningGlobal.
std::string gemm_tuning_argument(const KernelConfig& config);

}  // namespace ember::codegen
