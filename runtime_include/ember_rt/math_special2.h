// Special functions of torch.special for float, vf and double: the modified Bessel functions
// i0 i0e i1 i1e k0 k1 (and the scaled k0 k1), the Bessel functions j0 j1 y0 y1, the spherical
// Bessel function j0, airy_ai, erfcx, log_ndtr, ndtri, the Hurwitz zeta function, the
// regularized incomplete gamma functions igamma / igammac, nextafter, and the orthogonal
// polynomials (Chebyshev T U V W and their shifted forms, Hermite H and He, Laguerre L,
// Legendre P) of a degree n given as a float. This header holds every entry point and the
// double versions of the rest; the Bessel functions and airy_ai are computed in
// math_bessel.h, the polynomials in math_polynomials.h (each with its notes).
//
// All are lane-wise loops (cost class Lanewise in ember/ir/scalar_ops.h). Except for nextafter and
// the polynomials, the float and vf versions evaluate the double version and round once, so
// their error is 0.5 ulp plus the double version's. The double versions follow the algorithms of
// torch's CPU kernels, which are those of the Cephes Math Library (Chebyshev expansions and
// rational approximations; S. L. Moshier) and SciPy's incomplete gamma functions (series,
// continued fraction and Temme's uniform asymptotic expansion), with the same coefficients and
// special values, so that they agree with torch's float64 results to a few ulps:
//   erfcx      e^{x^2} erfc(x) with x^2 split exactly (hi + lo) below 12, the asymptotic series
//              above; 2 e^{x^2} - erfcx(-x) for x < 0 (+inf below -26.7).
//   log_ndtr   log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1, log1p(-erfc(x / sqrt 2) / 2) above.
//   ndtri      the Abramowitz-Stegun 26.2.23 first guess (error < 4.5e-4), then three Halley steps
//              on ndtr written with erfc (no cancellation in the lower tail); -inf at 0, +inf at
//              1, NaN outside [0, 1].
//   zeta(x, q) the Hurwitz zeta function: direct sum, then the Euler-Maclaurin tail; +inf at x =
//              1 and at q a non-positive integer, NaN for x < 1 and for q < 0 with x not an
//              integer.
//   igamma(a, x), igammac(a, x)   P(a, x) and Q(a, x) = 1 - P: NaN for a < 0 or x < 0,
//              P(0, x > 0) = 1, P(a, 0) = 0, NaN at a = inf = x. The asymptotic series takes pi
//              rounded to float, as torch's does (1e-9 relative in float64).
//   nextafter  the C library's, in the operands' own precision.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "lazy.h"
#include "math_bessel.h"
#include "math_polynomials.h"
#include "math_special.h"
#include "math_special_base.h"

