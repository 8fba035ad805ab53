// Trigonometric and hyperbolic functions for float, vf and double: sin, cos, tan, asin, acos,
// atan, atan2, sinh, cosh, asinh, acosh, atanh, hypot.
//
// As in math.h, the float and vf versions are one template over V, so vector lanes equal the
// scalar tail bit for bit; the double versions are the std:: functions. Worst error of the
// float versions against the double std:: functions, measured over every 13th float (every
// 29th without FMA) and 10^8 (3 10^7) random pairs for atan2 / hypot, noted "FMA / no FMA" ulp:
//   sin   0.73 / 0.74  x = n pi/2 + r: n = round(x 2/pi), r by a Cody-Waite reduction whose
//   cos   0.73 / 0.76  first three steps are exact (pi/2 in pieces of <= 8 bits, |n| < 2^16)
//   tan   0.86 / 0.88  and whose last keeps r as a float pair (rh + rl, relative error
//                      < 2^-40, enough for the closest float to a multiple of pi/2 below 1e5,
//                      r = 4.2e-9 at x = 252.898209); Taylor polynomials on |r| <= pi/4;
//                      tan = sin r / cos r (or -cos / sin), divided as float pairs.
//                      |x| >= 1e5 (and inf, NaN): lane-wise through the double std::
//                      function, which is then nearly correctly rounded.
//   asin  0.60 / 0.62  odd polynomial for |x| < 1/2; above, asin x = pi/2 - 2 asin(s) with
//   acos  0.89 / 0.90  s = sqrt((1 - |x|) / 2) plus its rounding error, pi/2 and pi as float
//                      pairs.
//   atan  1.02 / 1.02  atan(n / d) for 0 <= n <= d on t = n / d, or pi/4 + atan((n - d) /
//   atan2 1.49 / 1.46  (n + d)) above tan(pi/8) with the rounding errors of t carried along;
//                      odd polynomial on |t| <= tan(pi/8). atan2 adds the quadrant as a float
//                      pair (0, pi/2, pi) and handles the signed zeros and infinities of C /
//                      torch.atan2.
//   sinh  1.67 / 1.67  Taylor polynomials for |x| < 1; above, E +- 1/(4E) with E = e^|x| / 2
//   cosh  1.36 / 1.65  from e^(|x| - 2 ln2), rounded once (so the error is mostly exp's),
//                      overflowing exactly where sinh / cosh do.
//   asinh 1.61 / 1.58  log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x|; log(a) + ln 2 from 2^12.
//   acosh 1.31 / 1.27  log1p(t + sqrt(2t + t^2)), t = x - 1, below 2 (the argument as an exact
//                      float pair); log(2x - 1 / (x + sqrt(x^2 - 1))) up to 2^12; log(x) + ln 2.
//   atanh 1.69 / 1.70  log1p(2a + 2a^2 / (1 - a)) / 2 below 1/2, log1p(2a / (1 - a)) / 2 above.
//   hypot 0.99 / 1.18  sqrt(a^2 + b^2) after scaling by a power of two; no overflow or
//                      underflow in between. hypot(+-inf, NaN) = inf, as in C and torch.
// Every multiply-add is an explicit madd, and no other product feeds an addition unless it is
// exact, so compilers contracting a * b + c cannot make vector and scalar results differ.
// log1p is a private helper here (log(1 + w) plus the rounding error of 1 + w, divided by it).
// Special values as torch float32: NaN gives NaN; sin, cos, tan of +-inf are NaN; asin, acos
// outside [-1, 1], acosh below 1 and atanh outside [-1, 1] are NaN; atanh(+-1) = +-inf;
// sinh, cosh overflow to inf; odd functions keep the sign of zero (and return tiny arguments
// unchanged).
#pragma once

#include <cmath>
#include <limits>

#include "lazy.h"
#include "math.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace detail {

