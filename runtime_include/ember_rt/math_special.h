// Exponential / logarithm family, special functions and activation scalars for float, vf and
// double: log1p expm1 log2 log10 exp2 erfc sign trunc frac softplus mish logsigmoid selu,
// the predicates isnan isinf isfinite, copysign fmod pymod, and erfinv lgamma digamma ndtr.
//
// float and vf share one template per function (as in math.h), so every vector lane equals the
// scalar float result bit for bit; the double versions (namespace ember_rt) use <cmath>.
// Accuracy: the worst float error against double-precision references, in ulp of the exact
// result, over every 11th float of either sign (with FMA; the portable build without FMA,
// every 29th float, in parentheses):
//   log1p      u = 1 + x with its exact rounding error d (Fast2Sum): ln u + d / u.
//              1.44 (1.44) ulp.
//   expm1      x = n ln2 + r: 2^n (e^r - 1) + (2^n - 1), e^r - 1 = r + r^2 q(r) (Taylor);
//              e^x past n = 24. 1.42 (1.43) ulp.
//   log2       e + ln m / ln 2 (math.h's reduction); exact at powers of 2. 1.51 (1.82) ulp.
//   log10      e log10(2) + ln m / ln 10, both constants split in two parts; exact at 10^k
//              for k = 0..10. 1.60 (1.95) ulp.
//   exp2       2^n e^{r ln 2}, n = round(x); exact at integers. 0.92 (1.22) ulp.
//   erfc       1 - x erf_small_ratio(x^2) below |x| = 1/2; above, erfcx(a) e^{-a^2}
//              (erfc_large: its own fit, math.h's erfc_tail reaches 7 ulp), scaled by 2^n
//              last, so the tail keeps its relative accuracy down to the subnormals
//              (erfc(10) = 1.4e-45, as torch). 3.19 (3.24) ulp.
//   sign trunc frac isnan isinf isfinite copysign   exact (trunc through floor / ceil).
//   softplus   torch's beta = 1, threshold = 20: x > 20 ? x : log1p(exp(x)).
//              1.97 (1.97) ulp.
//   logsigmoid min(x, 0) - log1p(exp(-|x|)). 1.97 (1.97) ulp.
//   mish       x tanh(log1p(e^x)) = x n / (n + 2), n = e^x (e^x + 2) from e^x as an unrounded
//              pair; below -9 x e^x (1 - e^x / 2), scaled by 2^n last so subnormal results round
//              once; x above 20 gives x. 3.12 (3.26) ulp.
//   selu       torch's constants: scale x, or scale alpha expm1(x) for x <= 0.
//              1.72 (1.84) ulp.
//   fmod       C fmod (exact; torch.fmod), pymod torch.remainder on floats: r = fmod(a, b),
//              plus b when r != 0 and r, b differ in sign (the result has b's sign). Both are
//              lane-wise loops over std::fmod: exact everywhere, not vectorized.
//   erfinv lgamma digamma ndtr   lane-wise through the double versions, rounded once to float:
//              erfinv: Giles' rational first guess, then three Halley steps on erf (on erfc
//              above 1/2); lgamma: the C library's; digamma: recurrence up to x >= 10, the
//              asymptotic series, and the reflection formula below 0. 0.50 ulp from the double
//              versions, which the test checks against 30-digit values (torch is less
//              accurate here: its float digamma(1) is 4 ulp off).
// Special values follow torch's float32 CPU results: sign(NaN) = sign(+-0) = +0; frac(+-inf)
// = NaN; erfinv(+-1) = +-inf, erfinv(|x| > 1) = NaN; lgamma is +inf at 0, the negative
// integers and -inf; digamma(+0) = -inf, digamma(-0) = +inf, NaN at the negative integers and
// -inf; remainder(x, 0) = NaN, remainder(1, -inf) = -inf. One difference: torch's log1p returns
// 0 for the smallest subnormals (+-1.4e-45), these return x.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "lazy.h"
#include "math.h"

