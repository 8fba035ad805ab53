// Transcendental functions for float and vf: exp, log, erf, tanh, sigmoid, silu, gelu_erf,
// gelu_tanh, pow.
//
// Each function is written once as a template over V (float or vf) from the primitives in
// vec.h, so the scalar tail of a loop rounds exactly like its vector body. Accuracy (float):
//   exp, log   about 1 ulp (range reduction + polynomial), exact specials: exp(+-inf) = inf / 0,
//              exp overflows to inf above 88.72 and underflows through subnormals to 0;
//              log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, subnormal inputs handled.
//   erf        relative error ~2e-7 everywhere (polynomial below |x| = 1, erfc form above).
//   tanh       ~2 ulp; tanh(+-inf) = +-1.
//   sigmoid, silu, gelu_tanh   built from exp without cancellation (x / (1 + exp(-2u)) etc.).
//   gelu_erf   0.5 x (1 + erf(x / sqrt 2)), computed through erfc in the negative tail, so
//              the result keeps its relative accuracy (~4e-7) where it is tiny.
//   pow        vector: evaluated in double precision (nearly always correctly rounded);
//              scalar: std::pow. IEEE special cases (pow(x, 0) = 1, negative bases with
//              integer exponents, zeros and infinities) as std::pow.
// NaN inputs give NaN outputs everywhere.
// The polynomial coefficients were fitted for this file (weighted least squares on
// Chebyshev nodes, coefficients rounded to float and re-checked).
// The trigonometric and hyperbolic functions (sin, cos, tan, asin, acos, atan, atan2, sinh, cosh,
// asinh, acosh, atanh, hypot) are in math_trig.h, included at the end.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace detail {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kLn2Hi = 0.693145751953125f;        // ln 2 with 15 significant bits: n * hi exact
constexpr float kLn2Lo = 1.42860682030941723e-06f;  // ln 2 - kLn2Hi

// Nearest integer (ties to even) for |t| < 2^22, by pushing t into the range where the float
// spacing is 1. Needs no rounding instruction, so it is the same code in every ISA mode.
template <class V>
inline V round_small(V t) {
  const V magic(12582912.0f);  // 1.5 * 2^23
  return (t + magic) - magic;
}

// x = n ln2 + r with n integral and |r| <= ln2 / 2 (for |x| < 2^22 ln2): returns r, sets n.
// ln 2 is split in two so that r is nearly exact.
template <class V>
inline V reduce_ln2(V x, V& n) {
  const V magic(12582912.0f);  // as in round_small, fused with the product
  n = madd(x, V(1.44269504088896341f), magic) - magic;
  const V r = madd(n, V(-kLn2Hi), x);
  return madd(n, V(-kLn2Lo), r);
}

// e^r for |r| <= ln2 / 2: the degree-7 Taylor polynomial (truncation error 5e-9).
template <class V>
inline V exp_poly(V r) {
  V p(1.0f / 5040.0f);
  p = madd(p, r, V(1.0f / 720.0f));
  p = madd(p, r, V(1.0f / 120.0f));
  p = madd(p, r, V(1.0f / 24.0f));
  p = madd(p, r, V(1.0f / 6.0f));
  p = madd(p, r, V(0.5f));
  p = madd(p, r, V(1.0f));
  return madd(p, r, V(1.0f));
}

// p 2^n for integral n in [-250, 254], in two power-of-2 steps so that a subnormal result is
// rounded once (p 2^floor(n/2) must stay normal: p of order 1, as from exp_poly).
template <class V>
inline V scale_pow2(V p, V n) {
  const V n1 = round_small(n * V(0.5f) - V(0.25f));  // floor(n / 2)
  return p * exp2i(n1) * exp2i(n - n1);
}

// e^x = 2^n e^r (reduce_ln2, exp_poly, scale_pow2).
template <class V>
inline V exp_t(V x) {
  // Clamp so n stays in [-150, 129]; out-of-range inputs still overflow / underflow properly.
  // NaN becomes -104 here (x86 max returns its second operand) and is restored at the end.
  const V xc = min_raw(max_raw(x, V(-104.0f)), V(89.0f));
  V n;
  const V r = reduce_ln2(xc, n);
  return select(isnan(x), x, scale_pow2(exp_poly(r), n));
}