constexpr float kTrigPio2Hi = 1.57079637f;  // pi/2 = hi + lo
constexpr float kTrigPio2Lo = -4.37113883e-08f;
constexpr float kTrigPiHi = 3.14159274f;  // pi = hi + lo
constexpr float kTrigPiLo = -8.74227766e-08f;
constexpr float kTrigPio4Hi = 0.785398185f;  // pi/4 = hi + lo
constexpr float kTrigPio4Lo = -2.18556941e-08f;
constexpr float kTrigLn2 = 0.693147182f;
constexpr float kTrigTiny = 0x1p-12f;     // odd functions here are x below it
constexpr float kTrigReduceMax = 1.0e5f;  // |x| below: SIMD range reduction

// hi + lo == a + b exactly, hi = fl(a + b).
template <class V>
inline V trig_two_sum(V a, V b, V& lo) {
  const V hi = a + b;
  const V bb = hi - a;
  lo = (a - (hi - bb)) + (b - bb);
  return hi;
}

// The rounding error of hi = a * b (no overflow or underflow): hi + lo == a b exactly.
template <class V>
inline V trig_product_error(V a, V b, V hi) {
#if defined(EMBER_RT_HAS_FMA)
  return madd(a, b, -hi);
#else
  const V ca = a * V(4097.0f);  // Veltkamp's split into two 12-bit halves (as square_error)
  const V ah = ca - (ca - a);
  const V al = a - ah;
  const V cb = b * V(4097.0f);
  const V bh = cb - (cb - b);
  const V bl = b - bh;
  return ((ah * bh - hi) + ah * bl + al * bh) + al * bl;
#endif
}

// Lanes of y where m is set are replaced by f(x) for that lane (f: float -> float).
template <class F>
inline float trig_patch_lanes(bool m, float x, float y, F f) {
  return m ? f(x) : y;
}
template <class F>
inline vf trig_patch_lanes(vm m, vf x, vf y, F f) {
  if (!any(m)) return y;
  float xs[vf::width], ys[vf::width], ms[vf::width];
  x.store(xs);
  y.store(ys);
  select(m, vf(1.0f), vf(0.0f)).store(ms);
  for (int i = 0; i < vf::width; ++i)
    if (ms[i] != 0.0f) ys[i] = f(xs[i]);
  return vf::load(ys);
}

// True where x is negative, -0 included (never for NaN).
template <class V>
inline auto trig_signbit(V x) {
  return logical_or(lt(x, V(0.0f)), lt(V(1.0f) / x, V(0.0f)));
}

// ln(1 + w + w_lo) for w >= 0, |w_lo| <= ulp(w) (NaN for w < -1): log(u), u = fl(1 + w), plus
// the rounding error of u and w_lo divided by u (u - 1 is exact and so is w - (u - 1)).
template <class V>
inline V trig_log1p_t(V w, V w_lo) {
  const V u = w + V(1.0f);
  const V c = ((w - (u - V(1.0f))) + w_lo) / u;
  return select(eq(w, V(kInf)), w, log_t(u) + c);
}

// ---- sin, cos, tan ---------------------------------------------------------------------------

// x = n pi/2 + (rh + rl) for |x| < kTrigReduceMax; returns n (|n| < 2^16). pi/2 = A + B + C +
// D + D2 with A, B, C of at most 8 significant bits, so n A, n B, n C are exact and so are the
// differences t (each stays on the grid of x and of the piece and shrinks towards r); the rest,
// t - n (D + D2), is summed exactly in two floats.
template <class V>
inline V trig_reduce(V x, V& rh, V& rl) {
  const V magic(12582912.0f);  // 1.5 * 2^23, as in exp_t
  const V n = madd(x, V(0.636619747f), magic) - magic;
  V t = madd(n, V(-1.5703125f), x);             // A = 201 * 2^-7
  t = madd(n, V(-4.57763671875e-4f), t);        // B = 15 * 2^-15
  t = madd(n, V(-2.59876251220703125e-5f), t);  // C = 218 * 2^-23
  constexpr float kD = 7.54978995e-08f;
  constexpr float kD2 = -1.71512451e-15f;
  const V ph = n * V(kD);
  const V pl = trig_product_error(n, V(kD), ph);
  V e;
  const V s = trig_two_sum(t, -ph, e);
  const V lo = madd(n, V(-kD2), e - pl);
  rh = s + lo;
  rl = lo - (rh - s);
  return n;
}

