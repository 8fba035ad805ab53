// Tests for runtime_include/ember_rt/conv_wgrad.h (a convolution's weight gradient over chunks
// of output rows, and in place over chunks of images) against a float64 direct sum: chunks of
// 1 row, of several rows, one chunk for everything, and a last chunk cut short (batch sizes
// that are not a multiple of the chunk); chunks of 1 image, 2, and the whole batch; strides,
// padding, dilation, groups, non-square kernels; a pointwise convolution's (1x1, stride 1, no
// padding) as one GEMM per image as well; 1, 2 and 3 threads give the same bits; the GEMM's
// accumulate flag (C += A * B) on its own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ember_rt/conv_wgrad.h"
#include "rt_threads.h"

namespace ember_rt {
namespace {

using test::make_ctx;

struct Case {
  int64_t n = 1, c = 1, h = 1, w = 1, o = 1;
  int64_t kh = 3, kw = 3, sh = 1, sw = 1, ph = 1, pw = 1, dh = 1, dw = 1, groups = 1;
  int64_t rows = 1;  // output rows per chunk

  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  std::string str() const {
    return "n=" + std::to_string(n) + " c=" + std::to_string(c) + " o=" + std::to_string(o) +
           " map=" + std::to_string(h) + "x" + std::to_string(w) + " k=" + std::to_string(kh) +
           "x" + std::to_string(kw) + " s=" + std::to_string(sh) + "," + std::to_string(sw) +
           " p=" + std::to_string(ph) + "," + std::to_string(pw) + " d=" + std::to_string(dh) +
           "," + std::to_string(dw) + " g=" + std::to_string(groups) +
           " rows=" + std::to_string(rows);
  }
};

void check(const Case& k) {
  SCOPED_TRACE(k.str());
  const int64_t oh = k.oh(), ow = k.ow(), cg = k.c / k.groups, og = k.o / k.groups;
  const int64_t ck = cg * k.kh * k.kw;
  std::mt19937 rng(static_cast<unsigned>(k.c * 131 + k.h * 7 + k.w + k.kh * 3 + k.sh));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k.n * k.c * k.h * k.w));
  std::vector<float> dy(static_cast<size_t>(k.n * k.o * oh * ow));
  for (float& v : x) v = dist(rng);
  for (float& v : dy) v = dist(rng);

  std::vector<double> ref(static_cast<size_t>(k.o * ck), 0.0);
  for (int64_t o = 0; o < k.o; ++o) {
    const int64_t g = o / og;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t a = 0; a < k.kh; ++a)
        for (int64_t b = 0; b < k.kw; ++b) {
          double s = 0;
          for (int64_t n = 0; n < k.n; ++n)
            for (int64_t y = 0; y < oh; ++y)
              for (int64_t xx = 0; xx < ow; ++xx) {
                const int64_t ih = y * k.sh - k.ph + a * k.dh, iw = xx * k.sw - k.pw + b * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                s += static_cast<double>(
                         dy[static_cast<size_t>(((n * k.o + o) * oh + y) * ow + xx)]) *
                     x[static_cast<size_t>(((n * k.c + g * cg + c) * k.h + ih) * k.w + iw)];
              }
          ref[static_cast<size_t>(((o * cg + c) * k.kh + a) * k.kw + b)] = s;
        }
  }

  // dw against the float64 sum, and the same bits as the other thread counts (`same`).
  const auto matches = [&](const std::vector<float>& dw, std::vector<float>* same) {
    for (size_t i = 0; i < dw.size(); ++i)
      ASSERT_NEAR(dw[i], ref[i], 1e-4 * (1.0 + std::abs(ref[i]))) << "at " << i;
    if (same->empty()) {
      *same = dw;
    } else {
      EXPECT_EQ(dw, *same);  // the same bits at any thread count
    }
  };

  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    const LaunchContext ctx = make_ctx(threads);
    std::vector<float> dw(static_cast<size_t>(k.o * ck), 12345.0f);  // overwritten
    std::vector<float> win(static_cast<size_t>(k.rows * ow * ck));
    std::vector<float> dyc(static_cast<size_t>(og * k.rows * ow));
    lib::conv2d_weight_grad(&ctx, dy.data(), x.data(), dw.data(), win.data(), dyc.data(), k.n, k.c,
                            k.h, k.w, k.o, oh, ow, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw,
                            k.groups, k.rows);
    matches(dw, &first);
  }

  if (k.kh == 1 && k.kw == 1 && k.sh == 1 && k.sw == 1 && k.ph == 0 && k.pw == 0) {
    std::vector<float> same;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("pointwise, threads=" + std::to_string(threads));
      const LaunchContext ctx = make_ctx(threads);
      std::vector<float> dw(static_cast<size_t>(k.o * ck), 12345.0f);  // overwritten
      lib::conv2d_weight_grad_pointwise(&ctx, dy.data(), x.data(), dw.data(), k.n, k.c, k.h * k.w,
                                        k.o, k.groups);
      matches(dw, &same);
    }
  }

  const WgradPlan plan = wgrad_plan(k.w, oh, ow, k.kh, k.kw, k.sh, k.sw, k.pw, k.dh, k.dw);
  for (int64_t imgs : {int64_t{1}, int64_t{2}, k.n}) {
    std::vector<float> same;
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("in place, imgs=" + std::to_string(imgs) +
                   " threads=" + std::to_string(threads));
      const LaunchContext ctx = make_ctx(threads);
      std::vector<float> dw(static_cast<size_t>(k.o * ck), 12345.0f);  // overwritten
      std::vector<float> xph(static_cast<size_t>(cg * plan.phases() * imgs * plan.plane()), 777.0f);
      const int64_t ogp = wgrad_channel_stride(og);
      std::vector<float> dyt(static_cast<size_t>(imgs * plan.plane() * ogp), 777.0f);
      std::vector<float> dwt(static_cast<size_t>(wgrad_tap_rows(ck) * ogp), 777.0f);
      lib::conv2d_weight_grad_inplace(&ctx, dy.data(), x.data(), dw.data(), xph.data(), dyt.data(),
                                      dwt.data(), k.n, k.c, k.h, k.w, k.o, oh, ow, k.kh, k.kw, k.sh,
                                      k.sw, k.ph, k.pw, k.dh, k.dw, k.groups, imgs);
      matches(dw, &same);
    }
  }
}