namespace ember_rt {
namespace special_detail {
EMBER_RT_AS_TORCH_BEGIN

// pi rounded to float, where torch's incomplete gamma uses it (its float64 results differ from
// the exact pi's by 1e-9 relative).
constexpr double kPiFloat = static_cast<double>(3.14159265358979323846f);

// ---- erfcx, log_ndtr, ndtri -------------------------------------------------------------------

// e^{x^2} erfc(x): x^2 = hi + lo exactly, e^hi e^lo erfc(x) below 12 (erfc(12) = 1.4e-64 and
// e^144 are far inside double's range); above, the asymptotic series
// 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k, whose 13th term is below 1e-18.
EMBER_RT_LAZY
inline double erfcx_positive(double x) {
  if (x < 12.0) {
    const double hi = x * x;
    const double lo = std::fma(x, x, -hi);
    return std::exp(hi) * std::exp(lo) * std::erfc(x);
  }
  const double w = 1.0 / (2.0 * x * x);
  double term = 1.0, sum = 1.0;
  for (int k = 1; k <= 12; ++k) {
    term *= -(2.0 * k - 1.0) * w;
    sum += term;
  }
  return sum * kInvSqrtPi / x;
}
EMBER_RT_LAZY
inline double erfcx(double x) {
  if (x != x) return x;
  if (x >= 0.0) return erfcx_positive(x);
  if (x < -26.7) return kInf;
  const double hi = x * x;
  const double lo = std::fma(x, x, -hi);
  return 2.0 * (std::exp(hi) * std::exp(lo)) - erfcx_positive(-x);
}
constexpr double kSqrtHalf = 0.70710678118654752440;
EMBER_RT_LAZY
inline double log_ndtr(double x) {
  const double t = x * kSqrtHalf;
  if (x < -1.0) return std::log(erfcx(-t) / 2.0) - t * t;
  return std::log1p(-std::erfc(t) / 2.0);
}
EMBER_RT_LAZY
inline double ndtri(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return kNaN;
  if (p == 0.0) return -kInf;
  if (p == 1.0) return kInf;
  if (p == 0.5) return 0.0;
  const bool upper = p > 0.5;
  const double q = upper ? 1.0 - p : p;  // exact (Sterbenz)
  const double t = std::sqrt(-2.0 * std::log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  // Halley steps on ndtr(x) - q: ndtr' = phi, ndtr'' = -x phi. Near the middle ndtr(x) - q is
  // erf(x / sqrt 2) / 2 - (q - 1/2), both terms with full relative accuracy (q - 1/2 is exact).
  for (int i = 0; i < 3; ++i) {
    const double f =
        q >= 0.25 ? 0.5 * std::erf(x * kSqrtHalf) - (q - 0.5) : 0.5 * std::erfc(-x * kSqrtHalf) - q;
    const double u = f / (std::exp(-0.5 * x * x) * (kInvSqrtPi * kSqrtHalf));
    x -= u / (1.0 + 0.5 * x * u);
  }
  return upper ? -x : x;
}

// ---- Hurwitz zeta
// --------------------------------------------------------------------------------

// zeta(x, q) = sum_k (q + k)^-x for x > 1: the first N terms directly, then the
// Euler-Maclaurin remainder at w = q + N >= 10:
//   w^(1-x) / (x - 1) + w^-x / 2 + sum_j B_2j / (2j)! x (x + 1) ... (x + 2j - 2) w^(-x-2j+1).
// torch's values: inf at x = 1 and at the poles q = 0, -1, ...; NaN for x < 1 and for a
// negative q with a fractional x (q^-x is not real).
EMBER_RT_LAZY
inline double zeta(double x, double q) {
  // B_2j / (2j)! for j = 1 .. 12.
  constexpr double kB[] = {1.0 / 12.0,
                           -1.0 / 720.0,
                           1.0 / 30240.0,
                           -1.0 / 1209600.0,
                           1.0 / 47900160.0,
                           -691.0 / 1307674368000.0,
                           1.0 / 74724249600.0,
                           -3617.0 / 10670622842880000.0,
                           43867.0 / 5109094217170944000.0,
                           -174611.0 / 802857662698291200000.0,
                           77683.0 / 14101100039391805440000.0,
                           -236364091.0 / 1693824136731743669452800000.0};
  if (x == 1.0) return kInf;  // NaN operands give NaN below, except at the poles (as torch)
  if (x < 1.0) return kNaN;
  if (q <= 0.0) {
    if (q == std::floor(q)) return kInf;
    if (x != std::floor(x)) return kNaN;
  }
  // x = inf: q^-x alone decides (inf below 1, 1 at 1); torch gives NaN above 1.
  if (std::isinf(x)) return q < 1.0 ? kInf : (q == 1.0 ? 1.0 : kNaN);
  double sum = 0.0, w = q;
  for (int k = 0; k < 9 || w < 10.0; ++k) {
    sum += std::pow(w, -x);
    w += 1.0;
  }
  const double wx = std::pow(w, -x);
  if (wx == 0.0 && std::isfinite(w)) return sum;  // the remainder underflows (x = inf too)
  sum += w * wx / (x - 1.0) + 0.5 * wx;
  double rising = x, power = wx / w;  // x (x + 1) ... (x + 2j - 2), w^(-x-2j+1)
  for (int j = 0; j < 12; ++j) {
    const double t = kB[j] * rising * power;
    sum += t;
    if (std::fabs(t) < std::fabs(sum) * 1e-17) break;
    rising *= (x + 2 * j + 1) * (x + 2 * j + 2);
    power /= w * w;
  }
  return sum;
}

// ---- regularized incomplete gamma functions --------------------------------------------------

// P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P for a, x > 0 (finite). Below x = a + 1, P by
// its power series x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)); above, Q by
// Legendre's continued fraction x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a
// - ...)), evaluated with the modified Lentz method. The other one is 1 minus it, where it is
// not close to 1 (so no digits cancel). The prefactor is exp(a log x - x - lgamma(a)): its
// exponent loses about log10(a) digits to cancellation for large a, within 1e-9 relative up
// to a = 1e6.
EMBER_RT_LAZY
inline double incgamma_prefactor(double a, double x) {
  // x^a e^-x / Gamma(a): as a product where no factor overflows or underflows (each factor
  // is rounded once), else through logarithms (whose exponent loses ~log10(a log x) digits).
  if (a < 170.0) {
    const double r = std::pow(x, a) * std::exp(-x) / std::tgamma(a);
    if (std::isnormal(r) && std::isfinite(std::pow(x, a))) return r;
  }
  return std::exp(a * std::log(x) - x - ember_rt::lgamma(a));
}
EMBER_RT_LAZY
inline double incgamma_series(double a, double x) {  // P(a, x), x < a + 1
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-17) break;
  }
  return sum * incgamma_prefactor(a, x);
}
EMBER_RT_LAZY
inline double incgamma_fraction(double a, double x) {  // Q(a, x), x >= a + 1
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int n = 1; n < 100000; ++n) {
    const double an = -n * (n - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1.0) < 1e-16) break;
  }
  return h * incgamma_prefactor(a, x);
}
// log Gamma(1 + a) for |a| < 0.1: -gamma a + sum_k>=2 (-1)^k zeta(k) a^k / k (to a^13).
EMBER_RT_LAZY
inline double lgamma1p_small(double a) {
  constexpr double kZeta[] = {1.6449340668482264, 1.2020569031595943, 1.0823232337111382,
                              1.0369277551433699, 1.0173430619844491, 1.0083492773819228,
                              1.0040773561979443, 1.0020083928260822, 1.0009945751278181,
                              1.0004941886041195, 1.0002460865533080, 1.0001227133475785};
  constexpr double kEulerGamma = 0.57721566490153286061;
  double sum = 0.0, power = a;
  for (int k = 2; k <= 13; ++k) {
    power *= -a;
    sum += kZeta[k - 2] * power / k;
  }
  return -kEulerGamma * a + sum;
}
// Q(a, x) for a < 1 and x < a + 1, where P is close to 1 and 1 - P would cancel: with
// P = x^a / Gamma(a + 1) (1 + a s), s = sum_n>=1 (-x)^n / (n! (a + n)),
//   Q = -expm1(l) - e^l a s,  l = a log x - log Gamma(1 + a).
EMBER_RT_LAZY
inline double incgamma_small_a(double a, double x) {
  double term = 1.0, s = 0.0;
  for (int n = 1; n < 500; ++n) {
    term *= -x / n;
    const double t = term / (a + n);
    s += t;
    if (std::fabs(t) <= std::fabs(s) * 1e-17) break;
  }
  const double lg = a < 0.1 ? lgamma1p_small(a) : ember_rt::lgamma(1.0 + a);
  const double l = a * std::log(x) - lg;
  return -std::expm1(l) - std::exp(l) * a * s;
}
// P(a, x) in the same terms: e^l (1 + a s), which stays <= 1 where P is nearly 1.
EMBER_RT_LAZY
inline double incgamma_small_a_p(double a, double x) {
  double term = 1.0, s = 0.0;
  for (int n = 1; n < 500; ++n) {
    term *= -x / n;
    const double t = term / (a + n);
    s += t;
    if (std::fabs(t) <= std::fabs(s) * 1e-17) break;
  }
  const double lg = a < 0.1 ? lgamma1p_small(a) : ember_rt::lgamma(1.0 + a);
  return std::exp(a * std::log(x) - lg) * (1.0 + a * s);
}
// For large a with x near a, Temme's uniform expansion (DLMF 8.12): with lambda = x / a,
// mu = lambda - 1 and eta = sign(mu) sqrt(2 (mu - log(1 + mu))),
//   Q(a, x) = erfc(eta sqrt(a / 2)) / 2 + e^(-a eta^2 / 2) / sqrt(2 pi a) (c0 + c1 / a),
// c0 = 1 / mu - 1 / eta and c1 = 1 / eta^3 - 1 / mu^3 - 1 / mu^2 - 1 / (12 mu), by their
// Taylor series in eta near 0 where those differences cancel. Its error is O(a^-5/2): below
// 1e-12 relative from a = 1e4, where the series and the fraction need ~1000 terms.
EMBER_RT_LAZY
inline double incgamma_uniform(double a, double x) {  // Q(a, x)
  const double mu = (x - a) / a;
  const double eta = std::copysign(std::sqrt(2.0 * (mu - std::log1p(mu))), mu);
  double c0, c1;
  if (std::fabs(eta) < 0.05) {
    c0 = -1.0 / 3.0 + eta / 12.0 - 2.0 * eta * eta / 135.0 + eta * eta * eta / 864.0;
    c1 = -1.0 / 540.0 - eta / 288.0 + 25.0 * eta * eta / 6048.0;
  } else {
    c0 = 1.0 / mu - 1.0 / eta;
    c1 = 1.0 / (eta * eta * eta) - 1.0 / (mu * mu * mu) - 1.0 / (mu * mu) - 1.0 / (12.0 * mu);
  }
  constexpr double kTwoPi = 6.283185307179586476925;
  return 0.5 * std::erfc(eta * std::sqrt(0.5 * a)) +
         std::exp(-0.5 * a * eta * eta) / std::sqrt(kTwoPi * a) * (c0 + c1 / a);
}
EMBER_RT_LAZY
inline bool incgamma_uniform_fits(double a, double x) {
  return a >= 1e4 && std::fabs(x - a) < 0.3 * a;
}
// torch's values at the edges of the domain, in the order it tests them (so a NaN operand
// may still give a number): NaN for a negative operand; at a = 0, P = 1 for x > 0 (else
// NaN); P = 0 at x = 0; at a = inf, P = 0 (NaN if x = inf too); P = 1 at x = inf.
EMBER_RT_LAZY
inline bool incgamma_edge(double a, double x, double* p) {
  if (x < 0.0 || a < 0.0) return *p = kNaN, true;
  if (a == 0.0) return *p = x > 0.0 ? 1.0 : kNaN, true;
  if (x == 0.0) return *p = 0.0, true;
  if (std::isinf(a)) return *p = std::isinf(x) ? kNaN : 0.0, true;
  if (std::isinf(x)) return *p = 1.0, true;
  if (std::isnan(a) || std::isnan(x)) return *p = kNaN, true;
  return false;
}
EMBER_RT_LAZY
inline double igamma(double a, double x) {
  double p;
  if (incgamma_edge(a, x, &p)) return p;
  if (incgamma_uniform_fits(a, x)) return 1.0 - incgamma_uniform(a, x);
  if (x >= a + 1.0) return 1.0 - incgamma_fraction(a, x);
  return a < 1.0 ? incgamma_small_a_p(a, x) : incgamma_series(a, x);
}
EMBER_RT_LAZY
inline double igammac(double a, double x) {
  double p;
  if (incgamma_edge(a, x, &p)) return std::isnan(p) ? p : 1.0 - p;
  if (incgamma_uniform_fits(a, x)) return incgamma_uniform(a, x);
  if (x >= a + 1.0) return incgamma_fraction(a, x);
  return a < 1.0 ? incgamma_small_a(a, x) : 1.0 - incgamma_series(a, x);
}

