// Tests for runtime_include/ember_rt/math_trig.h: the float / vf trigonometric and hyperbolic
// functions against the double-precision std:: functions (error in ulps of the float result)
// over sweeps of bit patterns that cover every binade, special values as torch float32 gives
// them, vector lanes equal to the scalar results bit for bit, and the double versions.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "rt_math_check.h"

namespace ember_rt {
namespace {

using namespace testing;  // NOLINT: the shared checks

const float kDenorm = 1e-45f;

// The special inputs every unary function sees, appended to its sweeps.
std::vector<float> with_specials(std::vector<float> x) {
  for (float s : {0.0f,           -0.0f,   kInf,     -kInf,           kNaN,
                  -kNaN,          kDenorm, -kDenorm, 1.17549435e-38f, -1.17549435e-38f,
                  kMax,           -kMax,   1.0f,     -1.0f,           0.5f,
                  -0.5f,          2.0f,    -2.0f,    0.000244140625f, -0.000244140625f,
                  0.00024414062f, 4096.0f, 1e5f,     -1e5f,           99999.99f,
                  1e30f,          -1e30f})
    x.push_back(s);
  return x;
}

// A full-range sweep plus a denser one over [-dense, dense].
std::vector<float> points(float dense, uint32_t dense_stride) {
  std::vector<float> x = sweep(-kMax, kMax, 4099);
  const std::vector<float> d = sweep(-dense, dense, dense_stride);
  x.insert(x.end(), d.begin(), d.end());
  return with_specials(x);
}

#define VF(fn) [](vf v) { return fn(v); }
#define SF(fn) [](float v) { return fn(v); }
#define REF(fn) [](double v) { return std::fn(v); }

// The bound of each function is a little above its worst error over every 13th float of the
// whole range (every 29th for the portable path, without FMA), noted as "FMA / no FMA" (ulp);
// math_trig.h lists the same numbers.

TEST(RtMathTrig, SinCosTan) {
  const std::vector<float> x = points(1.1e5f, 1201);
  check_ulp("sin", x, VF(sin), SF(sin), REF(sin), 1.0);  // 0.73 / 0.74
  check_ulp("cos", x, VF(cos), SF(cos), REF(cos), 1.0);  // 0.73 / 0.76
  check_ulp("tan", x, VF(tan), SF(tan), REF(tan), 1.0);  // 0.86 / 0.88
  // The float closest to a multiple of pi/2 below 1e5 (x - 161 pi/2 = 4.2e-9), and
  // neighbours of the fast range's edge.
  for (float v : {252.898209f, -252.898209f, 99999.99f, 1e5f, 100000.01f}) {
    EXPECT_LE(ulp_error(sin(v), std::sin(static_cast<double>(v))), 1.0) << v;
    EXPECT_LE(ulp_error(cos(v), std::cos(static_cast<double>(v))), 1.0) << v;
    EXPECT_LE(ulp_error(tan(v), std::tan(static_cast<double>(v))), 1.0) << v;
  }
  EXPECT_TRUE(same(sin(-0.0f), -0.0f));
  EXPECT_TRUE(same(tan(-0.0f), -0.0f));
  EXPECT_EQ(cos(-0.0f), 1.0f);
  EXPECT_TRUE(same(sin(-kDenorm), -kDenorm));
  for (float v : {kInf, -kInf, kNaN}) {
    EXPECT_TRUE(std::isnan(sin(v)));
    EXPECT_TRUE(std::isnan(cos(v)));
    EXPECT_TRUE(std::isnan(tan(v)));
  }
}

TEST(RtMathTrig, AsinAcosAtan) {
  const std::vector<float> x = points(1.5f, 1009);
  check_ulp("asin", x, VF(asin), SF(asin), REF(asin), 1.0);  // 0.60 / 0.62
  check_ulp("acos", x, VF(acos), SF(acos), REF(acos), 1.0);  // 0.89 / 0.90
  check_ulp("atan", x, VF(atan), SF(atan), REF(atan), 1.5);  // 1.02 / 1.02
  EXPECT_EQ(asin(1.0f), 1.57079637f);
  EXPECT_EQ(asin(-1.0f), -1.57079637f);
  EXPECT_EQ(acos(-1.0f), 3.14159274f);
  EXPECT_TRUE(same(acos(1.0f), 0.0f));
  EXPECT_EQ(acos(0.0f), 1.57079637f);
  EXPECT_TRUE(same(asin(-0.0f), -0.0f));
  EXPECT_TRUE(same(atan(-0.0f), -0.0f));
  EXPECT_EQ(atan(kInf), 1.57079637f);
  EXPECT_EQ(atan(-kInf), -1.57079637f);
  EXPECT_EQ(atan(1.0f), 0.785398185f);
  for (float v : {1.0000001f, -1.0000001f, 2.0f, kInf, -kInf, kNaN}) {
    EXPECT_TRUE(std::isnan(asin(v))) << v;
    EXPECT_TRUE(std::isnan(acos(v))) << v;
  }
}

TEST(RtMathTrig, SinhCosh) {
  std::vector<float> x = points(100.0f, 1009);
  // Every float around the overflow threshold (e^89.4159 / 2 = 3.40e38): inf exactly where
  // the result rounds to inf.
  const std::vector<float> edge = sweep(89.3f, 89.5f, 1);
  for (float v : edge) x.push_back(v), x.push_back(-v);
  check_ulp("sinh", x, VF(sinh), SF(sinh), REF(sinh), 2.0);  // 1.67 / 1.67
  check_ulp("cosh", x, VF(cosh), SF(cosh), REF(cosh), 2.0);  // 1.36 / 1.65
  EXPECT_EQ(sinh(89.0f), static_cast<float>(std::sinh(89.0)));
  EXPECT_EQ(cosh(-89.0f), static_cast<float>(std::cosh(89.0)));
  EXPECT_EQ(sinh(89.5f), kInf);
  EXPECT_EQ(sinh(-89.5f), -kInf);
  EXPECT_EQ(cosh(-89.5f), kInf);
  EXPECT_EQ(sinh(kInf), kInf);
  EXPECT_EQ(sinh(-kInf), -kInf);
  EXPECT_EQ(cosh(-kInf), kInf);
  EXPECT_EQ(cosh(0.0f), 1.0f);
  EXPECT_EQ(cosh(-0.0f), 1.0f);
  EXPECT_TRUE(same(sinh(-0.0f), -0.0f));
  EXPECT_TRUE(std::isnan(sinh(kNaN)) && std::isnan(cosh(kNaN)));
}

TEST(RtMathTrig, AsinhAcoshAtanh) {
  const std::vector<float> x = points(5.0f, 1009);
  check_ulp("asinh", x, VF(asinh), SF(asinh), REF(asinh), 2.0);  // 1.61 / 1.58
  check_ulp("acosh", x, VF(acosh), SF(acosh), REF(acosh), 1.5);  // 1.31 / 1.27
  check_ulp("atanh", x, VF(atanh), SF(atanh), REF(atanh), 2.0);  // 1.69 / 1.70
  EXPECT_EQ(asinh(kInf), kInf);
  EXPECT_EQ(asinh(-kInf), -kInf);
  EXPECT_EQ(asinh(kMax), static_cast<float>(std::asinh(static_cast<double>(kMax))));
  EXPECT_TRUE(same(asinh(-0.0f), -0.0f));
  EXPECT_TRUE(same(acosh(1.0f), 0.0f));
  EXPECT_EQ(acosh(kInf), kInf);
  for (float v : {0.99999994f, 0.0f, -1.0f, -kInf, kNaN}) EXPECT_TRUE(std::isnan(acosh(v))) << v;
  EXPECT_EQ(atanh(1.0f), kInf);
  EXPECT_EQ(atanh(-1.0f), -kInf);
  EXPECT_TRUE(same(atanh(-0.0f), -0.0f));
  for (float v : {1.0000001f, -1.0000001f, 2.0f, kInf, -kInf, kNaN})
    EXPECT_TRUE(std::isnan(atanh(v))) << v;
}

// Binary functions: every pair of a sweep (both signs, every binade, specials) plus a dense
// grid of moderate values; vector lanes against the scalar results.
template <class FV, class FS, class R>
double check_binary(const char* name, FV fv, FS fs, R ref, double max_ulp) {
  std::vector<float> vals = with_specials(sweep(-kMax, kMax, 8388607));  // ~2 per binade
  for (float v = -4.0f; v <= 4.0f; v += 0.0173f) vals.push_back(v);
  std::vector<float> a, b;
  for (float u : vals)
    for (float v : vals) a.push_back(u), b.push_back(v);
  for (float u : sweep(0.001f, 1000.0f, 104729))  // ratios near 1 and near tan(pi/8)
    for (float s : {1.0f, 0.99999994f, 1.0000001f, 0.41421354f, 0.41421357f, 2.4142134f, 0.5f}) {
      a.push_back(u), b.push_back(u * s);
      a.push_back(-u * s), b.push_back(u);
    }
  while (a.size() % W) a.push_back(1.0f), b.push_back(1.0f);
  std::vector<float> yv(a.size());
  for (size_t i = 0; i < a.size(); i += W) fv(vf::load(&a[i]), vf::load(&b[i])).store(&yv[i]);
  double worst = 0;
  int failures = 0;
  for (size_t i = 0; i < a.size() && failures < 10; ++i) {
    const float ys = fs(a[i], b[i]);
    const double r = ref(static_cast<double>(a[i]), static_cast<double>(b[i]));
    if (!same(yv[i], ys)) {
      ADD_FAILURE() << name << "(" << a[i] << ", " << b[i] << "): vector " << yv[i] << " != scalar "
                    << ys;
      ++failures;
    }
    const double err = (std::isnan(r) || r == 0) ? (same(ys, static_cast<float>(r)) ? 0 : INFINITY)
                                                 : ulp_error(ys, r);
    worst = std::max(worst, err);
    if (!(err <= max_ulp)) {
      ADD_FAILURE() << name << "(" << a[i] << ", " << b[i] << ") = " << ys << ", expected " << r
                    << " (" << err << " ulp)";
      ++failures;
    }
  }
  std::printf("  %-6s worst %.3f ulp, %zu points\n", name, worst, a.size());
  return worst;
}

TEST(RtMathTrig, Atan2) {
  check_binary(
      "atan2", [](vf y, vf x) { return atan2(y, x); }, [](float y, float x) { return atan2(y, x); },
      [](double y, double x) { return std::atan2(y, x); }, 2.0);  // 1.49 / 1.46 (random pairs)
  // The IEEE / C99 special cases, which torch.atan2 follows.
  const float pi = 3.14159274f, pio2 = 1.57079637f, pio4 = 0.785398185f;
  const struct {
    float y, x, want;
  } cases[] = {
      {0.0f, 0.0f, 0.0f},   {-0.0f, 0.0f, -0.0f},        {0.0f, -0.0f, pi},
      {-0.0f, -0.0f, -pi},  {0.0f, -1.0f, pi},           {-0.0f, -1.0f, -pi},
      {0.0f, 1.0f, 0.0f},   {-0.0f, 1.0f, -0.0f},        {1.0f, 0.0f, pio2},
      {1.0f, -0.0f, pio2},  {-1.0f, 0.0f, -pio2},        {-1.0f, -0.0f, -pio2},
      {kInf, 1.0f, pio2},   {-kInf, -1.0f, -pio2},       {kInf, kInf, pio4},
      {-kInf, kInf, -pio4}, {kInf, -kInf, 3 * pio4},     {-kInf, -kInf, -3 * pio4},
      {1.0f, kInf, 0.0f},   {-1.0f, kInf, -0.0f},        {1.0f, -kInf, pi},
      {-1.0f, -kInf, -pi},  {kDenorm, -3e38f, pi},       {3e38f, kDenorm, pio2},
      {3e38f, 3e38f, pio4}, {-3e38f, -3e38f, -3 * pio4}, {kDenorm, kDenorm, pio4},
      {kNaN, 1.0f, kNaN},   {1.0f, kNaN, kNaN},          {kNaN, kInf, kNaN},
      {kInf, kNaN, kNaN},
  };
  for (const auto& c : cases) {
    EXPECT_TRUE(same(atan2(c.y, c.x), c.want))
        << "atan2(" << c.y << ", " << c.x << ") = " << atan2(c.y, c.x) << ", expected " << c.want;
    EXPECT_TRUE(same(c.want, static_cast<float>(std::atan2(double{c.y}, double{c.x}))));
  }
}

TEST(RtMathTrig, Hypot) {
  check_binary(
      "hypot", [](vf a, vf b) { return hypot(a, b); }, [](float a, float b) { return hypot(a, b); },
      [](double a, double b) { return std::hypot(a, b); }, 1.5);  // 0.99 / 1.18 (random pairs)
  EXPECT_EQ(hypot(3.0f, 4.0f), 5.0f);
  EXPECT_EQ(hypot(3e38f, 3e38f), kInf);           // 4.2e38 overflows, and only the result
  for (float v : {2e38f, 1e-40f, 1e-20f, 1e20f})  // squares that overflow / underflow
    EXPECT_EQ(hypot(v, v), static_cast<float>(std::hypot(double{v}, double{v}))) << v;
  EXPECT_EQ(hypot(kDenorm, 0.0f), kDenorm);
  EXPECT_TRUE(same(hypot(-0.0f, -0.0f), 0.0f));
  for (float n : {kNaN, 1.0f, kInf, -kInf}) {
    EXPECT_EQ(hypot(kInf, n), kInf);
    EXPECT_EQ(hypot(n, -kInf), kInf);
  }
  EXPECT_TRUE(std::isnan(hypot(kNaN, 1.0f)));
  EXPECT_TRUE(std::isnan(hypot(0.0f, kNaN)));
}

// A vector whose lanes take different paths (tiny, reduced, lane-wise large, specials) gives
// each lane the scalar result.
TEST(RtMathTrig, MixedLanes) {
  const float in[16] = {0.3f,  2e5f, -0.0f, kNaN,  1e-5f, -7.5f,  kInf,  0.9f,
                        3e38f, 1.5f, -1e5f, 50.0f, -0.6f, 1e-40f, 99.0f, -3.0f};
  for (int base = 0; base + W <= 16; base += W) {
    const vf v = vf::load(in + base);
    float out[W];
    const auto expect_lanes = [&](const char* name, vf r, float (*f)(float)) {
      r.store(out);
      for (int i = 0; i < W; ++i)
        EXPECT_TRUE(same(out[i], f(in[base + i]))) << name << "(" << in[base + i] << ")";
    };
    expect_lanes("sin", sin(v), [](float x) { return sin(x); });
    expect_lanes("cos", cos(v), [](float x) { return cos(x); });
    expect_lanes("tan", tan(v), [](float x) { return tan(x); });
    expect_lanes("asin", asin(v), [](float x) { return asin(x); });
    expect_lanes("acos", acos(v), [](float x) { return acos(x); });
    expect_lanes("atan", atan(v), [](float x) { return atan(x); });
    expect_lanes("sinh", sinh(v), [](float x) { return sinh(x); });
    expect_lanes("cosh", cosh(v), [](float x) { return cosh(x); });
    expect_lanes("asinh", asinh(v), [](float x) { return asinh(x); });
    expect_lanes("acosh", acosh(v), [](float x) { return acosh(x); });
    expect_lanes("atanh", atanh(v), [](float x) { return atanh(x); });
  }
}

TEST(RtMathTrig, DoubleVersions) {
  for (double v : {0.0, -0.0, 0.3, -0.7, 1.0, 1.5, 2.0, 1e5, 1e300, -1e-310,
                   std::numeric_limits<double>::infinity(), std::nan("")}) {
    const auto eq = [](double a, double b) { return (a != a && b != b) || a == b; };
    EXPECT_TRUE(eq(ember_rt::sin(v), std::sin(v))) << v;
    EXPECT_TRUE(eq(ember_rt::cos(v), std::cos(v))) << v;
    EXPECT_TRUE(eq(ember_rt::tan(v), std::tan(v))) << v;
    EXPECT_TRUE(eq(ember_rt::asin(v), std::asin(v))) << v;
    EXPECT_TRUE(eq(ember_rt::acos(v), std::acos(v))) << v;
    EXPECT_TRUE(eq(ember_rt::atan(v), std::atan(v))) << v;
    EXPECT_TRUE(eq(ember_rt::sinh(v), std::sinh(v))) << v;
    EXPECT_TRUE(eq(ember_rt::cosh(v), std::cosh(v))) << v;
    EXPECT_TRUE(eq(ember_rt::asinh(v), std::asinh(v))) << v;
    EXPECT_TRUE(eq(ember_rt::acosh(v), std::acosh(v))) << v;
    EXPECT_TRUE(eq(ember_rt::atanh(v), std::atanh(v))) << v;
    EXPECT_TRUE(eq(ember_rt::atan2(v, -1.5), std::atan2(v, -1.5))) << v;
    EXPECT_TRUE(eq(ember_rt::hypot(v, 3.0), std::hypot(v, 3.0))) << v;
  }
  EXPECT_EQ(std::signbit(ember_rt::atan2(-0.0, 1.0)), true);
  EXPECT_EQ(ember_rt::hypot(std::numeric_limits<double>::infinity(), std::nan("")),
            std::numeric_limits<double>::infinity());
}

TEST(RtMathTrig, NaNPropagates) {
  const vf n(kNaN);
  float out[W];
  for (vf r : {sin(n), cos(n), tan(n), asin(n), acos(n), atan(n), sinh(n), cosh(n), asinh(n),
               acosh(n), atanh(n), atan2(n, vf(1.0f)), atan2(vf(1.0f), n), hypot(n, vf(1.0f))}) {
    r.store(out);
    for (float v : out) EXPECT_TRUE(std::isnan(v));
  }
}

}  // namespace
}  // namespace ember_rt