// sin r = s + s_lo and cos r = c + c_lo (s, c rounded to nearest, the _lo their errors) for
// r = rh + rl, |r| <= pi/4 + a little: Taylor polynomials (truncation error below 3e-9
// relative), rl entering through its first-order terms.
template <class V>
inline void trig_sincos_kernel(V rh, V rl, V& s, V& s_lo, V& c, V& c_lo) {
  const V z = rh * rh;
  V ps(2.75573192e-06f);  // 1/9!
  ps = madd(ps, z, V(-1.98412698e-04f));
  ps = madd(ps, z, V(8.33333377e-03f));
  ps = madd(ps, z, V(-1.66666672e-01f));
  const V hz = V(0.5f) * z;
  const V st = madd(rh * z, ps, madd(-hz, rl, rl));  // rl cos r ~ rl (1 - z/2)
  s = rh + st;
  s_lo = st - (s - rh);
  V pc(-2.75573188e-07f);  // -1/10!
  pc = madd(pc, z, V(2.48015876e-05f));
  pc = madd(pc, z, V(-1.38888892e-03f));
  pc = madd(pc, z, V(4.16666679e-02f));
  // 1 - z/2 rounds once in w; its error (1 - w) - hz is exact, as is the error zl of z.
  const V w = V(1.0f) - hz;
  const V zl = square_error(rh, z);
  const V ct = ((V(1.0f) - w) - hz) + madd(z * z, pc, madd(V(-0.5f), zl, -(rh * rl)));
  c = w + ct;
  c_lo = ct - (c - w);
}

// The quadrant n mod 4 in {0, 1, 2, 3} of an integral n (|n| < 2^22).
template <class V>
inline V trig_quadrant(V n) {
  return madd(round_small(madd(n, V(0.25f), V(-0.375f))), V(-4.0f), n);
}

template <class V>
inline V sin_t(V x) {
  V rh, rl, s, s_lo, c, c_lo;
  const V q = trig_quadrant(trig_reduce(x, rh, rl));
  trig_sincos_kernel(rh, rl, s, s_lo, c, c_lo);
  const auto odd = logical_or(eq(q, V(1.0f)), eq(q, V(3.0f)));
  const V y = select(odd, c, s);
  V r = select(ge(q, V(2.0f)), -y, y);
  r = select(lt(abs(x), V(kTrigTiny)), x, r);
  return trig_patch_lanes(logical_not(lt(abs(x), V(kTrigReduceMax))), x, r, [](float v) {
    return static_cast<float>(std::sin(static_cast<double>(v)));
  });
}

template <class V>
inline V cos_t(V x) {
  V rh, rl, s, s_lo, c, c_lo;
  const V q = trig_quadrant(trig_reduce(x, rh, rl));
  trig_sincos_kernel(rh, rl, s, s_lo, c, c_lo);
  const auto odd = logical_or(eq(q, V(1.0f)), eq(q, V(3.0f)));
  const V y = select(odd, s, c);
  const V r = select(logical_or(eq(q, V(1.0f)), eq(q, V(2.0f))), -y, y);
  return trig_patch_lanes(logical_not(lt(abs(x), V(kTrigReduceMax))), x, r, [](float v) {
    return static_cast<float>(std::cos(static_cast<double>(v)));
  });
}

// tan = sin r / cos r in even quadrants, -cos r / sin r in odd ones, divided as float pairs:
// t = fl(nh / dh) plus (nh - t dh + nl - t dl) / dh.
template <class V>
inline V tan_t(V x) {
  V rh, rl, s, s_lo, c, c_lo;
  const V q = trig_quadrant(trig_reduce(x, rh, rl));
  trig_sincos_kernel(rh, rl, s, s_lo, c, c_lo);
  const auto odd = logical_or(eq(q, V(1.0f)), eq(q, V(3.0f)));
  const V nh = select(odd, -c, s), nl = select(odd, -c_lo, s_lo);
  const V dh = select(odd, s, c), dl = select(odd, s_lo, c_lo);
  const V t = nh / dh;
  const V p = t * dh;
  const V res = (nh - p) - trig_product_error(t, dh, p);  // nh - t dh, exactly
  V r = t + madd(-t, dl, res + nl) / dh;
  r = select(lt(abs(x), V(kTrigTiny)), x, r);
  return trig_patch_lanes(logical_not(lt(abs(x), V(kTrigReduceMax))), x, r, [](float v) {
    return static_cast<float>(std::tan(static_cast<double>(v)));
  });
}