EMBER_RT_AS_TORCH_END
}  // namespace special_detail

// ---- double versions
// -----------------------------------------------------------------------------

#define EMBER_RT_SPECIAL2_DOUBLE(name, expr) \
  EMBER_RT_LAZY inline double name(double x) { return special_detail::expr; }
EMBER_RT_SPECIAL2_DOUBLE(i0, i0(x))
EMBER_RT_SPECIAL2_DOUBLE(i0e, i0e(x))
EMBER_RT_SPECIAL2_DOUBLE(i1, i1(x))
EMBER_RT_SPECIAL2_DOUBLE(i1e, i1e(x))
EMBER_RT_SPECIAL2_DOUBLE(modified_bessel_k0, k0(x, false))
EMBER_RT_SPECIAL2_DOUBLE(modified_bessel_k1, k1(x, false))
EMBER_RT_SPECIAL2_DOUBLE(scaled_modified_bessel_k0, k0(x, true))
EMBER_RT_SPECIAL2_DOUBLE(scaled_modified_bessel_k1, k1(x, true))
EMBER_RT_SPECIAL2_DOUBLE(bessel_j0, bessel_j0(x))
EMBER_RT_SPECIAL2_DOUBLE(bessel_j1, bessel_j1(x))
EMBER_RT_SPECIAL2_DOUBLE(bessel_y0, bessel_y0(x))
EMBER_RT_SPECIAL2_DOUBLE(bessel_y1, bessel_y1(x))
EMBER_RT_SPECIAL2_DOUBLE(spherical_bessel_j0, spherical_bessel_j0(x))
EMBER_RT_SPECIAL2_DOUBLE(airy_ai, airy_ai(x))
EMBER_RT_SPECIAL2_DOUBLE(erfcx, erfcx(x))
EMBER_RT_SPECIAL2_DOUBLE(log_ndtr, log_ndtr(x))
EMBER_RT_SPECIAL2_DOUBLE(ndtri, ndtri(x))
#undef EMBER_RT_SPECIAL2_DOUBLE

