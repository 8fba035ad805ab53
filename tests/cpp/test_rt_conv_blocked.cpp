// Tests for runtime_include/ember_rt/conv_blocked.h against a float64 direct convolution on
// the plain layout: channel counts around the block (3, 17, 64, 130), kernels 1 / 3 / 5 / 7,
// strides 1 to 3, padding 0 to 3, dilation, odd and tiny maps, batch 2, input-channel chunks,
// the input read plain [N, C, H, W], a fused bias + residual + relu epilogue, the ChannelAffine
// epilogue applied in registers (bit for bit the same as the plain sums mapped afterwards), and 1,
// 2 and 3 threads and several blockings and loop orders agreeing bit for bit. Built for AVX-512 and
// again for AVX2 where the machine has AVX-512 (CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ember_rt/conv_blocked.h"
#include "rt_blocked.h"
#include "rt_threads.h"

namespace ember_rt {
namespace {

using test::make_ctx;

struct Case {
  int64_t n = 1, c = 1, o = 1, h = 1, w = 1;
  int64_t kh = 3, kw = 3, sh = 1, sw = 1, ph = 1, pw = 1, dh = 1, dw = 1;
  bool epilogue = false;  // + bias[o] + residual, then relu

  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  std::string str() const {
    return "n=" + std::to_string(n) + " c=" + std::to_string(c) + " o=" + std::to_string(o) +
           " map=" + std::to_string(h) + "x" + std::to_string(w) + " k=" + std::to_string(kh) +
           "x" + std::to_string(kw) + " s=" + std::to_string(sh) + "," + std::to_string(sw) +
           " p=" + std::to_string(ph) + "," + std::to_string(pw) + " d=" + std::to_string(dh) +
           "," + std::to_string(dw) + (epilogue ? " bias+res+relu" : "");
  }
};

size_t sz(int64_t v) { return static_cast<size_t>(v); }

void check(const Case& k) {
  SCOPED_TRACE(k.str());
  const int64_t oh = k.oh(), ow = k.ow(), B = lib::conv_blocked_lanes();
  ASSERT_GE(oh, 1);
  ASSERT_GE(ow, 1);
  const int64_t CB = (k.c + B - 1) / B, OB = (k.o + B - 1) / B;
  std::mt19937 rng(static_cast<unsigned>(k.c * 131 + k.o * 17 + k.h * 7 + k.w + k.kh * 3 + k.sh));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(sz(k.n * k.c * k.h * k.w)), wt(sz(k.o * k.c * k.kh * k.kw));
  std::vector<float> bias(sz(k.o)), res(sz(k.n * k.o * oh * ow));
  for (float& v : x) v = dist(rng);
  for (float& v : wt) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (float& v : res) v = dist(rng);

  // float64 reference on the plain layout, with the sum of |terms| for the tolerance.
  const size_t out_size = sz(k.n * k.o * oh * ow);
  std::vector<double> ref(out_size), mag(out_size);
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t oc = 0; oc < k.o; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = 0, m = 0;
          for (int64_t ic = 0; ic < k.c; ++ic)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = y * k.sh - k.ph + i * k.dh, ix = xx * k.sw - k.pw + j * k.dw;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const double t =
                    static_cast<double>(wt[sz(((oc * k.c + ic) * k.kh + i) * k.kw + j)]) *
                    static_cast<double>(x[sz(((b * k.c + ic) * k.h + iy) * k.w + ix)]);
                s += t;
                m += std::fabs(t);
              }
          const size_t at = sz(((b * k.o + oc) * oh + y) * ow + xx);
          if (k.epilogue)
            s = std::max(0.0, s + static_cast<double>(bias[sz(oc)]) + static_cast<double>(res[at]));
          ref[at] = s;
          mag[at] = m + 1.0;
        }

