// Shared by the runtime math tests (test_rt_math*.cpp): sweeps over float bit patterns, the
// vector path of a function, and its error in ulps against a double-precision reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "ember_rt/math.h"

namespace ember_rt::testing {

constexpr int W = vf::width;
inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const float kInf = std::numeric_limits<float>::infinity();
inline const float kMax = std::numeric_limits<float>::max();

inline uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
// Equal bit patterns (so +0 != -0), or both NaN.
inline bool same(float a, float b) { return (a != a && b != b) || bits_of(a) == bits_of(b); }

// Every `stride`-th float in [lo, hi] (walking the bit patterns, so every binade is covered).
inline std::vector<float> sweep(float lo, float hi, uint32_t stride) {
  std::vector<float> v;
  auto walk = [&](float from, float to) {  // from, to >= 0
    for (uint64_t u = bits_of(from); u <= bits_of(to); u += stride)
      v.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  };
  if (hi > 0) walk(lo > 0 ? lo : 0.0f, hi);
  if (lo < 0) {
    const size_t start = v.size();
    walk(hi < 0 ? -hi : 0.0f, -lo);
    for (size_t i = start; i < v.size(); ++i) v[i] = -v[i];
  }
  return v;
}

// The error of y against the exact value r in ulps of the float format at r (subnormal ulp
// below 2^-126). A result that rounds to +-inf must be +-inf; y = inf for a finite r counts
// as 2^128.
inline double ulp_error(float y, double r) {
  const double ar = std::fabs(r);
  if (ar >= 0x1.ffffffp127) return (std::isinf(y) && (y > 0) == (r > 0)) ? 0.0 : INFINITY;
  const double yd = std::isinf(y) ? std::copysign(0x1p128, static_cast<double>(y)) : y;
  int e;
  std::frexp(ar, &e);  // ar = m 2^e, m in [1/2, 1)
  return std::fabs(yd - r) / std::ldexp(1.0, std::max(e - 24, -149));
}

// Applies f to x through the vector path (full vectors plus one partial tail).
template <class F>
std::vector<float> eval_vec(F f, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  size_t i = 0;
  for (; i + W <= x.size(); i += W) f(vf::load(&x[i])).store(&y[i]);
  const int rest = static_cast<int>(x.size() - i);
  if (rest > 0) f(vf::load_partial(&x[i], rest)).store_partial(&y[i], rest);
  return y;
}

// Checks f (vector and scalar) against ref: vector lanes equal the scalar results bit for bit;
// where ref is NaN the result is NaN, where it is +-0 the result is that zero (sign included),
// elsewhere the error is at most max_ulp. Returns the worst error seen.
template <class FV, class FS, class R>
double check_ulp(const char* name, const std::vector<float>& x, FV fv, FS fs, R ref,
                 double max_ulp) {
  const std::vector<float> yv = eval_vec(fv, x);
  double worst = 0;
  float at = 0;
  int failures = 0;
  for (size_t i = 0; i < x.size() && failures < 10; ++i) {
    const float ys = fs(x[i]);
    const double r = ref(static_cast<double>(x[i]));
    if (!same(yv[i], ys)) {
      ADD_FAILURE() << name << "(" << x[i] << "): vector " << yv[i] << " != scalar " << ys;
      ++failures;
    }
    if (std::isnan(r) || r == 0) {
      if (!same(ys, static_cast<float>(r))) {
        ADD_FAILURE() << name << "(" << x[i] << ") = " << ys << ", expected " << r;
        ++failures;
      }
      continue;
    }
    const double err = ulp_error(ys, r);
    if (err > worst) worst = err, at = x[i];
    if (!(err <= max_ulp)) {
      ADD_FAILURE() << name << "(" << x[i] << ") = " << ys << ", expected " << r << " (" << err
                    << " ulp)";
      ++failures;
    }
  }
  std::printf("  %-10s worst %.3f ulp (x = %.9g), %zu points\n", name, worst, at, x.size());
  return worst;
}

}  // namespace ember_rt::testing
