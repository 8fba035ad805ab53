// The constants and series evaluators shared by the special functions of math_bessel.h and
// math_special2.h (namespace ember_rt::special_detail, in double): pi, NaN, infinity, a
// polynomial by Horner's rule and a Chebyshev series by Clenshaw's sum (Cephes' chbevl).
#pragma once

#include <limits>

#include "as_torch.h"

namespace ember_rt {
namespace special_detail {
EMBER_RT_AS_TORCH_BEGIN

constexpr double kPi = 3.14159265358979323846;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// c[0] x^(n-1) + ... + c[n-1] (Horner), and the same with a leading coefficient 1 before c.
template <int N>
inline double poly(double x, const double (&c)[N]) {
  double r = 0.0;
  for (double v : c) r = r * x + v;
  return r;
}
// Clenshaw's sum of a Chebyshev series (Cephes chbevl).
template <int N>
inline double chbevl(double x, const double (&c)[N]) {
  double b0 = c[0], b1 = 0.0, b2 = 0.0;
  for (int i = 1; i < N; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + c[i];
  }
  return 0.5 * (b0 - b2);
}

EMBER_RT_AS_TORCH_END
}  // namespace special_detail
}  // namespace ember_rt