  std::vector<float> xb(sz(k.n * CB * k.h * k.w * B));
  test::nchw_to_blocked(x.data(), k.n, k.c, k.h * k.w, xb.data());
  std::vector<float> wp(sz(lib::conv_blocked_weight_floats(k.o, k.c, k.kh, k.kw)));
  lib::conv_blocked_prepare(wt.data(), k.o, k.c, k.kh, k.kw, wp.data());
  std::vector<float> resb(sz(k.n * OB * oh * ow * B));
  test::nchw_to_blocked(res.data(), k.n, k.o, oh * ow, resb.data());

  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    const LaunchContext ctx = make_ctx(threads);
    std::vector<float> out(sz(k.n * OB * oh * ow * B), std::nanf(""));
    if (k.epilogue) {
      // The epilogue's contract: row segment [ow0, ow0 + len) of row m of plane n * OB + ob,
      // in place, len outputs of B floats.
      auto epi = [&](int64_t plane, int64_t m, int64_t ow0, int64_t len, float* p) {
        EXPECT_EQ(p, out.data() + ((plane * oh + m) * ow + ow0) * B);
        const int64_t ob = plane % OB;
        const float* r = resb.data() + ((plane * oh + m) * ow + ow0) * B;
        for (int64_t i = 0; i < len * B; ++i) {
          const int64_t oc = ob * B + i % B;
          const float bv = oc < k.o ? bias[sz(oc)] : 0.0f;
          p[i] = std::max(0.0f, p[i] + bv + r[i]);
        }
      };
      lib::conv2d_blocked(&ctx, xb.data(), wp.data(), out.data(), k.n, k.c, k.h, k.w, k.o, oh, ow,
                          k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw, epi);
    } else {
      lib::conv2d_blocked(&ctx, xb.data(), wp.data(), out.data(), k.n, k.c, k.h, k.w, k.o, oh, ow,
                          k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw);
      // The lanes past O are zeros.
      for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
        const int64_t oc = ((i / (oh * ow * B)) % OB) * B + i % B;
        if (oc >= k.o) {
          ASSERT_EQ(out[sz(i)], 0.0f) << "padding lane " << i;
        }
      }
    }
    std::vector<float> plain(out_size);
    test::blocked_to_nchw(out.data(), k.n, k.o, oh * ow, plain.data());
    int bad = 0;
    for (size_t i = 0; i < out_size && bad < 5; ++i) {
      if (!(std::fabs(static_cast<double>(plain[i]) - ref[i]) <= 2e-6 * mag[i])) {
        ADD_FAILURE() << "element " << i << ": " << plain[i] << " vs " << ref[i];
        ++bad;
      }
    }
    if (first.empty())
      first = out;
    else
      EXPECT_EQ(std::memcmp(first.data(), out.data(), out.size() * sizeof(float)), 0)
          << "differs from 1 thread";
  }
  // Any blocking gives the same bits (tuners may pick any), and so does the input read
  // plain (x_plain: its rows are laid out blocked in the scratch band).
  if (k.epilogue) return;
  const ConvBlockedTuning tunings[] = {{},           {1, 1, 1, 1},   {2, 3, 2, 0}, {4, 5, 1, 1},
                                       {4, 0, 0, 2}, {1, 100, 3, 2}, {0, 0, 0, 1}};
  for (const ConvBlockedTuning& t : tunings) {
    for (bool x_plain : {false, true}) {
      SCOPED_TRACE("noc=" + std::to_string(t.noc) + " ur=" + std::to_string(t.ur) +
                   " chunk=" + std::to_string(t.chunk) + " order=" + std::to_string(t.order) +
                   (x_plain ? " x plain" : ""));
      const LaunchContext ctx = make_ctx(2);
      std::vector<float> out(first.size(), std::nanf(""));
      lib::conv2d_blocked(&ctx, x_plain ? x.data() : xb.data(), wp.data(), out.data(), k.n, k.c,
                          k.h, k.w, k.o, oh, ow, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw,
                          NoEpilogue{}, t, x_plain);
      EXPECT_EQ(std::memcmp(first.data(), out.data(), out.size() * sizeof(float)), 0);
    }
  }
}

