// Tests for runtime_include/ember_rt/math.h: exp, log, erf, tanh, sigmoid, silu, gelu_erf,
// gelu_tanh and pow against double-precision std:: references over dense sweeps and special
// values, and vector results against the scalar ones.
#include <gtest/gtest.h>

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

struct ErrStats {
  double max_rel = 0, max_abs = 0;
  float at_rel = 0, at_abs = 0;
};

// Checks f (vector and scalar) against ref: |y - r| <= abs_tol + rel_tol |r|, NaN where r is
// NaN, exact infinities; vector lanes must equal the scalar results bit for bit.
template <class FV, class FS, class R>
ErrStats check(const char* name, const std::vector<float>& x, FV fv, FS fs, R ref, double rel_tol,
               double abs_tol) {
  const std::vector<float> yv = eval_vec(fv, x);
  ErrStats st;
  int failures = 0;
  for (size_t i = 0; i < x.size() && failures < 10; ++i) {
    const float ys = fs(x[i]);
    const double r = ref(static_cast<double>(x[i]));
    if (!same(yv[i], ys)) {
      ADD_FAILURE() << name << "(" << x[i] << "): vector " << yv[i] << " != scalar " << ys;
      ++failures;
    }
    if (std::isnan(r) || std::isinf(r)) {
      if (!(std::isnan(r) ? std::isnan(ys) : ys == r)) {
        ADD_FAILURE() << name << "(" << x[i] << ") = " << ys << ", expected " << r;
        ++failures;
      }
      continue;
    }
    const double err = std::fabs(static_cast<double>(ys) - r);
    const double rel = r != 0 ? err / std::fabs(r) : (err == 0 ? 0 : INFINITY);
    if (err > st.max_abs) st.max_abs = err, st.at_abs = x[i];
    if (std::fabs(r) > 1e-30 && rel > st.max_rel) st.max_rel = rel, st.at_rel = x[i];
    if (!(err <= abs_tol + rel_tol * std::fabs(r))) {
      ADD_FAILURE() << name << "(" << x[i] << ") = " << ys << ", expected " << r << " (rel " << rel
                    << ", abs " << err << ")";
      ++failures;
    }
  }
  std::printf("  %-10s max rel err %.3g (x=%g), max abs err %.3g (x=%g), %zu points\n", name,
              st.max_rel, st.at_rel, st.max_abs, st.at_abs, x.size());
  return st;
}

#define VF(fn) [](vf v) { return fn(v); }
#define SF(fn) [](float v) { return fn(v); }

const double kSub = 0x1p-149;  // one ulp of the subnormals

TEST(RtMath, Exp) {
  std::vector<float> x = sweep(-110.0f, 100.0f, 331);
  for (float s : {0.0f, -0.0f, 1.0f, -1.0f, 88.72283f, 88.72284f, -87.33654f, -103.27893f,
                  -103.97208f, -104.0f, 100.0f, -100.0f, kInf, -kInf, kNaN, 1e-30f, -1e-45f})
    x.push_back(s);
  check("exp", x, VF(exp), SF(exp), [](double v) { return std::exp(v) > 3.4028235677973366e38 ? INFINITY : std::exp(v); }, 1.5e-7, kSub);
  EXPECT_EQ(exp(100.0f), kInf);
  EXPECT_EQ(exp(-110.0f), 0.0f);
  EXPECT_EQ(exp(-100.0f), static_cast<float>(std::exp(-100.0)));  // 3.7e-44: a subnormal
  EXPECT_EQ(exp(0.0f), 1.0f);
  EXPECT_EQ(exp(-kInf), 0.0f);
  EXPECT_EQ(exp(kInf), kInf);
  EXPECT_TRUE(std::isnan(exp(kNaN)));
  EXPECT_GT(exp(-103.0f), 0.0f);  // subnormal results
}

TEST(RtMath, Log) {
  std::vector<float> x = sweep(0.0f, 3.4e38f, 331);
  for (float s : {1.0f, 0.0f, -0.0f, -1.0f, -kInf, kInf, kNaN, 1e-45f, 1.17549435e-38f,
                  1.0000001f, 0.99999994f, 1.4142135f, 1.4142137f, 0.70710677f})
    x.push_back(s);
  check("log", x, VF(log), SF(log), [](double v) { return v < 0 ? NAN : std::log(v); }, 1.5e-7, 0);
  EXPECT_EQ(log(0.0f), -kInf);
  EXPECT_EQ(log(-0.0f), -kInf);
  EXPECT_TRUE(std::isnan(log(-1.0f)));
  EXPECT_EQ(log(kInf), kInf);
  EXPECT_EQ(log(1.0f), 0.0f);
}