namespace ember_rt {

// ---- double versions ---------------------------------------------------------------------

EMBER_RT_LAZY
inline double log1p(double x) { return std::log1p(x); }
EMBER_RT_LAZY
inline double expm1(double x) { return std::expm1(x); }
EMBER_RT_LAZY
inline double log2(double x) { return std::log2(x); }
EMBER_RT_LAZY
inline double log10(double x) { return std::log10(x); }
EMBER_RT_LAZY
inline double exp2(double x) { return std::exp2(x); }
EMBER_RT_LAZY
inline double erfc(double x) { return std::erfc(x); }
EMBER_RT_LAZY
inline double sign(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0); }
EMBER_RT_LAZY
inline double trunc(double x) { return std::trunc(x); }
EMBER_RT_LAZY
inline double frac(double x) { return x - std::trunc(x); }
EMBER_RT_LAZY
inline double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
EMBER_RT_LAZY
inline double mish(double x) { return x * std::tanh(std::log1p(std::exp(x))); }
EMBER_RT_LAZY
inline double logsigmoid(double x) {
  return (x < 0.0 ? x : 0.0) - std::log1p(std::exp(-std::fabs(x)));  // NaN: 0 - NaN
}
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
EMBER_RT_LAZY
inline double selu(double x) {
  return x > 0.0 ? kSeluScale * x : kSeluScale * kSeluAlpha * std::expm1(x);
}
EMBER_RT_LAZY
inline bool isnan(double x) { return x != x; }
EMBER_RT_LAZY
inline bool isinf(double x) { return std::fabs(x) == std::numeric_limits<double>::infinity(); }
EMBER_RT_LAZY
inline bool isfinite(double x) { return std::fabs(x) < std::numeric_limits<double>::infinity(); }
EMBER_RT_LAZY
inline double copysign(double a, double b) { return std::copysign(a, b); }
EMBER_RT_LAZY
inline double fmod(double a, double b) { return std::fmod(a, b); }
EMBER_RT_LAZY
inline double pymod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
  return r;
}

EMBER_RT_LAZY
inline double lgamma(double x) {
#if defined(__GLIBC__) && defined(__USE_MISC)
  int sign_of_gamma;
  return ::lgamma_r(x, &sign_of_gamma);  // std::lgamma writes the global signgam: a data race
#else
  return std::lgamma(x);
#endif
}