TEST(RtConvBlocked, ChannelCounts) {
  for (int64_t c : {3, 17, 64, 130}) {
    for (int64_t o : {3, 17, 64, 130}) {
      Case k;
      k.n = 2, k.c = c, k.o = o, k.h = 9, k.w = 11;
      check(k);
    }
  }
}

TEST(RtConvBlocked, KernelsStridesPaddingDilation) {
  for (int64_t kk : {1, 3, 5, 7}) {
    for (int64_t s : {1, 2}) {
      for (int64_t p : {0, 1, 3}) {
        for (int64_t d : {1, 2}) {
          Case k;
          k.c = 17, k.o = 20, k.h = 15, k.w = 13, k.kh = k.kw = kk, k.sh = k.sw = s;
          k.ph = k.pw = p, k.dh = k.dw = d;
          if (k.oh() < 1 || k.ow() < 1) continue;
          check(k);
        }
      }
    }
  }
}

TEST(RtConvBlocked, MixedAndOddGeometry) {
  Case k;  // different strides, padding and dilation along the two axes, stride 3
  k.n = 2, k.c = 19, k.o = 33, k.h = 17, k.w = 23, k.kh = 3, k.kw = 5, k.sh = 2, k.sw = 3;
  k.ph = 2, k.pw = 1, k.dh = 1, k.dw = 2;
  check(k);
  Case wide;  // a row of several blocks, rows of several lengths
  wide.c = 8, wide.o = 40, wide.h = 5, wide.w = 61, wide.kh = 1, wide.kw = 3, wide.ph = 0;
  check(wide);
  Case tall;  // more tap rows than the routine keeps on its stack (17), dilated
  tall.c = 5, tall.o = 6, tall.h = 40, tall.w = 6, tall.kh = 17, tall.kw = 1, tall.dh = 2;
  tall.ph = 9, tall.pw = 1;
  check(tall);
  Case stride3;
  stride3.c = 5, stride3.o = 7, stride3.h = 11, stride3.w = 11, stride3.sh = stride3.sw = 3;
  check(stride3);
}

TEST(RtConvBlocked, TinyMaps) {
  for (int64_t kk : {1, 3, 7}) {
    Case k;  // 1x1 map: with padding kk / 2 only the centre tap is inside x
    k.n = 2, k.c = 17, k.o = 17, k.kh = k.kw = kk, k.ph = k.pw = kk / 2;
    check(k);
  }
  Case k;  // 3x3 map, no padding: one output
  k.c = 64, k.o = 64, k.h = k.w = 3, k.ph = k.pw = 0;
  check(k);
  Case t;  // 2x3, stride 2
  t.c = 3, t.o = 130, t.h = 2, t.w = 3, t.sh = t.sw = 2;
  check(t);
  Case z;  // padding larger than the kernel reaches: border rows read no input at all
  z.c = 5, z.o = 9, z.h = 2, z.w = 2, z.kh = z.kw = 1, z.ph = z.pw = 2;
  check(z);
}

TEST(RtConvBlocked, SeveralInputChannelChunks) {
  Case k;  // enough input channels that a group's weights are split into cache chunks
  k.c = 1100, k.o = 20, k.h = 5, k.w = 4, k.epilogue = true;
  check(k);
  Case s;
  s.c = 300, s.o = 17, s.h = s.w = 9, s.kh = s.kw = 7, s.ph = s.pw = 3, s.sh = s.sw = 2;
  check(s);
}

// Pointwise convolutions run on their pixels regrouped into longer rows (pointwise_rows):
// the epilogue still gets the caller's rows (a block that spans two is split), and every
// blocking gives the same bits. Maps of 7x7, 14x14 (rows of 28 on AVX2), 6x10 and 1x13.
TEST(RtConvBlocked, PointwiseRowsRegroupedWithAndWithoutEpilogue) {
  for (bool epilogue : {true, false}) {
    for (auto [h, w] : {std::pair<int64_t, int64_t>{7, 7}, {14, 14}, {6, 10}, {1, 13}}) {
      Case k;
      k.n = 2, k.c = 20, k.o = 19, k.h = h, k.w = w, k.kh = k.kw = 1, k.ph = k.pw = 0;
      k.epilogue = epilogue;
      check(k);
    }
  }
}

