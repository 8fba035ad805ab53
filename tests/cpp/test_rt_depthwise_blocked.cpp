// Tests for runtime_include/ember_rt/depthwise_blocked.h against a float64 depthwise
// convolution on the plain layout: channel counts around the block (3, 17, 32, 96), kernels 1 /
// 3 / 5 / 7, strides 1 to 3, padding 0 to 3, dilation, odd and tiny maps, several bands of
// rows, batch 2, a fused bias + residual + relu6 epilogue, the ChannelAffine epilogue in
// registers (the bits of the plain sums mapped afterwards), the padding lanes, and 1, 2 and 3
// threads agreeing bit for bit. Built for AVX-512 and again for AVX2 where the machine has
// AVX-512 (CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ember_rt/depthwise_blocked.h"
#include "rt_blocked.h"  // nchw_to_blocked, blocked_to_nchw
#include "rt_threads.h"

namespace ember_rt {
namespace {

using test::make_ctx;

struct Case {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t kh = 3, kw = 3, sh = 1, sw = 1, ph = 1, pw = 1, dh = 1, dw = 1;
  bool epilogue = false;  // + bias[c] + residual, then clamp to [0, 6]

  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  std::string str() const {
    return "n=" + std::to_string(n) + " c=" + std::to_string(c) + " map=" + std::to_string(h) +
           "x" + std::to_string(w) + " k=" + std::to_string(kh) + "x" + std::to_string(kw) +
           " s=" + std::to_string(sh) + "," + std::to_string(sw) + " p=" + std::to_string(ph) +
           "," + std::to_string(pw) + " d=" + std::to_string(dh) + "," + std::to_string(dw) +
           (epilogue ? " bias+res+relu6" : "");
  }
};

size_t sz(int64_t v) { return static_cast<size_t>(v); }

void check(const Case& k) {
  SCOPED_TRACE(k.str());
  const int64_t oh = k.oh(), ow = k.ow(), B = lib::conv_blocked_lanes();
  ASSERT_GE(oh, 1);
  ASSERT_GE(ow, 1);
  const int64_t CB = (k.c + B - 1) / B;
  std::mt19937 rng(static_cast<unsigned>(k.c * 131 + k.h * 7 + k.w + k.kh * 3 + k.sh));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(sz(k.n * k.c * k.h * k.w)), wt(sz(k.c * k.kh * k.kw));
  std::vector<float> bias(sz(k.c)), res(sz(k.n * k.c * oh * ow));
  for (float& v : x) v = dist(rng);
  for (float& v : wt) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (float& v : res) v = 3.0f * dist(rng);

  // float64 reference on the plain layout, with the sum of |terms| for the tolerance.
  const size_t out_size = sz(k.n * k.c * oh * ow);
  std::vector<double> ref(out_size), mag(out_size);
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t ch = 0; ch < k.c; ++ch)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = 0, m = 0;
          for (int64_t i = 0; i < k.kh; ++i)
            for (int64_t j = 0; j < k.kw; ++j) {
              const int64_t iy = y * k.sh - k.ph + i * k.dh, ix = xx * k.sw - k.pw + j * k.dw;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
              const double t = static_cast<double>(wt[sz((ch * k.kh + i) * k.kw + j)]) *
                               static_cast<double>(x[sz(((b * k.c + ch) * k.h + iy) * k.w + ix)]);
              s += t;
              m += std::fabs(t);
            }
          const size_t at = sz(((b * k.c + ch) * oh + y) * ow + xx);
          if (k.epilogue)
            s = std::clamp(s + static_cast<double>(bias[sz(ch)]) + static_cast<double>(res[at]),
                           0.0, 6.0);
          ref[at] = s;
          mag[at] = m + 1.0;
        }