// ---- asin, acos ------------------------------------------------------------------------------

// asin(x) = x + x z P(z), z = x^2 <= 1/4 (relative error < 1e-9).
template <class V>
inline V trig_asin_poly(V z) {
  V p(0.0375651866f);
  p = madd(p, z, V(0.0144026149f));
  p = madd(p, z, V(0.0318176076f));
  p = madd(p, z, V(0.0445157215f));
  p = madd(p, z, V(0.0750051066f));
  p = madd(p, z, V(0.166666597f));
  return p;
}

// For a in [1/2, 1]: asin(s) = s + t with s = sqrt((1 - a) / 2) (t includes the rounding error
// of s), so that asin(a) = pi/2 - 2 (s + t) and acos(a) = 2 (s + t).
template <class V>
inline V trig_asin_half(V a, V& t) {
  const V w = V(0.5f) * (V(1.0f) - a);  // exact
  const V s = sqrt(w);
  const V ss = s * s;
  const V res = (w - ss) - square_error(s, ss);  // w - s^2, exactly
  const V s_lo = res / select(eq(s, V(0.0f)), V(1.0f), s + s);
  t = madd(s * w, trig_asin_poly(w), s_lo);
  return s;
}

template <class V>
inline V asin_t(V x) {
  const V a = abs(x);
  const V small = madd(x * (x * x), trig_asin_poly(x * x), x);
  V t;
  const V s = trig_asin_half(a, t);
  V lo;
  const V hi = trig_two_sum(V(kTrigPio2Hi), V(-2.0f) * s, lo);
  const V big = hi + madd(V(-2.0f), t, lo + V(kTrigPio2Lo));
  return select(lt(a, V(0.5f)), small, select(lt(x, V(0.0f)), -big, big));
}

template <class V>
inline V acos_t(V x) {
  const V a = abs(x);
  const V asin_x = madd(x * (x * x), trig_asin_poly(x * x), x);
  const V small = V(kTrigPio2Hi) + (V(kTrigPio2Lo) - asin_x);
  V t;
  const V s = trig_asin_half(a, t);
  const V pos = V(2.0f) * (s + t);
  V lo;
  const V hi = trig_two_sum(V(kTrigPiHi), V(-2.0f) * s, lo);
  const V neg = hi + madd(V(-2.0f), t, lo + V(kTrigPiLo));
  return select(lt(a, V(0.5f)), small, select(lt(x, V(0.0f)), neg, pos));
}

// ---- atan, atan2 -----------------------------------------------------------------------------

// atan(n / d) in [0, pi/4] for 0 <= n <= d, 0 < d, n + d finite. Above tan(pi/8) it is
// pi/4 + atan((n - d) / (n + d)), where the rounding errors of n - d, n + d and of the quotient
// go in as t_lo (which needs d in [2^-64, 2^64] there: no underflow in the error terms); the
// polynomial covers |t| <= tan(pi/8) (relative error < 2e-9).
template <class V>
inline V trig_atan_ratio(V n, V d) {
  const auto big = gt(n, V(0.414213562f) * d);
  V num_e, den_e;
  const V diff = trig_two_sum(n, -d, num_e);
  const V sum = trig_two_sum(n, d, den_e);
  const V num = select(big, diff, n), den = select(big, sum, d);
  const V t = num / den;
  const V p = t * den;
  const V res = (num - p) - trig_product_error(t, den, p);  // num - t den, exactly
  const V t_lo = madd(-t, den_e, res + num_e) / den;
  const V z = t * t;
  V q(0.0474805348f);
  q = madd(q, z, V(-0.0847830325f));
  q = madd(q, z, V(0.11045076f));
  q = madd(q, z, V(-0.142820403f));
  q = madd(q, z, V(0.199999049f));
  q = madd(q, z, V(-0.333333313f));
  const V at = madd(t * z, q, select(big, V(kTrigPio4Lo) + t_lo, V(0.0f))) + t;
  return select(big, V(kTrigPio4Hi), V(0.0f)) + at;
}