TEST(RtConvBlocked, ResNetLayersWithEpilogue) {
  Case stem;  // the stem on a smaller image
  stem.c = 3, stem.o = 64, stem.h = stem.w = 40, stem.kh = stem.kw = 7, stem.sh = stem.sw = 2;
  stem.ph = stem.pw = 3, stem.epilogue = true;
  check(stem);
  Case c3;
  c3.c = 64, c3.o = 64, c3.h = c3.w = 28, c3.epilogue = true;
  check(c3);
  Case down;  // 1x1 stride 2 downsampling
  down.n = 2, down.c = 64, down.o = 128, down.h = down.w = 14, down.kh = down.kw = 1;
  down.sh = down.sw = 2, down.ph = down.pw = 0, down.epilogue = true;
  check(down);
  Case late;  // 7x7 maps
  late.c = 256, late.o = 128, late.h = late.w = 7, late.epilogue = true;
  check(late);
  Case expand;  // a bottleneck's 1x1 expansion on 7x7 maps
  expand.c = 128, expand.o = 256, expand.h = expand.w = 7, expand.kh = expand.kw = 1;
  expand.ph = expand.pw = 0, expand.epilogue = true;
  check(expand);
}

// The ChannelAffine epilogue, applied by the micro-kernels to their accumulators, gives the
// bits of the plain sums mapped afterwards element by element (fma, then the clamps in order,
// zero past O): per-channel and constant scale and shift, lower and upper bounds (lo > hi
// included: hi wins, as in torch.clamp), NaN sums passed through,
// channels that leave a partial block, several input-channel chunks (the map applied once,
// on the last), a residual added, rows whose every tap lies in the padding, 1-3 threads and
// several blockings.
struct AffineCase {
  int64_t c, o, h, w, k, s, p;
};

void check_affine(const AffineCase& k, const ChannelAffine& proto, bool per_channel, bool nan_in,
                  bool residual = false) {
  const int64_t B = lib::conv_blocked_lanes();
  const int64_t oh = (k.h + 2 * k.p - k.k) / k.s + 1, ow = (k.w + 2 * k.p - k.k) / k.s + 1;
  const int64_t CB = (k.c + B - 1) / B, OB = (k.o + B - 1) / B;
  std::mt19937 rng(static_cast<unsigned>(k.c * 31 + k.o * 7 + k.h + k.k));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(sz(k.c * k.h * k.w)), wt(sz(k.o * k.c * k.k * k.k));
  std::vector<float> scale(sz(k.o)), shift(sz(k.o));
  for (float& v : x) v = dist(rng);
  for (float& v : wt) v = dist(rng);
  for (float& v : scale) v = 4.0f * dist(rng);
  for (float& v : shift) v = dist(rng);
  if (nan_in) x[0] = std::nanf("");  // every output that reads it is NaN
  std::vector<float> xb(sz(CB * k.h * k.w * B));
  test::nchw_to_blocked(x.data(), 1, k.c, k.h * k.w, xb.data());
  std::vector<float> wp(sz(lib::conv_blocked_weight_floats(k.o, k.c, k.k, k.k)));
  lib::conv_blocked_prepare(wt.data(), k.o, k.c, k.k, k.k, wp.data());
  ChannelAffine e = proto;
  if (per_channel) e.scale = scale.data(), e.shift = shift.data();
  e.channels = k.o;

  const size_t n_out = sz(OB * oh * ow * B);
  std::vector<float> res(n_out);  // laid out as the output, padding lanes not zero
  for (float& v : res) v = dist(rng);
  if (residual) e.residual = res.data();
  const LaunchContext ctx1 = make_ctx(1);
  std::vector<float> want(n_out);
  lib::conv2d_blocked(&ctx1, xb.data(), wp.data(), want.data(), 1, k.c, k.h, k.w, k.o, oh, ow, k.k,
                      k.k, k.s, k.s, k.p, k.p, 1, 1);
  int nans = 0;
  for (size_t i = 0; i < n_out; ++i) {
    const int64_t c = static_cast<int64_t>(i / sz(oh * ow * B)) * B + static_cast<int64_t>(i) % B;
    if (c >= k.o) {
      want[i] = 0.0f;
      continue;
    }
    const float sc = e.scale ? e.scale[c] : e.scale_k, sh = e.shift ? e.shift[c] : e.shift_k;
    float v = std::fma(want[i], sc, sh);
    if (residual) v += res[i];
    v = min_c(max_c(v, e.lo), e.hi);
    want[i] = v;
    nans += std::isnan(v) ? 1 : 0;
  }
  if (nan_in) {
    EXPECT_GT(nans, 0);
  }
  const ConvBlockedTuning tunings[] = {{}, {1, 1, 1, 1}, {2, 3, 1, 0}, {4, 5, 1, 1}, {4, 0, 0, 2}};
  for (int threads : {1, 2, 3}) {
    for (const ConvBlockedTuning& t : tunings) {
      SCOPED_TRACE("threads=" + std::to_string(threads) + " noc=" + std::to_string(t.noc) +
                   " ur=" + std::to_string(t.ur) + " chunk=" + std::to_string(t.chunk));
      const LaunchContext ctx = make_ctx(threads);
      std::vector<float> out(n_out, 12345.0f);
      lib::conv2d_blocked(&ctx, xb.data(), wp.data(), out.data(), 1, k.c, k.h, k.w, k.o, oh, ow,
                          k.k, k.k, k.s, k.s, k.p, k.p, 1, 1, e, t);
      int bad = 0;
      for (size_t i = 0; i < n_out && bad < 5; ++i) {
        uint32_t a = 0, b = 0;
        std::memcpy(&a, &out[i], 4);
        std::memcpy(&b, &want[i], 4);
        const bool same = a == b || (std::isnan(out[i]) && std::isnan(want[i]));
        if (!same) {
          ADD_FAILURE() << "element " << i << ": " << out[i] << " vs " << want[i];
          ++bad;
        }
      }
    }
  }
}