TEST(RtMath, Erf) {
  std::vector<float> x = sweep(-12.0f, 12.0f, 97);
  for (float s : {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 0.49999997f, 1e-30f, kInf, -kInf, kNaN, 1e30f})
    x.push_back(s);
  const ErrStats st = check("erf", x, VF(erf), SF(erf), [](double v) { return std::erf(v); }, 3e-7, 1e-37);
  EXPECT_LE(st.max_abs, 1e-6);
  EXPECT_EQ(erf(kInf), 1.0f);
  EXPECT_EQ(erf(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(erf(kNaN)));
}

TEST(RtMath, Tanh) {
  std::vector<float> x = sweep(-30.0f, 30.0f, 97);
  for (float s : {0.0f, -0.0f, 0.625f, -0.625f, 0.62499994f, 9.0f, 1e-30f, kInf, -kInf, kNaN, 1e30f, -1e30f})
    x.push_back(s);
  const ErrStats st = check("tanh", x, VF(tanh), SF(tanh), [](double v) { return std::tanh(v); }, 2.5e-7, 1e-37);
  EXPECT_LE(st.max_abs, 1e-6);
  EXPECT_EQ(tanh(kInf), 1.0f);
  EXPECT_EQ(tanh(-kInf), -1.0f);
  EXPECT_EQ(tanh(100.0f), 1.0f);
  EXPECT_TRUE(std::isnan(tanh(kNaN)));
}

// gelu_tanh inherits the conditioning of its formula in float: the rounding error of u is
// amplified by |2u| in exp(-2u), so its tiny negative tail gets an absolute bound.
TEST(RtMath, Activations) {
  std::vector<float> x = sweep(-120.0f, 120.0f, 211);
  for (float s : {0.0f, -0.0f, 1.0f, -1.0f, kInf, kNaN, 1e-30f}) x.push_back(s);
  check("sigmoid", x, VF(sigmoid), SF(sigmoid), [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 3e-7, 1e-36);
  check("silu", x, VF(silu), SF(silu), [](double v) { return v / (1.0 + std::exp(-v)); }, 3e-7, 1e-34);
  check("gelu_erf", x, VF(gelu_erf), SF(gelu_erf),
        [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }, 5e-7, 1e-34);
  check("gelu_tanh", x, VF(gelu_tanh), SF(gelu_tanh), [](double v) {
          return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
        }, 3e-7, 1e-7);
  EXPECT_EQ(sigmoid(kInf), 1.0f);
  EXPECT_EQ(sigmoid(-kInf), 0.0f);
  EXPECT_EQ(gelu_erf(kInf), kInf);
  EXPECT_EQ(gelu_erf(-30.0f), -0.0f);
  EXPECT_EQ(gelu_tanh(kInf), kInf);
  EXPECT_TRUE(std::isnan(sigmoid(kNaN)) && std::isnan(gelu_erf(kNaN)) && std::isnan(silu(kNaN)));
}

TEST(RtMath, Pow) {
  const std::vector<float> bases = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, 3.7f, -3.7f,
                                    1e-3f, 1e-40f, 123.456f, 1e30f, -1e30f, kInf, -kInf, kNaN,
                                    0.999f, 1.001f, 7.0f, 0.1f};
  const std::vector<float> exps = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 3.0f, -3.0f, 0.5f, -0.5f, 2.5f,
                                   1.0f / 3.0f, 10.0f, -10.0f, 37.0f, 100.5f, 1e10f, 16777217.0f,
                                   kInf, -kInf, kNaN, 7.25f, -126.0f};
  std::vector<float> a, b;
  for (float x : bases)
    for (float y : exps) a.push_back(x), b.push_back(y);
  for (float x = 0.01f; x < 100.0f; x *= 1.0137f)  // a dense positive region
    for (float y = -9.0f; y < 9.0f; y += 0.73f) a.push_back(x), b.push_back(y);
  while (a.size() % W) a.push_back(2.0f), b.push_back(2.0f);
  std::vector<float> yv(a.size());
  for (size_t i = 0; i < a.size(); i += W) pow(vf::load(&a[i]), vf::load(&b[i])).store(&yv[i]);
  double max_rel = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double r = std::pow(static_cast<double>(a[i]), static_cast<double>(b[i]));
    const float rf = static_cast<float>(r);  // correctly rounded in almost every case
    const float ys = pow(a[i], b[i]);
    for (float y : {yv[i], ys}) {
      if (std::isnan(rf) || std::isinf(rf) || rf == 0) {
        EXPECT_TRUE(same(y, rf)) << a[i] << "^" << b[i] << " = " << y << ", expected " << rf;
      } else {
        const double rel = std::fabs(y - r) / std::fabs(r);
        max_rel = std::max(max_rel, std::fabs(r) > 1e-37 ? rel : 0.0);
        EXPECT_LE(std::fabs(y - r), 1.2e-7 * std::fabs(r) + kSub) << a[i] << "^" << b[i] << " = " << y;
      }
    }
  }
  std::printf("  pow        max rel err %.3g, %zu points\n", max_rel, a.size());
}

TEST(RtMath, NaNPropagates) {
  const vf n(kNaN);
  float out[W];
  for (vf r : {exp(n), log(n), erf(n), tanh(n), sigmoid(n), silu(n), gelu_erf(n), gelu_tanh(n),
               pow(n, vf(2.0f)), relu(n), max(n, vf(1.0f)), min(vf(1.0f), n), sqrt(n)}) {
    r.store(out);
    for (float v : out) EXPECT_TRUE(std::isnan(v));
  }
}

}  // namespace
}  // namespace ember_rt
