// An epilogue the blocked convolutions (conv_blocked.h, depthwise_blocked.h) apply to their
// accumulators in registers, before they store them: a per-channel scale and shift, a
// residual added, then constant clamps (a folded batch norm, a bias, a ResNet block's add,
// ReLU / ReLU6 / hardtanh). Applied after
// the outputs are stored, as a second pass over them, it had added 21% to MobileNetV2's 1x1
// layers and 46% to a 16 -> 96 expansion, whose sums take 16 multiply-adds per output
// vector. Generated kernels pass one where their fused epilogue has this form (codegen's
// kernel plan says so: match_channel_affine).
#pragma once

#include <cstdint>

#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

// For output channel c:
//   v = min_c(max_c(fma(acc, scale(c), shift(c)) [+ residual], lo), hi)
// scale(c) = scale[c] (scale_k when scale is null), shift likewise; residual, when not null,
// is a tensor laid out as the output, read at the output's element (a residual add); lo and
// hi bounds that are not NaN (max_c / min_c: NaN and a value equal to the bound kept, as
// torch.clamp); and channels >= `channels` zero (the padding lanes of a partial block). The
// defaults leave v as it is: fma(v, 1, -0) is v, -0 and NaN included, max_c(v, -inf) and
// min_c(v, inf) are v.
struct ChannelAffine {
  const float* scale = nullptr;
  const float* shift = nullptr;
  float scale_k = 1.0f, shift_k = -0.0f;
  const float* residual = nullptr;
  float lo = -__builtin_inff(), hi = __builtin_inff();
  int64_t channels = INT64_MAX;
};

// The map of one block of vf::width channels from c0, its operands loaded once: three
// operations per vector (and a load and an add with a residual), and a select in a partial
// block.
class ChannelAffineLanes {
 public:
  ChannelAffineLanes(const ChannelAffine& e, int64_t c0) : lo_(e.lo), hi_(e.hi) {
    const int64_t w = vf::width, left = e.channels - c0;
    n_ = left >= w ? static_cast<int>(w) : left <= 0 ? 0 : static_cast<int>(left);
    s_ = e.scale == nullptr ? vf(e.scale_k)
         : n_ == w          ? vf::load(e.scale + c0)
                            : vf::load_partial(e.scale + c0, n_);
    t_ = e.shift == nullptr ? vf(e.shift_k)
         : n_ == w          ? vf::load(e.shift + c0)
                            : vf::load_partial(e.shift + c0, n_);
  }
  bool partial() const { return n_ < vf::width; }
  vf operator()(vf v) const { return min_c(max_c(fma(v, s_, t_), lo_), hi_); }
  vf operator()(vf v, vf residual) const {
    return min_c(max_c(fma(v, s_, t_) + residual, lo_), hi_);
  }
  // The lanes that are channels, as a mask (a partial block keeps them and zeroes the rest).
  auto channel_lanes() const {
    float ones[vf::width];
    for (int l = 0; l < vf::width; ++l) ones[l] = l < n_ ? 1.0f : 0.0f;
    return gt(vf::load(ones), vf(0.0f));
  }

 private:
  int n_ = 0;
  vf lo_, hi_, s_, t_;
};

// A register block of UR outputs x NOC channel blocks (conv_blocked.h's micro-kernel):
// acc[u][j] = the ChannelAffine of output channels ch0 + j * B + lane (B = vf::width); the
// residual, when there is one, at res + j * res_ob + u * B.
template <int UR, int NOC>
inline void apply_channel_affine(vf (&acc)[UR][NOC], const ChannelAffine& e, int64_t ch0,
                                 const float* res, int64_t res_ob) {
#pragma GCC unroll 4
  for (int j = 0; j < NOC; ++j) {
    const ChannelAffineLanes f(e, ch0 + j * vf::width);
    const float* r = res == nullptr ? nullptr : res + j * res_ob;
    if (!f.partial()) {
      if (res == nullptr) {
#pragma GCC unroll 16
        for (int u = 0; u < UR; ++u) acc[u][j] = f(acc[u][j]);
      } else {
#pragma GCC unroll 16
        for (int u = 0; u < UR; ++u) acc[u][j] = f(acc[u][j], vf::load(r + u * vf::width));
      }
    } else {
      const auto keep = f.channel_lanes();
      for (int u = 0; u < UR; ++u) {
        const vf v = res == nullptr ? f(acc[u][j]) : f(acc[u][j], vf::load(r + u * vf::width));
        acc[u][j] = select(keep, v, vf(0.0f));
      }
    }
  }
}

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