template <class V>
inline V atan_t(V x) {
  const V a = abs(x);
  const auto swap = gt(a, V(1.0f));
  const V r = trig_atan_ratio(select(swap, V(1.0f), a), select(swap, a, V(1.0f)));
  V y = select(swap, V(kTrigPio2Hi) + (V(kTrigPio2Lo) - r), r);
  y = select(lt(x, V(0.0f)), -y, y);
  return select(lt(a, V(kTrigTiny)), x, y);
}

// atan2(y, x) = K + S atan(n / d), n = min(|x|, |y|), d = max: K in {0, pi/2, pi} (a float
// pair), S = +-1 by the quadrant; the sign of y (of zero too) goes on last.
template <class V>
inline V atan2_t(V y, V x) {
  const V ax = abs(x), ay = abs(y);
  const auto swap = gt(ay, ax);
  V n = select(swap, ax, ay);
  V d = select(swap, ay, ax);
  // Equal magnitudes: 0 / 0 stands for angle 0, inf / inf for pi/4.
  const auto zero = eq(d, V(0.0f));
  const auto inf = eq(d, V(kInf));
  n = select(inf, select(eq(n, V(kInf)), V(1.0f), V(0.0f)), n);
  d = select(logical_or(zero, inf), V(1.0f), d);
  // Bring d into [2^-64, 2^64] (for trig_atan_ratio; n + d stays finite). Scaling up is exact;
  // scaling down rounds n only below 2^-85, by at most 2^-150, which moves n / d (d >= 1)
  // by less than half the smallest subnormal.
  const V scale =
      select(gt(d, V(0x1p64f)), V(0x1p-64f), select(lt(d, V(0x1p-64f)), V(0x1p100f), V(1.0f)));
  const V r = trig_atan_ratio(n * scale, d * scale);
  const auto xneg = trig_signbit(x);
  const V k_hi = select(swap, V(kTrigPio2Hi), select(xneg, V(kTrigPiHi), V(0.0f)));
  const V k_lo = select(swap, V(kTrigPio2Lo), select(xneg, V(kTrigPiLo), V(0.0f)));
  const auto minus =
      logical_or(logical_and(swap, logical_not(xneg)), logical_and(logical_not(swap), xneg));
  V res = k_hi + (k_lo + select(minus, -r, r));
  res = select(trig_signbit(y), -res, res);
  return select(logical_or(isnan(x), isnan(y)), x + y, res);
}

// ---- sinh, cosh ------------------------------------------------------------------------------

// e^a / 2 +- e^-a / 2 for a >= 1, as 2 (e (1 - l) +- (1/16) / (e (1 - l))) with
// e = e^(a - 2 ln2_hi) (the difference is exact) and l = 2 ln2_lo (e^-l = 1 - l to float
// precision), rounded once before the exact doubling, which overflows exactly where the
// result does.
template <class V>
inline V trig_exp_pm(V a, bool minus) {
  constexpr float l = 2.0f * kLn2Lo;
  const V e = exp_t(a - V(2.0f * kLn2Hi));
  const V q = V(0.0625f) / e;
  const V qe = madd(q, V(l), q);  // 1/16 / (e (1 - l))
  const V y = e + madd(-e, V(l), minus ? -qe : qe);
  return V(2.0f) * select(eq(e, V(kInf)), e, y);
}

template <class V>
inline V sinh_t(V x) {
  const V a = abs(x);
  const V z = x * x;
  V p(2.50521084e-08f);  // sinh x = x + x z P(z), Taylor to x^11 (error < 2e-10 for |x| < 1)
  p = madd(p, z, V(2.75573192e-06f));
  p = madd(p, z, V(1.98412698e-04f));
  p = madd(p, z, V(8.33333377e-03f));
  p = madd(p, z, V(1.66666672e-01f));
  const V small = madd(x * z, p, x);
  const V big = trig_exp_pm(a, true);
  return select(lt(a, V(1.0f)), small, select(lt(x, V(0.0f)), -big, big));
}

