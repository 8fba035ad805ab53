// Tests for runtime_include/ember_rt/winograd.h: the filter, input and output transforms of
// Winograd F(4x4, 3x3), chained with a plain product over channels, against a direct
// convolution in double (F(4x4, 3x3) in float32 is within ~3e-6 of the largest output;
// a wrong coefficient is off by O(1)): odd sizes (tiles cut by the output's edge, partial vectors
// of tiles), padding 0 to 2, batch 1 and 2, and two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "ember_rt/winograd.h"
#include "rt_threads.h"

namespace ember_rt {
namespace {

struct Case {
  int64_t n, c, o, h, w, pad;
};

// Max |winograd - direct| / max |direct| for one convolution.
double relative_error(const Case& k, const LaunchContext* ctx) {
  std::mt19937 rng(static_cast<unsigned>(k.c * 131 + k.h * 7 + k.w + k.pad));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k.n * k.c * k.h * k.w));
  std::vector<float> w(static_cast<size_t>(k.o * k.c * 9));
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  const int64_t oh = k.h + 2 * k.pad - 2, ow = k.w + 2 * k.pad - 2;
  const int64_t th = (oh + 3) / 4, tw = (ow + 3) / 4, p = k.n * th * tw;
  std::vector<float> u(static_cast<size_t>(36 * k.o * k.c));
  std::vector<float> v(static_cast<size_t>(36 * k.c * p));
  std::vector<float> m(static_cast<size_t>(36 * k.o * p));
  std::vector<float> y(static_cast<size_t>(k.n * k.o * oh * ow), NAN);
  lib::winograd_f43_filter(ctx, w.data(), u.data(), k.o, k.c);
  lib::winograd_f43_input(ctx, x.data(), v.data(), k.n, k.c, k.h, k.w, k.pad, k.pad, th, tw);
  for (int64_t e = 0; e < 36; ++e)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t t = 0; t < p; ++t) {
        double acc = 0;
        for (int64_t c = 0; c < k.c; ++c)
          acc += static_cast<double>(u[static_cast<size_t>((e * k.o + o) * k.c + c)]) *
                 v[static_cast<size_t>((e * k.c + c) * p + t)];
        m[static_cast<size_t>((e * k.o + o) * p + t)] = static_cast<float>(acc);
      }
  lib::winograd_f43_output(ctx, m.data(), y.data(), k.n, k.o, oh, ow, th, tw);
  double max_err = 0, max_ref = 0;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double ref = 0;
          for (int64_t c = 0; c < k.c; ++c)
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t b = 0; b < 3; ++b) {
                const int64_t ih = i + a - k.pad, iw = j + b - k.pad;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                ref +=
                    static_cast<double>(w[static_cast<size_t>(((o * k.c + c) * 3 + a) * 3 + b)]) *
                    x[static_cast<size_t>(((n * k.c + c) * k.h + ih) * k.w + iw)];
              }
          const double got = y[static_cast<size_t>(((n * k.o + o) * oh + i) * ow + j)];
          EXPECT_FALSE(std::isnan(got))
              << "output (" << n << ", " << o << ", " << i << ", " << j << ") not written";
          max_err = std::max(max_err, std::abs(got - ref));
          max_ref = std::max(max_ref, std::abs(ref));
        }
  return max_err / max_ref;
}

TEST(RtWinograd, MatchesDirectConvolution) {
  const Case cases[] = {{1, 3, 4, 7, 7, 1},     {2, 5, 3, 13, 9, 0}, {1, 16, 8, 14, 14, 1},
                        {2, 7, 6, 6, 37, 1},    {1, 4, 5, 3, 3, 0},  {1, 9, 2, 28, 28, 2},
                        {1, 32, 16, 56, 11, 1}, {2, 2, 2, 10, 70, 0}};
  for (const Case& k : cases) {
    EXPECT_LT(relative_error(k, nullptr), 1e-5) << "n=" << k.n << " c=" << k.c << " o=" << k.o
                                                << " h=" << k.h << " w=" << k.w << " pad=" << k.pad;
  }
}

TEST(RtWinograd, TwoThreadsGiveTheSameResult) {
  const LaunchContext ctx = test::make_ctx(2);
  const Case k{2, 24, 20, 29, 31, 1};
  EXPECT_LT(relative_error(k, &ctx), 1e-5);
}

// The filter transform of a kernel that is 1 at its centre: G g G^T = g1 g1^T with
// g1 = G [0, 1, 0]^T = [0, -1/6, 1/6, 1/12, -1/12, 0].
TEST(RtWinograd, FilterTransformOfACentredImpulse) {
  std::vector<float> w(9, 0.0f);
  w[4] = 1.0f;
  std::vector<float> u(36);
  lib::winograd_f43_filter(nullptr, w.data(), u.data(), 1, 1);
  const double g1[6] = {0, -1.0 / 6, 1.0 / 6, 1.0 / 12, -1.0 / 12, 0};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) EXPECT_NEAR(u[static_cast<size_t>(i * 6 + j)], g1[i] * g1[j], 1e-8);
}

// The transform (winograd_filter.h: exact sums of products by powers of two, one scaling)
// against G g G^T in long double: within one float rounding of it.
TEST(RtWinograd, FilterTransformIsRoundedOnce) {
  const long double G[6][3] = {{0.25L, 0, 0},
                               {-1.0L / 6, -1.0L / 6, -1.0L / 6},
                               {-1.0L / 6, 1.0L / 6, -1.0L / 6},
                               {1.0L / 24, 1.0L / 12, 1.0L / 6},
                               {1.0L / 24, -1.0L / 12, 1.0L / 6},
                               {0, 0, 1}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  const int64_t O = 5, C = 7;
  std::vector<float> w(static_cast<size_t>(O * C * 9)), u(static_cast<size_t>(36 * O * C));
  for (float& v : w) v = dist(rng);
  lib::winograd_f43_filter(nullptr, w.data(), u.data(), O, C);
  for (int64_t oc = 0; oc < O * C; ++oc)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) {
        long double exact = 0;
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            exact += G[i][a] * w[static_cast<size_t>(oc * 9 + a * 3 + b)] * G[j][b];
        const float got = u[static_cast<size_t>((i * 6 + j) * O * C + oc)];
        const float lo = std::nextafter(static_cast<float>(exact), -INFINITY);
        const float hi = std::nextafter(static_cast<float>(exact), INFINITY);
        EXPECT_TRUE(got >= lo && got <= hi)
            << oc << " " << i << " " << j << ": " << got << " vs " << static_cast<double>(exact);
      }
}

}  // namespace
}  // namespace ember_rt