// ln m for x = m 2^e (x > 0 finite, subnormals included), m in [sqrt(1/2), sqrt(2)): returns
// ln m and sets e. With f = m - 1, s = f / (2 + f): ln(1 + f) = 2 atanh(s) = f - (f^2/2 -
// s (f^2/2 + R)), R = 2s^2/3 + 2s^4/5 + ... (the rearrangement keeps the leading term f exact).
// |s| < 0.172, so 4 terms of R suffice. Other inputs give garbage; see log_specials.
template <class V>
inline V log_reduce(V x, V& e) {
  const auto tiny = lt(x, V(1.17549435e-38f));      // subnormals (and 0, negatives)
  const V xs = select(tiny, x * V(8388608.0f), x);  // * 2^23
  V m = split_exponent(xs, e);
  e = select(tiny, e - V(23.0f), e);
  const auto big = gt(m, V(1.41421356f));
  m = select(big, m * V(0.5f), m);
  e = select(big, e + V(1.0f), e);
  const V f = m - V(1.0f);
  const V s = f / (f + V(2.0f));
  const V z = s * s;
  V r = madd(V(2.0f / 9.0f), z, V(2.0f / 7.0f));
  r = madd(r, z, V(2.0f / 5.0f));
  r = madd(r, z, V(2.0f / 3.0f));  // R = r z
  const V hfsq = V(0.5f) * f * f;
  return f - madd(-s, madd(r, z, hfsq), hfsq);
}

// The special cases of a logarithm y of x: log(inf) = inf, log(+-0) = -inf, log(x < 0) = NaN,
// NaN stays NaN.
template <class V>
inline V log_specials(V x, V y) {
  y = select(eq(x, V(kInf)), x, y);
  y = select(eq(x, V(0.0f)), V(-kInf), y);
  return select(logical_not(ge(x, V(0.0f))), V(std::numeric_limits<float>::quiet_NaN()), y);
}

// ln x = e ln 2 + ln m.
template <class V>
inline V log_t(V x) {
  V e;
  const V lnm = log_reduce(x, e);
  return log_specials(x, madd(e, V(kLn2Hi), madd(e, V(kLn2Lo), lnm)));
}

// The rounding error of hi = x * x (x of moderate size): hi + lo == x^2 exactly. One FMA when
// the hardware has it, else Dekker's product through Veltkamp's split.
template <class V>
inline V square_error(V x, V hi) {
#if defined(EMBER_RT_HAS_FMA)
  return madd(x, x, -hi);
#else
  const V c = x * V(4097.0f);  // 2^12 + 1: splits the 24-bit significand into two halves
  const V xh = c - (c - x);
  const V xl = x - xh;
  return ((xh * xh - hi) + V(2.0f) * xh * xl) + xl * xl;
#endif
}

// erf(x) / x as a polynomial in z = x^2, for |x| < 1 (relative error < 1e-7).
template <class V>
inline V erf_small_ratio(V z) {
  V p(7.84725926e-05f);
  p = madd(p, z, V(-0.000800818903f));
  p = madd(p, z, V(0.00518809911f));
  p = madd(p, z, V(-0.0268536918f));
  p = madd(p, z, V(0.112835824f));
  p = madd(p, z, V(-0.37612626f));
  p = madd(p, z, V(1.12837911f));
  return p;
}

// erfc(a) for a >= 1/2, as the product tp * ex: tp = t P(t), ex = e^{-a^2}, t = 1 / (1 + a *
// 21/64), P of degree 8 (relative error < 1e-7). The caller passes a^2 as hi + lo (split exactly
// with an FMA) so e^{-a^2} keeps its accuracy for large a, and keeps a <= ~10.5 (where erfc is
// already 0 in float) so nothing overflows.
// (Returned as two factors so callers can fold 1 - tp * ex into one explicit fused operation:
// every multiply-add in this file is an explicit madd, so the compiler's contraction of
// a * b + c cannot make the scalar and vector versions round differently.)
template <class V>
inline V erfc_tail(V a, V hi, V lo, V& ex) {
  const V t = V(1.0f) / madd(a, V(0.328125f), V(1.0f));
  V p(-0.061401099f);
  p = madd(p, t, V(0.127281129f));
  p = madd(p, t, V(-0.00738555519f));
  p = madd(p, t, V(0.118708298f));
  p = madd(p, t, V(0.121536143f));
  p = madd(p, t, V(0.155854598f));
  p = madd(p, t, V(0.175124213f));
  p = madd(p, t, V(0.185125381f));
  p = madd(p, t, V(0.18512471f));
  ex = exp_t(-hi);
  ex = madd(ex, -lo, ex);  // e^{-hi-lo} ~ e^{-hi} (1 - lo)
  return t * p;
}