// The standard normal CDF, through erfc (no cancellation for x < 0). The float versions round
// this once: 0.5 ulp.
EMBER_RT_LAZY
inline double ndtr(double x) { return 0.5 * std::erfc(x * -0.70710678118654752440); }
EMBER_RT_LAZY
inline double digamma(double x) {
  constexpr double kPi = 3.14159265358979323846;
  if (x == 0.0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (x < 0.0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();  // and -inf
    // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x), tan taken of the fractional part.
    double whole;
    const double r = std::modf(x, &whole);
    return digamma(1.0 - x) - kPi / std::tan(kPi * r);
  }
  if (!(x < std::numeric_limits<double>::infinity())) return x;  // NaN, +inf
  double acc = 0.0;
  for (; x < 10.0; x += 1.0) acc -= 1.0 / x;  // psi(x) = psi(x + 1) - 1 / x
  // psi(x) ~ ln x - 1/(2x) - sum B_2k / (2k x^2k); the first omitted term is below 1e-17.
  const double z = 1.0 / (x * x);
  double s = -1.0 / 12.0;
  for (double c : {691.0 / 32760.0, -1.0 / 132.0, 1.0 / 240.0, -1.0 / 252.0, 1.0 / 120.0})
    s = c + z * s;
  s = -1.0 / 12.0 + z * s;
  return acc + (std::log(x) - 0.5 / x + z * s);
}

EMBER_RT_LAZY
inline double erfinv(double x) {
  const double a = std::fabs(x);
  if (!(a <= 1.0)) return std::numeric_limits<double>::quiet_NaN();  // |x| > 1, NaN
  if (a == 1.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  if (a == 0.0) return x;
  // First guess: M. Giles' single-precision approximation ("Approximating the erfinv
  // function", 2010), relative error ~4e-7.
  const double w0 = -std::log((1.0 - a) * (1.0 + a));
  double w = w0;
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  double y = p * a;
  if (w0 > 16.0) {
    // Past float's range (1 - a < 2^-24), where the fit above is no longer a good first guess:
    // erfc(y) ~ e^{-y^2} / (y sqrt(pi)) = 1 - a, solved by one fixed-point step.
    const double l = -std::log(1.0 - a);
    y = std::sqrt(l - std::log(std::sqrt(l) * 1.77245385090551602730));
  }
  // Halley steps on f(y) = erf(y) - a (cubic convergence); above 1/2 written with erfc, where
  // 1 - a is exact and erf(y) - a would cancel.
  for (int i = 0; i < 3; ++i) {
    const double f = a > 0.5 ? (1.0 - a) - std::erfc(y) : std::erf(y) - a;
    const double u = f / (1.12837916709551257390 * std::exp(-y * y));  // f / f'
    y -= u / (1.0 + y * u);
  }
  return std::copysign(y, x);
}

inline namespace EMBER_RT_ISA_NS {

// ---- bit-level helpers that vec.h does not have --------------------------------------------

#if defined(EMBER_RT_AVX512)
EMBER_RT_LAZY
inline vf copysign(vf a, vf b) {
  const __m512i mag = _mm512_and_si512(_mm512_castps_si512(a.v), _mm512_set1_epi32(0x7fffffff));
  const __m512i sgn =
      _mm512_and_si512(_mm512_castps_si512(b.v), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return vf(_mm512_castsi512_ps(_mm512_or_si512(mag, sgn)));
}
#elif defined(EMBER_RT_AVX2)
EMBER_RT_LAZY
inline vf copysign(vf a, vf b) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  return vf(_mm256_or_ps(_mm256_andnot_ps(sign_bit, a.v), _mm256_and_ps(sign_bit, b.v)));
}
#else
EMBER_RT_LAZY
inline vf copysign(vf a, vf b) { return vf(std::copysign(a.v, b.v)); }
#endif
EMBER_RT_LAZY
inline float copysign(float a, float b) { return std::copysign(a, b); }

namespace detail {

// f applied lane by lane, for the functions computed through their double versions.
template <class F>
inline vf map_lanes(vf x, F f) {
  float v[vf::width];
  x.store(v);
  for (float& e : v) e = f(e);
  return vf::load(v);
}
template <class F>
inline vf map_lanes(vf a, vf b, F f) {
  float va[vf::width], vb[vf::width];
  a.store(va);
  b.store(vb);
  for (int i = 0; i < vf::width; ++i) va[i] = f(va[i], vb[i]);
  return vf::load(va);
}

constexpr float kLn2 = 0.693147182f;            // ln 2 rounded to float
constexpr float kLn2Tail = -1.90465421e-09f;    // ln 2 - kLn2
constexpr float kInvLn2 = 1.44269502f;          // 1 / ln 2 rounded to float
constexpr float kInvLn2Tail = 1.92596303e-08f;  // 1 / ln 2 - kInvLn2
constexpr float kInvLn10 = 0.434294492f;        // 1 / ln 10 rounded to float
constexpr float kInvLn10Tail = -1.010305e-08f;  // 1 / ln 10 - kInvLn10
constexpr float kLog10Of2Hi = 0.301025391f;     // log10(2) to 16 bits: e * hi is exact
constexpr float kLog10Of2Lo = 4.60503907e-06f;  // log10(2) - kLog10Of2Hi

template <class V>
inline V trunc_t(V x) {
  return select(lt(x, V(0.0f)), ceil(x), floor(x));  // -0.5 -> -0, NaN -> NaN
}

template <class V>
inline V sign_t(V x) {
  return select(gt(x, V(0.0f)), V(1.0f), select(lt(x, V(0.0f)), V(-1.0f), V(0.0f)));
}

// 1 + x = u + d exactly (Fast2Sum, the operand of larger magnitude first; u - 1 is exact for
// x in [-1, 1]), so ln(1 + x) = ln u + ln(1 + d/u) ~ ln u + d / u.
template <class V>
inline V log1p_t(V x) {
  const V u = x + V(1.0f);
  const V d = select(gt(x, V(1.0f)), V(1.0f) - (u - x), x - (u - V(1.0f)));
  V y = log_t(u) + d / u;
  y = select(eq(u, V(0.0f)), V(-kInf), y);  // x = -1 (d / u = 0 / 0)
  y = select(eq(x, V(kInf)), x, y);         // (d = NaN)
  return select(eq(x, V(0.0f)), x, y);      // -0 stays -0
}

// e^r - 1 for |r| <= ln2 / 2: r + r^2 q(r), q Taylor to degree 6 (truncation error 6e-10).
template <class V>
inline V expm1_poly(V r) {
  V q(1.0f / 40320.0f);
  q = madd(q, r, V(1.0f / 5040.0f));
  q = madd(q, r, V(1.0f / 720.0f));
  q = madd(q, r, V(1.0f / 120.0f));
  q = madd(q, r, V(1.0f / 24.0f));
  q = madd(q, r, V(1.0f / 6.0f));
  q = madd(q, r, V(0.5f));
  return madd(r * r, q, r);
}

template <class V>
inline V expm1_t(V x) {
  // Clamp so 2^n stays representable (n in [-43, 128]); NaN becomes -30, restored below.
  // Below -30, e^x - 1 rounds to -1.
  const V xc = min_raw(max_raw(x, V(-30.0f)), V(89.0f));
  V n;
  const V em = expm1_poly(reduce_ln2(xc, n));  // e^r - 1
  const V two_n = exp2i(min_raw(n, V(127.0f)));
  // Past n = 24 the -1 is below half an ulp of 2^n e^r (and 2^n may overflow: scale_pow2).
  V y = select(gt(n, V(24.0f)), scale_pow2(em + V(1.0f), n), madd(em, two_n, two_n - V(1.0f)));
  y = select(eq(x, V(0.0f)), x, y);  // -0 stays -0
  return select(isnan(x), x, y);
}

template <class V>
inline V log2_t(V x) {
  V e;
  const V lnm = log_reduce(x, e);
  return log_specials(x, e + madd(lnm, V(kInvLn2), lnm * V(kInvLn2Tail)));
}

template <class V>
inline V log10_t(V x) {
  V e;
  const V lnm = log_reduce(x, e);
  const V low = madd(e, V(kLog10Of2Lo), madd(lnm, V(kInvLn10), lnm * V(kInvLn10Tail)));
  return log_specials(x, madd(e, V(kLog10Of2Hi), low));
}

template <class V>
inline V exp2_t(V x) {
  // n in [-160, 130]: beyond it the result is 0 or inf anyway. NaN becomes -160, restored.
  const V xc = min_raw(max_raw(x, V(-160.0f)), V(130.0f));
  const V n = round_small(xc);
  const V r = xc - n;  // exact, |r| <= 1/2
  const V t = madd(r, V(kLn2), r * V(kLn2Tail));
  return select(isnan(x), x, scale_pow2(exp_poly(t), n));
}

// erfc(a) e^{-a^2}... for a in [1/2, 10.5]: e^{-a^2} times erfcx(a) = erfc(a) e^{a^2}, which is
// P(a - 1) of degree 12 below a = 2 and Q(1/a) / a of degree 8 above (fitted for this file by
// least squares on Chebyshev nodes, coefficients rounded to float one at a time from the
// highest; relative error of the fits < 2e-8). a^2 = hi + lo is split exactly and
// e^{-hi-lo} = 2^n e^{r - lo} is scaled last, so the result keeps its relative accuracy down to
// the subnormals and rounds once there. (erfc_tail in math.h has a t = 1 / (1 + a 21/64) form
// whose rounding errors are amplified, up to 7 ulp here.)
template <class V>
inline V erfc_large(V a) {
  const V s = a - V(1.0f);  // exact
  V p(6.12332269e-06f);
  for (float c : {-3.89660017e-05f, 0.00013564706f, -0.000386849861f, 0.00105148752f,
                  -0.00276797777f, 0.00696966564f, -0.0166619588f, 0.0375723504f, -0.0792269632f,
                  0.15437156f, -0.273212016f, 0.427583575f})
    p = madd(p, s, V(c));
  const V u = V(1.0f) / a;
  V q(-0.310781926f);
  for (float c : {0.560885429f, -0.0482777171f, -0.66423732f, 0.62608093f, -0.0360321142f,
                  -0.278306693f, -0.000218111192f, 0.564194858f})
    q = madd(q, u, V(c));
  const V hi = a * a;
  V n;
  const V e = exp_poly(reduce_ln2(-hi, n) - square_error(a, hi));
  return scale_pow2(select(lt(a, V(2.0f)), p * e, q * e / a), n);
}

// erfc: 1 - x erf_small_ratio(x^2) below |x| = 1/2, erfc_large above (2 - it for x < 0).
template <class V>
inline V erfc_t(V x) {
  const V a = abs(x);
  const V tail = erfc_large(min_raw(max_raw(a, V(0.5f)), V(10.5f)));  // 0 in float from 10.06
  const V outer = select(lt(x, V(0.0f)), V(2.0f) - tail, tail);
  const V y = select(lt(a, V(0.5f)), madd(-x, erf_small_ratio(x * x), V(1.0f)), outer);
  return select(isnan(x), x, y);
}

template <class V>
inline V softplus_t(V x) {
  return select(gt(x, V(20.0f)), x, log1p_t(exp_t(x)));
}

template <class V>
inline V logsigmoid_t(V x) {
  return min(x, V(0.0f)) - log1p_t(exp_t(-abs(x)));
}

// e^x = 2^k (1 + em) with em = e^r - 1 (expm1_poly) carried as the pair hi = 2^k, lo = 2^k em,
// so that the rounding of e^x does not enter: x n / (n + 2) with n = e^x (e^x + 2)
// = hi (hi + 2) + lo (2 hi + 2 + lo) rounded once. Below -9, n / (n + 2) = e (1 - e/2 + e^3/4
// - ...) is e^x (1 - e^x / 2) to float precision: the result is x (1 + em) (1 - e/2) 2^k,
// scaled last so that a subnormal result is rounded once.
template <class V>
inline V mish_t(V x) {
  V k;
  const V em = expm1_poly(reduce_ln2(min_raw(max_raw(x, V(-120.0f)), V(20.0f)), k));
  const V hi = exp2i(max_raw(k, V(-20.0f)));  // (k >= -13 where mid is used)
  const V lo = hi * em;
  const V n = madd(lo, madd(hi, V(2.0f), V(2.0f)) + lo, hi * (hi + V(2.0f)));
  const V mid = x * (n / (n + V(2.0f)));
  const V xe = madd(x, em, x);  // x e^r
  const V half_e = V(0.5f) * scale_pow2(em + V(1.0f), k);
  const V tail = scale_pow2(madd(xe, -half_e, xe), k);
  const V y = select(gt(x, V(20.0f)), x, select(lt(x, V(-9.0f)), tail, mid));
  return select(lt(x, V(-120.0f)), x * V(0.0f), y);  // -0, and NaN for -inf (as torch)
}

template <class V>
inline V selu_t(V x) {
  return select(gt(x, V(0.0f)), V(static_cast<float>(kSeluScale)) * x,
                V(static_cast<float>(kSeluScale * kSeluAlpha)) * expm1_t(x));
}

}  // namespace detail

// ---- float and vf entry points -------------------------------------------------------------

#define EMBER_RT_SPECIAL_UNARY(name)                                       \
  EMBER_RT_LAZY inline float name(float x) { return detail::name##_t(x); } \
  EMBER_RT_LAZY inline vf name(vf x) { return detail::name##_t(x); }
EMBER_RT_SPECIAL_UNARY(log1p)
EMBER_RT_SPECIAL_UNARY(expm1)
EMBER_RT_SPECIAL_UNARY(log2)
EMBER_RT_SPECIAL_UNARY(log10)
EMBER_RT_SPECIAL_UNARY(exp2)
EMBER_RT_SPECIAL_UNARY(erfc)
EMBER_RT_SPECIAL_UNARY(sign)
EMBER_RT_SPECIAL_UNARY(trunc)
EMBER_RT_SPECIAL_UNARY(softplus)
EMBER_RT_SPECIAL_UNARY(mish)
EMBER_RT_SPECIAL_UNARY(logsigmoid)
EMBER_RT_SPECIAL_UNARY(selu)
#undef EMBER_RT_SPECIAL_UNARY

EMBER_RT_LAZY
inline float frac(float x) { return x - detail::trunc_t(x); }
EMBER_RT_LAZY
inline vf frac(vf x) { return x - detail::trunc_t(x); }

using detail::isnan;  // float -> bool, vf -> vm (vec.h)
EMBER_RT_LAZY
inline bool isinf(float x) { return std::fabs(x) == detail::kInf; }
EMBER_RT_LAZY
inline vm isinf(vf x) { return eq(abs(x), vf(detail::kInf)); }
EMBER_RT_LAZY
inline bool isfinite(float x) { return std::fabs(x) < detail::kInf; }
EMBER_RT_LAZY
inline vm isfinite(vf x) { return lt(abs(x), vf(detail::kInf)); }

EMBER_RT_LAZY
inline float fmod(float a, float b) { return std::fmod(a, b); }
EMBER_RT_LAZY
inline vf fmod(vf a, vf b) {
  return detail::map_lanes(a, b, [](float x, float y) { return std::fmod(x, y); });
}
EMBER_RT_LAZY
inline float pymod(float a, float b) {
  float r = std::fmod(a, b);
  if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b;
  return r;
}
EMBER_RT_LAZY
inline vf pymod(vf a, vf b) {
  return detail::map_lanes(a, b, [](float x, float y) { return pymod(x, y); });
}

EMBER_RT_LAZY
inline float erfinv(float x) {
  return static_cast<float>(ember_rt::erfinv(static_cast<double>(x)));
}
EMBER_RT_LAZY
inline vf erfinv(vf x) {
  return detail::map_lanes(x, [](float v) { return erfinv(v); });
}
EMBER_RT_LAZY
inline float lgamma(float x) {
  return static_cast<float>(ember_rt::lgamma(static_cast<double>(x)));
}
EMBER_RT_LAZY
inline vf lgamma(vf x) {
  return detail::map_lanes(x, [](float v) { return lgamma(v); });
}
EMBER_RT_LAZY
inline float digamma(float x) {
  return static_cast<float>(ember_rt::digamma(static_cast<double>(x)));
}
EMBER_RT_LAZY
inline vf digamma(vf x) {
  return detail::map_lanes(x, [](float v) { return digamma(v); });
}
EMBER_RT_LAZY
inline float ndtr(float x) { return static_cast<float>(ember_rt::ndtr(static_cast<double>(x))); }
EMBER_RT_LAZY
inline vf ndtr(vf x) {
  return detail::map_lanes(x, [](float v) { return ndtr(v); });
}

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