TEST(RtConvBlocked, ChannelAffineInRegisters) {
  ChannelAffine relu6;  // batch norm folded, then ReLU6
  relu6.lo = 0.0f, relu6.hi = 6.0f;
  ChannelAffine crossed;  // clamp(min=1, max=-1): the upper bound wins, as in torch.clamp
  crossed.lo = 1.0f, crossed.hi = -1.0f;
  ChannelAffine upper;  // an upper bound only, a constant scale and shift
  upper.scale_k = 0.5f, upper.shift_k = 0.25f, upper.hi = 0.75f;
  ChannelAffine lower_only;  // lanes past O stay zero although 0 < the bound
  lower_only.lo = 0.125f;
  ChannelAffine none;  // the identity: -0 and NaN kept
  const AffineCase cases[] = {
      {16, 96, 12, 12, 1, 1, 0},  // MobileNetV2's 1x1 expansion
      {17, 20, 9, 11, 3, 1, 1},   // partial blocks in and out
      {40, 33, 7, 7, 3, 2, 1},    // stride 2
      {5, 9, 2, 2, 1, 1, 2},      // rows and columns whose taps are all padding
      {1100, 20, 5, 4, 1, 1, 0},  // several input-channel chunks
  };
  for (const AffineCase& k : cases) {
    SCOPED_TRACE("c=" + std::to_string(k.c) + " o=" + std::to_string(k.o) +
                 " k=" + std::to_string(k.k));
    for (bool per_channel : {true, false}) {
      check_affine(k, relu6, per_channel, false);
      check_affine(k, crossed, per_channel, false);
      check_affine(k, lower_only, per_channel, false);
    }
    check_affine(k, upper, false, true);
    check_affine(k, none, false, true);
    check_affine(k, relu6, true, true);
    check_affine(k, relu6, true, false, true);  // a residual block's bn, add, relu6
    check_affine(k, none, false, false, true);  // a bare convolution plus a residual
  }
}

}  // namespace
}  // namespace ember_rt