template <class V>
inline V erf_t(V x) {
  const V a = abs(x);
  const V ac = min_raw(a, V(10.5f));  // (NaN becomes 10.5; restored below)
  const V hi = ac * ac;
  V ex;
  const V tp = erfc_tail(ac, hi, square_error(ac, hi), ex);
  const V tail = madd(-tp, ex, V(1.0f));  // 1 - erfc(a)
  const V big = select(lt(x, V(0.0f)), -tail, tail);
  const V y = select(lt(a, V(1.0f)), x * erf_small_ratio(x * x), big);
  return select(isnan(x), x, y);
}

// tanh: odd polynomial x + x^3 Q(x^2) below |x| = 0.625, else 1 - 2 / (e^{2|x|} + 1).
template <class V>
inline V tanh_t(V x) {
  const V a = abs(x);
  const V z = x * x;
  V q(0.00228973804f);
  q = madd(q, z, V(-0.00834098738f));
  q = madd(q, z, V(0.0217678975f));
  q = madd(q, z, V(-0.0539591163f));
  q = madd(q, z, V(0.133333027f));
  q = madd(q, z, V(-0.333333343f));
  const V small = madd(x * z, q, x);
  const V large = V(1.0f) - V(2.0f) / (exp_t(a + a) + V(1.0f));
  const V y = select(lt(a, V(0.625f)), small, select(lt(x, V(0.0f)), -large, large));
  return select(logical_or(isnan(x), eq(x, V(0.0f))), x, y);  // NaN, and -0 keeps its sign
}

template <class V>
inline V sigmoid_t(V x) {
  return V(1.0f) / (V(1.0f) + exp_t(-x));
}

template <class V>
inline V silu_t(V x) {
  return x / (V(1.0f) + exp_t(-x));
}

// 0.5 x (1 + erf(y)), y = x / sqrt 2. In the tails 1 + erf(y) is erfc(|y|) for y < 0 and
// 2 - erfc(y) for y > 0, computed without cancellation; y^2 = x^2 / 2 is taken from x exactly
// (not from the rounded y), so the tail stays accurate to ~2e-7 relative all the way down.
template <class V>
inline V gelu_erf_t(V x) {
  const V y = x * V(0.707106781186547524f);
  const V a = abs(y);
  const V xc = min_raw(abs(x), V(14.8f));  // a <= 10.47 (NaN: the result is NaN through x)
  const V xx = xc * xc;
  V ex;
  const V tp = erfc_tail(min_raw(a, V(10.5f)), xx * V(0.5f), square_error(xc, xx) * V(0.5f), ex);
  const V outer = select(lt(y, V(0.0f)), tp * ex, madd(-tp, ex, V(2.0f)));
  // The polynomial up to |y| = 1, except on the negative side past 1/2, where 1 + erf(y)
  // would start to cancel.
  const V small_range = select(lt(y, V(0.0f)), V(0.5f), V(1.0f));
  const V twice_cdf = select(lt(a, small_range), madd(y, erf_small_ratio(y * y), V(1.0f)), outer);
  return V(0.5f) * x * twice_cdf;
}

// 0.5 x (1 + tanh(u)) = x / (1 + e^{-2u}), u = sqrt(2/pi) (x + 0.044715 x^3).
template <class V>
inline V gelu_tanh_t(V x) {
  const V u = V(0.797884560802865356f) * madd(V(0.044715f) * x * x, x, x);
  return x / (V(1.0f) + exp_t(V(-2.0f) * u));
}

