// Tests for runtime_include/ember_rt/depthwise.h against a float64 direct convolution: channel
// counts around the vector width, maps from 1 x 1 to 112 x 112 (one band and several),
// strides 1 and 2, padding 0 to 3, dilation, 3x3 / 5x5 / 7x7 / non-square kernels, channel
// multipliers, a fused bias + clamp epilogue, and several thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ember_rt/depthwise.h"
#include "rt_threads.h"

namespace ember_rt {
namespace {

using test::make_ctx;

struct Case {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t kh = 3, kw = 3, sh = 1, sw = 1, ph = 1, pw = 1, dh = 1, dw = 1;
  int64_t mult = 1;
  bool epilogue = false;  // + bias[o], clamped to [0, 6]

  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  std::string str() const {
    return "n=" + std::to_string(n) + " c=" + std::to_string(c) + " map=" + std::to_string(h) +
           "x" + std::to_string(w) + " k=" + std::to_string(kh) + "x" + std::to_string(kw) +
           " s=" + std::to_string(sh) + "," + std::to_string(sw) + " p=" + std::to_string(ph) +
           "," + std::to_string(pw) + " d=" + std::to_string(dh) + "," + std::to_string(dw) +
           " mult=" + std::to_string(mult) + (epilogue ? " bias+clamp" : "");
  }
};

// Runs the case at 1 and 3 threads and compares with the float64 reference.
void check(const Case& k) {
  SCOPED_TRACE(k.str());
  const int64_t o = k.c * k.mult, oh = k.oh(), ow = k.ow();
  ASSERT_GE(oh, 1);
  ASSERT_GE(ow, 1);
  std::mt19937 rng(static_cast<unsigned>(k.c * 131 + k.h * 7 + k.w + k.kh * 3 + k.sh));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k.n * k.c * k.h * k.w));
  std::vector<float> wt(static_cast<size_t>(o * k.kh * k.kw)), bias(static_cast<size_t>(o));
  for (float& v : x) v = dist(rng);
  for (float& v : wt) v = dist(rng);
  for (float& v : bias) v = 3.0f * dist(rng);

  const size_t out_size = static_cast<size_t>(k.n * o * oh * ow);
  std::vector<double> ref(out_size);
  for (int64_t b = 0; b < k.n; ++b) {
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t ic = oc / k.mult;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = 0;
          for (int64_t i = 0; i < k.kh; ++i) {
            for (int64_t j = 0; j < k.kw; ++j) {
              const int64_t iy = y * k.sh - k.ph + i * k.dh, ix = xx * k.sw - k.pw + j * k.dw;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
              s += static_cast<double>(wt[static_cast<size_t>((oc * k.kh + i) * k.kw + j)]) *
                   static_cast<double>(
                       x[static_cast<size_t>(((b * k.c + ic) * k.h + iy) * k.w + ix)]);
            }
          }
          if (k.epilogue)
            s = std::clamp(s + static_cast<double>(bias[static_cast<size_t>(oc)]), 0.0, 6.0);
          ref[static_cast<size_t>(((b * o + oc) * oh + y) * ow + xx)] = s;
        }
      }
    }
  }

  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    const LaunchContext ctx = make_ctx(threads);
    std::vector<float> out(out_size, std::nanf(""));
    if (k.epilogue) {
      // The generated epilogue's contract: write row segment [n0, n0 + len) of row m of
      // plane bb (= n * O + o) from the convolution's values[0, len).
      auto epi = [&](int64_t bb, int64_t m, int64_t n0, int64_t len, float* values) {
        EXPECT_EQ(n0, 0);
        EXPECT_EQ(len, ow);
        float* row = out.data() + (bb * oh + m) * ow;
        const float add = bias[static_cast<size_t>(bb % o)];
        for (int64_t i = 0; i < len; ++i)
          row[n0 + i] = std::min(std::max(values[i] + add, 0.0f), 6.0f);
      };
      lib::depthwise_conv2d(&ctx, x.data(), wt.data(), out.data(), k.n, k.c, k.h, k.w, o, oh, ow,
                            k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw, epi);
    } else {
      lib::depthwise_conv2d(&ctx, x.data(), wt.data(), out.data(), k.n, k.c, k.h, k.w, o, oh, ow,
                            k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw);
    }
    int bad = 0;
    for (size_t i = 0; i < out_size && bad < 5; ++i) {
      const double tol = 1e-5 * static_cast<double>(k.kh * k.kw);
      if (!(std::fabs(static_cast<double>(out[i]) - ref[i]) <= tol)) {
        ADD_FAILURE() << "element " << i << ": " << out[i] << " vs " << ref[i];
        ++bad;
      }
    }
  }
}

TEST(RtDepthwise, ChannelsAndMaps) {
  for (int64_t c : {1, 7, 16, 17, 33, 96}) {
    for (int64_t map : {1, 7, 14}) {
      for (int64_t s : {1, 2}) {
        Case k;
        k.c = c, k.h = k.w = map, k.sh = k.sw = s;
        check(k);
      }
    }
  }
}

TEST(RtDepthwise, OddMapsPaddingAndStride) {
  for (int64_t p : {0, 1, 2}) {
    for (int64_t s : {1, 2}) {
      Case k;
      k.n = 2, k.c = 17, k.h = 15, k.w = 17, k.ph = k.pw = p, k.sh = k.sw = s;
      check(k);
    }
  }
}

TEST(RtDepthwise, LargeMapsSpanSeveralBands) {
  for (int64_t s : {1, 2}) {
    Case k;
    k.c = 7, k.h = k.w = 112, k.sh = k.sw = s, k.epilogue = true;
    check(k);
  }
  Case tall;  // a band boundary inside a 7x7 window, mixed strides
  tall.c = 3, tall.h = 150, tall.w = 60, tall.kh = tall.kw = 7, tall.ph = tall.pw = 3;
  tall.sh = 2, tall.sw = 1;
  check(tall);
}

TEST(RtDepthwise, KernelSizesAndDilation) {
  for (int64_t kk : {1, 5, 7}) {
    Case k;
    k.c = 33, k.h = k.w = 14, k.kh = k.kw = kk, k.ph = k.pw = kk / 2;
    check(k);
    k.sh = k.sw = 2;
    check(k);
  }
  for (int64_t s : {1, 2}) {
    Case k;
    k.c = 16, k.h = 15, k.w = 17, k.dh = k.dw = 2, k.ph = k.pw = 2, k.sh = k.sw = s;
    check(k);
    k.dh = 3, k.ph = 0, k.pw = 1;  // dilation and padding that differ per dimension
    check(k);
  }
  Case rect;
  rect.c = 9, rect.h = 20, rect.w = 11, rect.kh = 1, rect.kw = 5, rect.ph = 0, rect.pw = 2;
  check(rect);
  rect.kh = 5, rect.kw = 1, rect.ph = 2, rect.pw = 0, rect.sh = 3;
  check(rect);
}

TEST(RtDepthwise, MultiplierAndEpilogue) {
  for (int64_t map : {1, 7, 14, 15}) {
    Case k;
    k.n = 2, k.c = 7, k.h = map, k.w = map, k.mult = 2, k.epilogue = true;
    check(k);
    k.mult = 1, k.c = 96, k.sh = k.sw = 2;
    check(k);
  }
}

TEST(RtDepthwise, PaddingLargerThanTheMap) {
  Case k;
  k.c = 5, k.h = 2, k.w = 3, k.ph = k.pw = 3, k.kh = k.kw = 3;
  check(k);
  k.sh = k.sw = 2;
  check(k);
}

}  // namespace
}  // namespace ember_rt