  std::vector<float> xb(sz(k.n * CB * k.h * k.w * B));
  test::nchw_to_blocked(x.data(), k.n, k.c, k.h * k.w, xb.data());
  std::vector<float> resb(sz(k.n * CB * oh * ow * B));
  test::nchw_to_blocked(res.data(), k.n, k.c, oh * ow, resb.data());

  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    const LaunchContext ctx = make_ctx(threads);
    std::vector<float> out(sz(k.n * CB * oh * ow * B), std::nanf(""));
    if (k.epilogue) {
      // The epilogue's contract: row segment [ow0, ow0 + len) of row m of plane n * CB + cb,
      // in place, len outputs of B floats.
      auto epi = [&](int64_t plane, int64_t m, int64_t ow0, int64_t len, float* p) {
        EXPECT_EQ(p, out.data() + ((plane * oh + m) * ow + ow0) * B);
        const int64_t cb = plane % CB;
        const float* r = resb.data() + ((plane * oh + m) * ow + ow0) * B;
        for (int64_t i = 0; i < len * B; ++i) {
          const int64_t ch = cb * B + i % B;
          const float bv = ch < k.c ? bias[sz(ch)] : 0.0f;
          p[i] = std::clamp(p[i] + bv + r[i], 0.0f, 6.0f);
        }
      };
      lib::depthwise_conv2d_blocked(&ctx, xb.data(), wt.data(), out.data(), k.n, k.c, k.h, k.w, oh,
                                    ow, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw, epi);
    } else {
      lib::depthwise_conv2d_blocked(&ctx, xb.data(), wt.data(), out.data(), k.n, k.c, k.h, k.w, oh,
                                    ow, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw);
      // The lanes past C are zeros.
      for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
        const int64_t ch = ((i / (oh * ow * B)) % CB) * B + i % B;
        if (ch >= k.c) {
          ASSERT_EQ(out[sz(i)], 0.0f) << "padding lane " << i;
        }
      }
    }
    std::vector<float> plain(out_size);
    test::blocked_to_nchw(out.data(), k.n, k.c, oh * ow, plain.data());
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
}

TEST(RtDepthwiseBlocked, ChannelCounts) {
  for (int64_t c : {1, 3, 8, 16, 17, 32, 96}) {
    Case k;
    k.n = 2, k.c = c, k.h = 9, k.w = 11;
    check(k);
  }
}

TEST(RtDepthwiseBlocked, KernelsStridesPaddingDilation) {
  for (int64_t kk : {1, 3, 5, 7}) {
    for (int64_t s : {1, 2, 3}) {
      for (int64_t p : {0, 1, 3}) {
        for (int64_t d : {1, 2}) {
          Case k;
          k.c = 17, k.h = 15, k.w = 13, k.kh = k.kw = kk, k.sh = k.sw = s;
          k.ph = k.pw = p, k.dh = k.dw = d;
          if (k.oh() < 1 || k.ow() < 1) continue;
          check(k);
        }
      }
    }
  }
}

TEST(RtDepthwiseBlocked, MixedAndOddGeometry) {
  Case k;  // different strides, padding and dilation along the two axes
  k.n = 2, k.c = 19, k.h = 17, k.w = 23, k.kh = 3, k.kw = 5, k.sh = 2, k.sw = 3;
  k.ph = 2, k.pw = 1, k.dh = 1, k.dw = 2;
  check(k);
  Case rowpad;  // padding along one axis only
  rowpad.c = 32, rowpad.h = 10, rowpad.w = 12, rowpad.ph = 1, rowpad.pw = 0;
  check(rowpad);
  Case colpad;
  colpad.c = 32, colpad.h = 10, colpad.w = 12, colpad.ph = 0, colpad.pw = 2;
  check(colpad);
  Case wide;  // a row of several register blocks of different lengths
  wide.c = 8, wide.h = 5, wide.w = 61, wide.kh = 1, wide.kw = 3, wide.ph = 0;
  check(wide);
  Case many;  // several bands of rows per plane
  many.c = 3, many.h = 90, many.w = 40, many.epilogue = true;
  check(many);
  Case tiny;  // 1x1 map: with padding only the centre tap is inside x
  tiny.n = 2, tiny.c = 17, tiny.h = tiny.w = 1;
  check(tiny);
  Case z;  // padding larger than the kernel reaches: border rows read no input at all
  z.c = 5, z.h = 2, z.w = 2, z.kh = z.kw = 1, z.ph = z.pw = 2;
  check(z);
}