template <class V>
inline V cosh_t(V x) {
  const V a = abs(x);
  const V z = x * x;
  V p(2.08767570e-09f);  // cosh x = 1 + z P(z), Taylor to x^12 (error < 2e-11 for |x| < 1)
  p = madd(p, z, V(2.75573192e-07f));
  p = madd(p, z, V(2.48015876e-05f));
  p = madd(p, z, V(1.38888892e-03f));
  p = madd(p, z, V(4.16666679e-02f));
  p = madd(p, z, V(0.5f));
  const V small = madd(z, p, V(1.0f));
  return select(lt(a, V(1.0f)), small, trig_exp_pm(a, false));
}

// ---- asinh, acosh, atanh ---------------------------------------------------------------------

template <class V>
inline V asinh_t(V x) {
  const V a = abs(x);
  const V ac = min_raw(a, V(4096.0f));  // a^2 stays finite (NaN becomes 4096: see below)
  const V a2 = ac * ac;
  V w_lo;
  const V w = trig_two_sum(ac, a2 / (V(1.0f) + sqrt(a2 + V(1.0f))), w_lo);
  const V mid = trig_log1p_t(w, w_lo);
  const V big = log_t(a) + V(kTrigLn2);
  V y = select(lt(a, V(4096.0f)), mid, big);  // NaN: through log_t(a)
  y = select(lt(x, V(0.0f)), -y, y);
  return select(lt(a, V(kTrigTiny)), x, y);
}

template <class V>
inline V acosh_t(V x) {
  const V xc = min_raw(x, V(4096.0f));  // x^2 stays finite (NaN becomes 4096: see below)
  // Below 2: t = x - 1 (exact), v = 2t + t^2 = vh + vl exactly, s = sqrt(v) plus its rounding
  // error, w = t + s as a float pair.
  const V t = xc - V(1.0f);
  const V tt = t * t;
  V vl;
  const V vh = trig_two_sum(t + t, tt, vl);
  vl = vl + square_error(t, tt);
  const V s = sqrt(vh);
  const V ss = s * s;
  const V s_lo = (((vh - ss) - square_error(s, ss)) + vl) / select(eq(s, V(0.0f)), V(1.0f), s + s);
  V w_lo;
  const V w = trig_two_sum(t, s, w_lo);
  const V near1 = trig_log1p_t(w, w_lo + s_lo);
  const V mid = log_t(xc + xc - V(1.0f) / (xc + sqrt(madd(xc, xc, V(-1.0f)))));
  const V big = log_t(x) + V(kTrigLn2);
  const V y = select(lt(x, V(2.0f)), near1, select(lt(x, V(4096.0f)), mid, big));
  return select(lt(x, V(1.0f)), V(std::numeric_limits<float>::quiet_NaN()), y);
}

template <class V>
inline V atanh_t(V x) {
  const V a = abs(x);
  const V one_minus = V(1.0f) - a;  // exact for a >= 1/2
  const V a2 = a + a;
  V w_lo;  // below 1/2: w = 2a + 2a^2 / (1 - a) as an exact sum
  const V w_small = trig_two_sum(a2, (a2 * a) / one_minus, w_lo);
  const auto small = lt(a, V(0.5f));
  const V w = select(small, w_small, a2 / one_minus);
  V y = V(0.5f) * trig_log1p_t(w, select(small, w_lo, V(0.0f)));  // a > 1: w < -1, NaN
  y = select(lt(x, V(0.0f)), -y, y);
  return select(lt(a, V(kTrigTiny)), x, y);
}

// ---- hypot -----------------------------------------------------------------------------------

template <class V>
inline V hypot_t(V a, V b) {
  const V aa = abs(a), ab = abs(b);
  const V m = max_raw(aa, ab), n = min_raw(aa, ab);
  // Scale by 2^-70 above 2^60 and by 2^90 below 2^-60, so the squares neither overflow nor
  // lose bits to underflow (scaling n down only loses bits where n^2 is negligible anyway).
  const auto big = gt(m, V(0x1p60f));
  const auto tiny = lt(m, V(0x1p-60f));
  const V scale = select(big, V(0x1p-70f), select(tiny, V(0x1p90f), V(1.0f)));
  const V unscale = select(big, V(0x1p70f), select(tiny, V(0x1p-90f), V(1.0f)));
  const V ms = m * scale, ns = n * scale;
  V y = sqrt(madd(ms, ms, ns * ns)) * unscale;
  y = select(logical_or(isnan(a), isnan(b)), V(std::numeric_limits<float>::quiet_NaN()), y);
  return select(logical_or(eq(aa, V(kInf)), eq(ab, V(kInf))), V(kInf), y);
}

}  // namespace detail