// pow for N lanes in double precision: out[i] = a[i] ^ b[i], with std::pow's special cases.
// Uses GCC vector extensions with N doubles, N the native width (4 with AVX2, 8 with
// AVX-512): g++ lowers a comparison of vectors wider than the ISA's lane by lane, with scalar
// compares and branches (25x slower). The vector types never cross a function boundary, so
// the psABI of the build does not matter. Shifts are on unsigned lanes only: AVX2 has no
// 64-bit arithmetic shift either.
template <int N>
struct PowLanes;
template <>
struct PowLanes<4> {
  typedef double d __attribute__((vector_size(32)));
  typedef int64_t i __attribute__((vector_size(32)));
  typedef uint64_t u __attribute__((vector_size(32)));
  typedef float f __attribute__((vector_size(16)));
};
template <>
struct PowLanes<8> {
  typedef double d __attribute__((vector_size(64)));
  typedef int64_t i __attribute__((vector_size(64)));
  typedef uint64_t u __attribute__((vector_size(64)));
  typedef float f __attribute__((vector_size(32)));
};
template <int N>
inline void pow_lanes(const float* pa, const float* pb, float* out) {
  using d8 = typename PowLanes<N>::d;
  using i8 = typename PowLanes<N>::i;
  using u8 = typename PowLanes<N>::u;
  using f8 = typename PowLanes<N>::f;
  const d8 zero = {};
  const d8 inf = zero + std::numeric_limits<double>::infinity();
  const d8 nan = zero + std::numeric_limits<double>::quiet_NaN();
  const d8 one = zero + 1.0;
  f8 af, bf;
  std::memcpy(&af, pa, sizeof af);
  std::memcpy(&bf, pb, sizeof bf);
  const d8 a = __builtin_convertvector(af, d8);
  const d8 b = __builtin_convertvector(bf, d8);
  const d8 ax = (a < 0) ? -a : a;  // |a| (float subnormals are normal doubles)

  // log2 |a| = e + ln(m) / ln 2, m in [sqrt(1/2), sqrt(2)): the scheme of log_t, more terms.
  const u8 bits = (u8)ax;                            // sign bit clear
  const u8 two52 = (u8)(zero + 4503599627370496.0);  // 2^52: OR-ing in an integer < 2^52 ...
  d8 e = (d8)((bits >> 52) | two52) - 4503599627370496.0 - 1023.0;  // ... converts it
  d8 m = (d8)((bits & 0x000fffffffffffff) | 0x3ff0000000000000);
  const i8 big = m > 1.4142135623730951;
  m = big ? m * 0.5 : m;
  e = big ? e + 1.0 : e;
  const d8 f = m - 1.0;
  const d8 s = f / (f + 2.0);
  const d8 z = s * s;
  d8 R = zero + 2.0 / 17;
  static constexpr double kLogTerms[] = {2.0 / 15, 2.0 / 13, 2.0 / 11, 2.0 / 9,
                                         2.0 / 7,  2.0 / 5,  2.0 / 3};
  for (double c : kLogTerms) R = R * z + c;
  R = R * z;
  const d8 hfsq = 0.5 * f * f;
  d8 lg2 = e + (f - (hfsq - s * (hfsq + R))) * 1.4426950408889634;
  lg2 = (ax == 0) ? -inf : lg2;
  lg2 = (ax == inf) ? inf : lg2;

  // 2^y = 2^n e^{g ln 2}, n = round(y), |g| <= 1/2, Taylor to degree 11 (error < 1e-14).
  d8 y = b * lg2;
  y = (y < -400.0) ? zero - 400.0 : y;
  y = (y > 400.0) ? zero + 400.0 : y;
  const d8 magic = zero + 6755399441055744.0;  // 1.5 * 2^52: y + magic rounds y to an integer
  const d8 nm = y + magic;
  const d8 r = (y - (nm - magic)) * 0.6931471805599453;
  d8 p = zero + 1.0 / 39916800;
  static constexpr double kExpTerms[] = {1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
                                         1.0 / 720,     1.0 / 120,    1.0 / 24,    1.0 / 6,
                                         0.5,           1.0,          1.0};
  for (double c : kExpTerms) p = p * r + c;
  // 2^n in two factors (n in [-400, 400]) so each is a normal double. The integer n comes
  // from the low bits of y + magic, in unsigned (wrapping) arithmetic: where y is NaN they
  // are anything, and the result is replaced below.
  const u8 n = (u8)nm - (u8)magic;
  const u8 n1 = ((n + 1024) >> 1) - 512;  // floor(n / 2), with a logical shift
  d8 res = p * (d8)((n1 + 1023) << 52) * (d8)((n - n1 + 1023) << 52);

  // Negative base: an integer exponent gives a real result, an odd one flips the sign.
  // Floats of magnitude >= 2^24 are even integers; below that, b + magic rounds b.
  const d8 bx = (b < 0) ? -b : b;
  const i8 small_b = bx < 16777216.0;
  const i8 b_int = ((b + magic) - magic == b) | ~small_b;
  const i8 b_odd = small_b & ((b + magic) - magic == b) & (((i8)(b + magic) & 1) != 0);
  const i8 neg_base = (a < 0) | ((a == 0) & ((i8)a != 0));  // includes -0.0
  res = (neg_base & b_odd) ? -res : res;
  res = ((a < 0) & (a != -inf) & ~b_int) ? nan : res;  // (-inf)^y is +-inf or +-0
  res = ((ax == 1.0) & (bx == inf)) ? one : res;       // (-1)^(+-inf) = 1
  res = ((a != a) | (b != b)) ? nan : res;
  res = ((a == 1.0) | (b == 0.0)) ? one : res;  // even when the other operand is NaN
  const f8 rf = __builtin_convertvector(res, f8);
  std::memcpy(out, &rf, sizeof rf);
}

}  // namespace detail