TEST(RtDepthwiseBlocked, MobileNetV2LayersWithEpilogue) {
  for (int64_t s : {1, 2}) {
    for (const auto& [c, hw] :
         {std::pair<int64_t, int64_t>{32, 56}, {96, 28}, {144, 14}, {960, 7}}) {
      Case k;
      k.c = c, k.h = k.w = hw, k.sh = k.sw = s, k.epilogue = true;
      check(k);
    }
  }
}

// The ChannelAffine epilogue in registers: the bits of the plain sums mapped afterwards
// element by element (fma with the channel's scale and shift, a residual added or not, max 0,
// min 6, zero past C), for
// channel counts that fill and that leave a partial block, padding, stride 2, NaN sums, and
// 1-3 threads.
TEST(RtDepthwiseBlocked, ChannelAffineInRegisters) {
  const int64_t B = lib::conv_blocked_lanes();
  for (int64_t c : {16, 20, 96}) {
    for (int64_t s : {1, 2}) {
      for (bool residual : {false, true}) {
        SCOPED_TRACE("c=" + std::to_string(c) + " s=" + std::to_string(s) +
                     (residual ? " residual" : ""));
        const int64_t h = 9, w = 10, oh = (h + 2 - 3) / s + 1, ow = (w + 2 - 3) / s + 1;
        const int64_t CB = (c + B - 1) / B;
        std::mt19937 rng(static_cast<unsigned>(c + s));
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        std::vector<float> x(sz(c * h * w)), wt(sz(c * 9)), scale(sz(c)), shift(sz(c));
        for (float& v : x) v = dist(rng);
        for (float& v : wt) v = dist(rng);
        for (float& v : scale) v = dist(rng);
        for (float& v : shift) v = dist(rng);
        x[sz(h * w + 3)] = std::nanf("");  // channel 1
        std::vector<float> xb(sz(CB * h * w * B));
        test::nchw_to_blocked(x.data(), 1, c, h * w, xb.data());
        ChannelAffine e;
        e.scale = scale.data(), e.shift = shift.data(), e.lo = 0.0f, e.hi = 6.0f, e.channels = c;
        const LaunchContext ctx1 = make_ctx(1);
        std::vector<float> want(sz(CB * oh * ow * B)), res(want.size());
        for (float& v : res) v = dist(rng);  // laid out as the output, padding lanes not zero
        if (residual) e.residual = res.data();
        lib::depthwise_conv2d_blocked(&ctx1, xb.data(), wt.data(), want.data(), 1, c, h, w, oh, ow,
                                      3, 3, s, s, 1, 1, 1, 1);
        int nans = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          const int64_t ch =
              static_cast<int64_t>(i / sz(oh * ow * B)) * B + static_cast<int64_t>(i) % B;
          float v = std::fma(want[i], scale[sz(ch < c ? ch : 0)], shift[sz(ch < c ? ch : 0)]);
          if (residual) v += res[i];
          want[i] = ch >= c ? 0.0f : min_c(max_c(v, 0.0f), 6.0f);
          nans += std::isnan(want[i]) ? 1 : 0;
        }
        EXPECT_GT(nans, 0);
        for (int threads : {1, 2, 3}) {
          const LaunchContext ctx = make_ctx(threads);
          std::vector<float> out(want.size(), 12345.0f);
          lib::depthwise_conv2d_blocked(&ctx, xb.data(), wt.data(), out.data(), 1, c, h, w, oh, ow,
                                        3, 3, s, s, 1, 1, 1, 1, e);
          for (size_t i = 0; i < out.size(); ++i) {
            uint32_t a = 0, b = 0;
            std::memcpy(&a, &out[i], 4);
            std::memcpy(&b, &want[i], 4);
            ASSERT_TRUE(a == b || (std::isnan(out[i]) && std::isnan(want[i])))
                << "threads " << threads << " element " << i << ": " << out[i] << " vs " << want[i];
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember_rt