EMBER_RT_LAZY
inline double zeta(double x, double q) { return special_detail::zeta(x, q); }
EMBER_RT_LAZY
inline double igamma(double a, double x) { return special_detail::igamma(a, x); }
EMBER_RT_LAZY
inline double igammac(double a, double x) { return special_detail::igammac(a, x); }
EMBER_RT_LAZY
inline double nextafter(double a, double b) { return std::nextafter(a, b); }

// The polynomials in T = float or double (torch evaluates them in the operands' dtype).
#define EMBER_RT_POLYNOMIAL(name, expr) \
  namespace special_detail {            \
  template <class T>                    \
  inline T name##_t(T x, T n_float) {   \
    const int64_t n = degree(n_float);  \
    return expr;                        \
  }                                     \
  }                                     \
  EMBER_RT_LAZY inline double name(double x, double n) { return special_detail::name##_t(x, n); }
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_t, chebyshev_t(x, n, false, x))
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_u, chebyshev_u(x, n, false, x))
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_v, chebyshev_v(x, n, false, x))
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_w, chebyshev_w(x, n, false, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_t, chebyshev_t(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_u, chebyshev_u(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_v, chebyshev_v(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_w, chebyshev_w(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(hermite_polynomial_h, hermite_h(x, n))
EMBER_RT_POLYNOMIAL(hermite_polynomial_he, hermite_he(x, n))
EMBER_RT_POLYNOMIAL(laguerre_polynomial_l, laguerre_l(x, n))
EMBER_RT_POLYNOMIAL(legendre_polynomial_p, legendre_p(x, n))
#undef EMBER_RT_POLYNOMIAL

// ---- float and vf entry points
// -------------------------------------------------------------------

inline namespace EMBER_RT_ISA_NS {

// Through the double version, rounded once.
#define EMBER_RT_SPECIAL2_UNARY(name)                                  \
  EMBER_RT_LAZY inline float name(float x) {                           \
    return static_cast<float>(ember_rt::name(static_cast<double>(x))); \
  }                                                                    \
  EMBER_RT_LAZY inline vf name(vf x) {                                 \
    return detail::map_lanes(x, [](float v) { return name(v); });      \
  }
EMBER_RT_SPECIAL2_UNARY(i0)
EMBER_RT_SPECIAL2_UNARY(i0e)
EMBER_RT_SPECIAL2_UNARY(i1)
EMBER_RT_SPECIAL2_UNARY(i1e)
EMBER_RT_SPECIAL2_UNARY(modified_bessel_k0)
EMBER_RT_SPECIAL2_UNARY(modified_bessel_k1)
EMBER_RT_SPECIAL2_UNARY(scaled_modified_bessel_k0)
EMBER_RT_SPECIAL2_UNARY(scaled_modified_bessel_k1)
EMBER_RT_SPECIAL2_UNARY(bessel_j0)
EMBER_RT_SPECIAL2_UNARY(bessel_j1)
EMBER_RT_SPECIAL2_UNARY(bessel_y0)
EMBER_RT_SPECIAL2_UNARY(bessel_y1)
EMBER_RT_SPECIAL2_UNARY(spherical_bessel_j0)
EMBER_RT_SPECIAL2_UNARY(airy_ai)
EMBER_RT_SPECIAL2_UNARY(erfcx)
EMBER_RT_SPECIAL2_UNARY(log_ndtr)
EMBER_RT_SPECIAL2_UNARY(ndtri)
#undef EMBER_RT_SPECIAL2_UNARY

#define EMBER_RT_SPECIAL2_BINARY(name, float_expr)                               \
  EMBER_RT_LAZY inline float name(float a, float b) { return float_expr; }       \
  EMBER_RT_LAZY inline vf name(vf a, vf b) {                                     \
    return detail::map_lanes(a, b, [](float x, float y) { return name(x, y); }); \
  }
#define EMBER_RT_THROUGH_DOUBLE(name) \
  static_cast<float>(ember_rt::name(static_cast<double>(a), static_cast<double>(b)))
EMBER_RT_SPECIAL2_BINARY(zeta, EMBER_RT_THROUGH_DOUBLE(zeta))
EMBER_RT_SPECIAL2_BINARY(igamma, EMBER_RT_THROUGH_DOUBLE(igamma))
EMBER_RT_SPECIAL2_BINARY(igammac, EMBER_RT_THROUGH_DOUBLE(igammac))
EMBER_RT_SPECIAL2_BINARY(nextafter, std::nextafter(a, b))
#undef EMBER_RT_THROUGH_DOUBLE
#define EMBER_RT_POLYNOMIAL_FLOAT(name) \
  EMBER_RT_SPECIAL2_BINARY(name, special_detail::name##_t<float>(a, b))
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_t)
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_u)
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_v)
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_w)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_t)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_u)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_v)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_w)
EMBER_RT_POLYNOMIAL_FLOAT(hermite_polynomial_h)
EMBER_RT_POLYNOMIAL_FLOAT(hermite_polynomial_he)
EMBER_RT_POLYNOMIAL_FLOAT(laguerre_polynomial_l)
EMBER_RT_POLYNOMIAL_FLOAT(legendre_polynomial_p)
#undef EMBER_RT_POLYNOMIAL_FLOAT
#undef EMBER_RT_SPECIAL2_BINARY

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