EMBER_RT_LAZY
inline float sin(float x) { return detail::sin_t(x); }
EMBER_RT_LAZY
inline vf sin(vf x) { return detail::sin_t(x); }
EMBER_RT_LAZY
inline float cos(float x) { return detail::cos_t(x); }
EMBER_RT_LAZY
inline vf cos(vf x) { return detail::cos_t(x); }
EMBER_RT_LAZY
inline float tan(float x) { return detail::tan_t(x); }
EMBER_RT_LAZY
inline vf tan(vf x) { return detail::tan_t(x); }
EMBER_RT_LAZY
inline float asin(float x) { return detail::asin_t(x); }
EMBER_RT_LAZY
inline vf asin(vf x) { return detail::asin_t(x); }
EMBER_RT_LAZY
inline float acos(float x) { return detail::acos_t(x); }
EMBER_RT_LAZY
inline vf acos(vf x) { return detail::acos_t(x); }
EMBER_RT_LAZY
inline float atan(float x) { return detail::atan_t(x); }
EMBER_RT_LAZY
inline vf atan(vf x) { return detail::atan_t(x); }
EMBER_RT_LAZY
inline float atan2(float y, float x) { return detail::atan2_t(y, x); }
EMBER_RT_LAZY
inline vf atan2(vf y, vf x) { return detail::atan2_t(y, x); }
EMBER_RT_LAZY
inline float sinh(float x) { return detail::sinh_t(x); }
EMBER_RT_LAZY
inline vf sinh(vf x) { return detail::sinh_t(x); }
EMBER_RT_LAZY
inline float cosh(float x) { return detail::cosh_t(x); }
EMBER_RT_LAZY
inline vf cosh(vf x) { return detail::cosh_t(x); }
EMBER_RT_LAZY
inline float asinh(float x) { return detail::asinh_t(x); }
EMBER_RT_LAZY
inline vf asinh(vf x) { return detail::asinh_t(x); }
EMBER_RT_LAZY
inline float acosh(float x) { return detail::acosh_t(x); }
EMBER_RT_LAZY
inline vf acosh(vf x) { return detail::acosh_t(x); }
EMBER_RT_LAZY
inline float atanh(float x) { return detail::atanh_t(x); }
EMBER_RT_LAZY
inline vf atanh(vf x) { return detail::atanh_t(x); }
EMBER_RT_LAZY
inline float hypot(float a, float b) { return detail::hypot_t(a, b); }
EMBER_RT_LAZY
inline vf hypot(vf a, vf b) { return detail::hypot_t(a, b); }

}  // namespace EMBER_RT_ISA_NS

EMBER_RT_LAZY
inline double sin(double x) { return std::sin(x); }
EMBER_RT_LAZY
inline double cos(double x) { return std::cos(x); }
EMBER_RT_LAZY
inline double tan(double x) { return std::tan(x); }
EMBER_RT_LAZY
inline double asin(double x) { return std::asin(x); }
EMBER_RT_LAZY
inline double acos(double x) { return std::acos(x); }
EMBER_RT_LAZY
inline double atan(double x) { return std::atan(x); }
EMBER_RT_LAZY
inline double atan2(double y, double x) { return std::atan2(y, x); }
EMBER_RT_LAZY
inline double sinh(double x) { return std::sinh(x); }
EMBER_RT_LAZY
inline double cosh(double x) { return std::cosh(x); }
EMBER_RT_LAZY
inline double asinh(double x) { return std::asinh(x); }
EMBER_RT_LAZY
inline double acosh(double x) { return std::acosh(x); }
EMBER_RT_LAZY
inline double atanh(double x) { return std::atanh(x); }
EMBER_RT_LAZY
inline double hypot(double a, double b) { return std::hypot(a, b); }

}  // namespace ember_rt
