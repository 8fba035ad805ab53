// The channel-blocked layout for tests of the blocked routines (ember_rt/conv_blocked.h,
// ember_rt/depthwise_blocked.h), written as plain loops, apart from the runtime's own
// conversions (ember_rt/layout_convert.h), so that a test does not check the runtime against
// itself.
#pragma once

#include <cstdint>

#include "ember_rt/conv_blocked.h"  // conv_blocked_lanes

namespace ember_rt::test {

// dst [N, ceil(C / B), H * W, B] = src [N, C, H * W] (lanes past C zero), B the blocked
// routines' lanes, and back.
inline void nchw_to_blocked(const float* src, int64_t N, int64_t C, int64_t HW, float* dst) {
  const int64_t b = lib::conv_blocked_lanes(), CB = (C + b - 1) / b;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < CB; ++cb)
      for (int64_t p = 0; p < HW; ++p)
        for (int64_t l = 0; l < b; ++l) {
          const int64_t c = cb * b + l;
          *dst++ = c < C ? src[(n * C + c) * HW + p] : 0.0f;
        }
}
inline void blocked_to_nchw(const float* src, int64_t N, int64_t C, int64_t HW, float* dst) {
  const int64_t b = lib::conv_blocked_lanes(), CB = (C + b - 1) / b;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < HW; ++p)
        dst[(n * C + c) * HW + p] = src[((n * CB + c / b) * HW + p) * b + c % b];
}

}  // namespace ember_rt::test
