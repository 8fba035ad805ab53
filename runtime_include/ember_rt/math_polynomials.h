// The orthogonal polynomials of torch.special (Chebyshev T U V W and their shifted forms,
// Hermite H and He, Laguerre L, Legendre P) of a degree n given as a float, as templates over
// T = float or double in namespace ember_rt::special_detail (the entry points are in
// math_special2.h):
//   polynomials   torch's recurrences and special cases (0 for n < 0, closed forms at |x| = 1,
//              the trigonometric forms of the Chebyshev polynomials for |x| < 1 and large n;
//              Hermite NaN past degree 128 in float32, 512 in float64), evaluated in the
//              operands' own precision as torch does, so that overflow gives the same NaN or inf.
//              The degree is truncated toward zero; NaN, +-inf and degrees past int64 count as
//              negative.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "as_torch.h"

namespace ember_rt {
namespace special_detail {
EMBER_RT_AS_TORCH_BEGIN

// ---- orthogonal polynomials
// ----------------------------------------------------------------------

// The degree as torch takes it from a float: truncated toward zero; NaN, +-inf and values past
// int64 become negative (x86's conversion gives INT64_MIN there), so the polynomial is 0.
template <class T>
inline int64_t degree(T n) {
  if (!(n > T(-9.2e18) && n < T(9.2e18))) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(n);
}

// The three-term recurrence r = a(x, k) q - b(k) p shared by the Chebyshev kinds, from p0, p1.
template <class T>
inline T chebyshev_recurrence(T x2, T p, T q, int64_t n) {
  T r = q;
  for (int64_t k = 2; k <= n && !std::isnan(q); ++k) {
    r = x2 * q - p;
    p = q;
    q = r;
  }
  return r;
}
// Chebyshev polynomials at y (y = x for T..W, 2x - 1 for the shifted ones). trig_from: the degree
// above which |y| < 1 uses the trigonometric form (torch: 6 for T, 8 for U V W unshifted, 6 for
// shifted U V, 4 for shifted W).
template <class T>
inline T chebyshev_t(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  if (shifted ? x == T(1) : std::fabs(y) == T(1)) return (y > T(0) || n % 2 == 0) ? T(1) : T(-1);
  if (shifted && x == T(0)) return n % 2 == 0 ? T(1) : T(-1);
  if (n > 6 && std::fabs(y) < T(1)) return std::cos(static_cast<T>(n) * std::acos(y));
  if (n == 0) return T(1);
  if (n == 1) return y;
  return chebyshev_recurrence(y + y, T(1), y, n);
}
template <class T>
inline T chebyshev_u(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  const T n1 = static_cast<T>(n + 1);
  if (shifted ? x == T(1) : std::fabs(y) == T(1)) return (y > T(0) || n % 2 == 0) ? n1 : -n1;
  if (shifted && x == T(0)) return n % 2 == 0 ? n1 : -n1;
  if (n > (shifted ? 6 : 8) && std::fabs(y) < T(1)) {
    const T theta = std::acos(y);
    if (std::sin(theta) != T(0)) return std::sin(n1 * theta) / std::sin(theta);
    return n1 * std::cos(n1 * theta) / y;
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y;
  return chebyshev_recurrence(y + y, T(1), y + y, n);
}
template <class T>
inline T chebyshev_v(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  const T odd = static_cast<T>(n + n + 1);
  if (shifted ? x == T(1) : (std::fabs(y) == T(1) && y > T(0))) return T(1);
  if (shifted ? x == T(0) : std::fabs(y) == T(1)) return n % 2 == 0 ? odd : -odd;
  if (n > (shifted ? 6 : 8) && std::fabs(y) < T(1)) {
    const T theta = std::acos(y);
    if (std::sin(theta / T(2)) != T(1))
      return std::cos((static_cast<T>(n) + T(0.5)) * theta) / std::cos(theta / T(2));
    return n % 2 == 0 ? odd : -odd;
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y - T(1);
  return chebyshev_recurrence(y + y, T(1), y + y - T(1), n);
}
template <class T>
inline T chebyshev_w(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  const T odd = static_cast<T>(n + n + 1);
  if (shifted ? x == T(1) : (std::fabs(y) == T(1) && y > T(0))) return odd;
  if (shifted ? x == T(0) : std::fabs(y) == T(1)) return n % 2 == 0 ? T(1) : T(-1);
  if (n > (shifted ? 4 : 8) && std::fabs(y) < T(1)) {
    const T theta = std::acos(y);
    if (std::cos(theta / T(2)) != T(1))
      return std::sin((static_cast<T>(n) + T(0.5)) * theta) / std::sin(theta / T(2));
    if (!shifted && y > T(0)) return odd;
    return n % 2 == 0 ? T(1) : T(-1);
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y + T(1);
  return chebyshev_recurrence(y + y, T(1), y + y + T(1), n);
}
// Hermite: NaN past degree 128 (float) or 512 (double), as torch.
template <class T>
inline T hermite_h(T x, int64_t n) {
  if (n < 0) return T(0);
  if (n == 0) return T(1);
  if (n == 1) return x + x;
  if (n > (sizeof(T) == 4 ? 128 : 512)) return std::numeric_limits<T>::quiet_NaN();
  T p = T(1), q = x + x, r = T(0);
  for (int64_t k = 2; k < n + n; k += 2) {
    r = (x + x) * q - static_cast<T>(k) * p;
    p = q;
    q = r;
  }
  return r;
}
template <class T>
inline T hermite_he(T x, int64_t n) {
  if (n < 0) return T(0);
  if (n == 0) return T(1);
  if (n == 1) return x;
  if (n > (sizeof(T) == 4 ? 128 : 512)) return std::numeric_limits<T>::quiet_NaN();
  T p = T(1), q = x, r = T(0);
  for (int64_t k = 1; k < n; ++k) {
    r = x * q - static_cast<T>(k) * p;
    p = q;
    q = r;
  }
  return r;
}
template <class T>
inline T laguerre_l(T x, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(x) == T(0)) return T(1);
  if (n == 0) return T(1);
  if (n == 1) return T(1) - x;
  T p = T(1), q = T(1) - x, r = q;
  for (int64_t k = 1; k < n && !std::isnan(q); ++k) {
    r = ((static_cast<T>(k + k) + (T(1) - x)) * q - static_cast<T>(k) * p) / static_cast<T>(k + 1);
    p = q;
    q = r;
  }
  return r;
}
template <class T>
inline T legendre_p(T x, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(x) == T(1)) return (x > T(0) || n % 2 == 0) ? T(1) : T(-1);
  if (n == 0) return T(1);
  if (n == 1) return x;
  T p = T(1), q = x, r = x;
  for (int64_t k = 1; k < n && !std::isnan(q); ++k) {
    r = (static_cast<T>(k + k + 1) * x * q - static_cast<T>(k) * p) / static_cast<T>(k + 1);
    p = q;
    q = r;
  }
  return r;
}

// The argument of the shifted Chebyshev polynomials: 2x - 1.
template <class T>
inline T shifted(T x) {
  return x + x - T(1);
}

EMBER_RT_AS_TORCH_END
}  // namespace special_detail
}  // namespace ember_rt