TEST(ConvWeightGrad, ChunksOfOneRowAndOfSeveral) {
  Case k;
  k.n = 3, k.c = 5, k.h = 9, k.w = 11, k.o = 7;
  for (int64_t rows : {1, 4, 7, 27, 100}) {  // 27 rows in all: one chunk from 27 on
    k.rows = rows;
    check(k);
  }
}

TEST(ConvWeightGrad, StridePaddingDilationKernels) {
  Case k;
  k.n = 2, k.c = 6, k.h = 13, k.w = 10, k.o = 9, k.rows = 5;
  k.kh = 3, k.kw = 2, k.sh = 2, k.sw = 3, k.ph = 2, k.pw = 0, k.dh = 2, k.dw = 1;
  check(k);
  k.kh = 7, k.kw = 7, k.sh = 2, k.sw = 2, k.ph = 3, k.pw = 3, k.dh = 1, k.dw = 1;  // a stem
  k.h = 20, k.w = 17;
  check(k);
  k.kh = 1, k.kw = 1, k.sh = 2, k.sw = 2, k.ph = 0, k.pw = 0;  // a downsampling 1x1
  check(k);
}

TEST(ConvWeightGrad, Groups) {
  Case k;
  k.n = 3, k.c = 8, k.h = 7, k.w = 8, k.o = 12, k.groups = 4, k.rows = 4;
  check(k);
  k.groups = 2, k.kh = 5, k.kw = 3, k.ph = 2, k.pw = 1, k.dh = 1, k.dw = 2;
  check(k);
}

TEST(ConvWeightGrad, ChannelPanelsOfEveryWidth) {
  Case k;  // in place: 64-channel panels and a last one of 16, 32 or 48; taps past a tile
  k.n = 2, k.c = 5, k.h = 12, k.w = 13, k.rows = 6;
  for (int64_t o : {64, 80, 112, 160}) {
    k.o = o;
    check(k);
  }
}

TEST(ConvWeightGrad, Pointwise) {
  Case k;  // 1x1, stride 1, no padding: a GEMM per image and group, long enough to split K
  k.kh = 1, k.kw = 1, k.ph = 0, k.pw = 0, k.rows = 7;
  k.n = 3, k.c = 12, k.h = 23, k.w = 29, k.o = 40;
  check(k);
  k.groups = 4, k.dh = 2, k.dw = 3;  // dilation changes nothing
  check(k);
  k.n = 1, k.c = 1, k.h = 1, k.w = 1, k.o = 1, k.groups = 1;
  check(k);
}

TEST(ConvWeightGrad, LargeEnoughForThePackedGemm) {
  Case k;  // several K blocks of the GEMM per chunk, partial tiles along M and N
  k.n = 2, k.c = 19, k.h = 24, k.w = 30, k.o = 37, k.rows = 13;
  check(k);
}

TEST(GemmAccumulate, AddsToC) {
  const int64_t M = 29, N = 45, K = 300;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
  std::vector<float> c(static_cast<size_t>(M * N));
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  for (float& v : c) v = dist(rng);
  const std::vector<float> c0 = c;
  GemmShape s{};
  s.batch = 1, s.M = M, s.N = N, s.K = K;
  s.A = a.data(), s.a_m = K, s.a_k = 1;
  s.B = b.data(), s.b_k = N, s.b_n = 1;
  s.C = c.data(), s.c_m = N;
  s.accumulate = true;
  const LaunchContext ctx = make_ctx(2);
  gemm(s, &ctx, NoEpilogue{});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double r = c0[static_cast<size_t>(m * N + n)];
      for (int64_t q = 0; q < K; ++q)
        r += static_cast<double>(a[static_cast<size_t>(m * K + q)]) *
             b[static_cast<size_t>(q * N + n)];
      ASSERT_NEAR(c[static_cast<size_t>(m * N + n)], r, 1e-4 * (1.0 + std::abs(r)));
    }
  s.K = 0;  // an empty sum leaves C as it is
  const std::vector<float> before = c;
  gemm(s, &ctx, NoEpilogue{});
  EXPECT_EQ(c, before);
}

}  // namespace
}  // namespace ember_rt
