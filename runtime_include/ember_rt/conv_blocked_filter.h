// The blocked convolution's weight order, SIMD-free: shared by the generated kernels
// (conv_blocked_prepare, with the ISA's block) and the runtime library, which prepares a
// saved model's weights at load without a compiler (src/runtime/prepared_constants.cpp).
#pragma once

#include <cstdint>

#include "lazy.h"

namespace ember_rt {

// dst [OB, CB, KH, KW, b_in, b_out] = w [O, C, KH, KW] reordered in blocks of b channels,
// zero past O and C (OB = ceil(O / b), CB = ceil(C / b)); only the output-channel blocks
// [ob_begin, ob_end) when given (ob_end < 0: to OB), so that threads can share the work.
EMBER_RT_LAZY
inline void conv_blocked_reorder(const float* w, int64_t O, int64_t C, int64_t KH, int64_t KW,
                                 int64_t b, float* dst, int64_t ob_begin = 0, int64_t ob_end = -1) {
  const int64_t OB = (O + b - 1) / b, CB = (C + b - 1) / b;
  if (ob_end < 0 || ob_end > OB) ob_end = OB;
  dst += ob_begin * CB * KH * KW * b * b;
  for (int64_t ob = ob_begin; ob < ob_end; ++ob)
    for (int64_t cb = 0; cb < CB; ++cb)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t i = 0; i < b; ++i)
            for (int64_t o = 0; o < b; ++o) {
              const int64_t oc = ob * b + o, ic = cb * b + i;
              *dst++ = oc < O && ic < C ? w[((oc * C + ic) * KH + kh) * KW + kw] : 0.0f;
            }
}

// The inverse: w [O, C, KH, KW] from its blocks (a saved model stores the blocks; a weight
// that a launch also reads is taken back from them at load).
EMBER_RT_LAZY
inline void conv_blocked_unreorder(const float* src, int64_t O, int64_t C, int64_t KH, int64_t KW,
                                   int64_t b, float* w) {
  const int64_t OB = (O + b - 1) / b, CB = (C + b - 1) / b;
  for (int64_t ob = 0; ob < OB; ++ob)
    for (int64_t cb = 0; cb < CB; ++cb)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t i = 0; i < b; ++i)
            for (int64_t o = 0; o < b; ++o, ++src) {
              const int64_t oc = ob * b + o, ic = cb * b + i;
              if (oc < O && ic < C) w[((oc * C + ic) * KH + kh) * KW + kw] = *src;
            }
}

}  // namespace ember_rt
