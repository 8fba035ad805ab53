// Scalar math for float64 and integer types, named like the float32 / vector functions of
// vec.h and math.h so that generated code reads the same for every element type.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernel.h"
#include "lazy.h"

namespace ember_rt {

EMBER_RT_LAZY
inline double exp(double x) { return std::exp(x); }
EMBER_RT_LAZY
inline double log(double x) { return std::log(x); }
EMBER_RT_LAZY
inline double sqrt(double x) { return std::sqrt(x); }
EMBER_RT_LAZY
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
EMBER_RT_LAZY
inline double tanh(double x) { return std::tanh(x); }
EMBER_RT_LAZY
inline double erf(double x) { return std::erf(x); }
EMBER_RT_LAZY
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
EMBER_RT_LAZY
inline double silu(double x) { return x / (1.0 + std::exp(-x)); }
// Through erfc: 1 + erf(x / sqrt 2) cancels to 0 for x below about -8.
EMBER_RT_LAZY
inline double gelu_erf(double x) { return 0.5 * x * std::erfc(x * -0.70710678118654752440); }
// x * sigmoid(2u) = x * (1 + tanh(u)) / 2, without the cancellation of 1 + tanh(u) for x < 0.
EMBER_RT_LAZY
inline double gelu_tanh(double x) {
  const double k = 0.79788456080286535588;  // sqrt(2 / pi)
  return x / (1.0 + std::exp(-2.0 * k * (x + 0.044715 * x * x * x)));
}
EMBER_RT_LAZY
inline double floor(double x) { return std::floor(x); }
EMBER_RT_LAZY
inline double ceil(double x) { return std::ceil(x); }
EMBER_RT_LAZY
inline double round(double x) { return std::nearbyint(x); }
EMBER_RT_LAZY
inline double abs(double x) { return std::fabs(x); }
EMBER_RT_LAZY
inline double pow(double a, double b) { return std::pow(a, b); }
EMBER_RT_LAZY
inline double reciprocal(double x) { return 1.0 / x; }
EMBER_RT_LAZY
inline double relu(double x) { return x < 0.0 ? 0.0 : x; }  // NaN and -0 stay, as torch
EMBER_RT_LAZY
inline double max(double a, double b) { return (a != a || a > b) ? a : b; }
EMBER_RT_LAZY
inline double min(double a, double b) { return (a != a || a < b) ? a : b; }
// With a bound c that is not NaN: a when a is NaN or equal to c (vec.h's float max_c).
EMBER_RT_LAZY
inline double max_c(double a, double c) { return c > a ? c : a; }
EMBER_RT_LAZY
inline double min_c(double a, double c) { return c < a ? c : a; }

// Integer helpers: Python/torch floor division and modulo.
template <class T>
inline T ifloordiv(T a, T b) {
  T q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
template <class T>
inline T imod(T a, T b) {
  return a - ifloordiv(a, b) * b;
}
// The same for tensor data, where the divisor may be 0 (torch raises ZeroDivisionError):
// a zero divisor is reported and gives 0, and min / -1 wraps instead of trapping (x86's
// idiv raises SIGFPE for both).
template <class T>
inline T ifloordiv(T a, T b, const LaunchContext* ctx) {
  if (__builtin_expect(b == 0, 0)) {
    report_error(ctx, KernelError::kDivisionByZero, "", static_cast<int64_t>(a), 0);
    return 0;
  }
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return static_cast<T>(std::make_unsigned_t<T>{0} - std::make_unsigned_t<T>(a));
  }
  return ifloordiv(a, b);
}
template <class T>
inline T imod(T a, T b, const LaunchContext* ctx) {
  if (__builtin_expect(b == 0, 0)) {
    report_error(ctx, KernelError::kDivisionByZero, "", static_cast<int64_t>(a), 0);
    return 0;
  }
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return imod(a, b);
}
// C's % (the dividend's sign: torch.fmod on integers), with the same zero-divisor report.
template <class T>
inline T ifmod(T a, T b, const LaunchContext* ctx) {
  if (__builtin_expect(b == 0, 0)) {
    report_error(ctx, KernelError::kDivisionByZero, "", static_cast<int64_t>(a), 0);
    return 0;
  }
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return static_cast<T>(a % b);
}
template <class T>
inline T ifmod(T a, T b) {
  return static_cast<T>(a % b);
}
// Shifts as torch: a count outside [0, bits) shifts every bit out (0, or -1 for a negative
// value shifted right); inside, left shifts wrap and signed right shifts are arithmetic.
template <class T>
inline T ishl(T a, T count) {
  constexpr int64_t bits = sizeof(T) * 8;
  if (static_cast<int64_t>(count) < 0 || static_cast<int64_t>(count) >= bits) return 0;
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) << static_cast<int>(count)));
}
template <class T>
inline T ishr(T a, T count) {
  constexpr int64_t bits = sizeof(T) * 8;
  if (static_cast<int64_t>(count) < 0 || static_cast<int64_t>(count) >= bits) {
    if constexpr (std::is_signed_v<T>) return a < 0 ? static_cast<T>(-1) : 0;
    return 0;
  }
  return static_cast<T>(a >> static_cast<int>(count));
}
template <class T>
inline T imax(T a, T b) {
  return a > b ? a : b;
}
template <class T>
inline T imin(T a, T b) {
  return a < b ? a : b;
}
template <class T>
inline T iabs(T a) {
  return a < 0 ? static_cast<T>(-a) : a;
}
template <class T>
inline T ipow(T base, T e) {
  if (e < 0) return base == 1 ? 1 : (base == -1 ? ((e & 1) ? -1 : 1) : 0);
  T r = 1;
  while (e) {
    if (e & 1) r = static_cast<T>(r * base);
    base = static_cast<T>(base * base);
    e >>= 1;
  }
  return r;
}

}  // namespace ember_rt