EMBER_RT_LAZY
inline float exp(float x) { return detail::exp_t(x); }
EMBER_RT_LAZY
inline vf exp(vf x) { return detail::exp_t(x); }
EMBER_RT_LAZY
inline float log(float x) { return detail::log_t(x); }
EMBER_RT_LAZY
inline vf log(vf x) { return detail::log_t(x); }
EMBER_RT_LAZY
inline float erf(float x) { return detail::erf_t(x); }
EMBER_RT_LAZY
inline vf erf(vf x) { return detail::erf_t(x); }
EMBER_RT_LAZY
inline float tanh(float x) { return detail::tanh_t(x); }
EMBER_RT_LAZY
inline vf tanh(vf x) { return detail::tanh_t(x); }
EMBER_RT_LAZY
inline float sigmoid(float x) { return detail::sigmoid_t(x); }
EMBER_RT_LAZY
inline vf sigmoid(vf x) { return detail::sigmoid_t(x); }
EMBER_RT_LAZY
inline float silu(float x) { return detail::silu_t(x); }
EMBER_RT_LAZY
inline vf silu(vf x) { return detail::silu_t(x); }
EMBER_RT_LAZY
inline float gelu_erf(float x) { return detail::gelu_erf_t(x); }
EMBER_RT_LAZY
inline vf gelu_erf(vf x) { return detail::gelu_erf_t(x); }
EMBER_RT_LAZY
inline float gelu_tanh(float x) { return detail::gelu_tanh_t(x); }
EMBER_RT_LAZY
inline vf gelu_tanh(vf x) { return detail::gelu_tanh_t(x); }

EMBER_RT_LAZY
inline float pow(float a, float b) { return std::pow(a, b); }
EMBER_RT_LAZY
inline vf pow(vf a, vf b) {
  // Doubles per native vector: 8 in a zmm, 4 in a ymm. Without SIMD, std::pow.
  constexpr int W = vf::width;
  if constexpr (W == 1) {
    float av, bv;
    a.store(&av);
    b.store(&bv);
    return vf(std::pow(av, bv));
  }
  constexpr int N = W >= 16 ? 8 : 4;
  constexpr int L = W < N ? N : W;
  float av[L] = {}, bv[L] = {}, rv[L];
  a.store(av);
  b.store(bv);
  for (int i = 0; i < L; i += N) detail::pow_lanes<N>(av + i, bv + i, rv + i);
  return vf::load(rv);
}

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt

#include "math_special.h"   // log1p, expm1, erfc, erfinv, lgamma, digamma, softplus, mish, ...
#include "math_special2.h"  // i0, bessel_j0, erfcx, ndtri, zeta, igamma, orthogonal polynomials, ...
#include "math_trig.h"      // sin, cos, tan, asin, ..., atan2, hypot (float, vf and double)
