// Portable implementation of vf / vm: one float lane. Included by vec.h only.
// Correct on any compiler flags; generated loops simply run with width 1.
#pragma once

#include <cmath>
#include <cstring>

#include "half.h"
#include "isa.h"
#include "lazy.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

struct vm {
  bool m;

  static vm broadcast(bool b) { return vm{b}; }
  static vm load(const bool* p) {  // any nonzero byte is true (read as a byte, not a bool)
    unsigned char b;
    std::memcpy(&b, p, 1);
    return vm{b != 0};
  }
  static vm load_partial(const bool* p, int n) { return n > 0 ? load(p) : vm{false}; }
  void store(bool* p) const { *p = m; }
  void store_partial(bool* p, int n) const {
    if (n > 0) *p = m;
  }
};

struct vf {
  static constexpr int width = 1;
  float v;

  vf() : v(0.0f) {}
  vf(float x) : v(x) {}

  static vf broadcast(float x) { return vf(x); }
  static vf load(const float* p) { return vf(*p); }
  static vf load_partial(const float* p, int n) { return vf(n > 0 ? *p : 0.0f); }
  void store(float* p) const { *p = v; }
  void store_partial(float* p, int n) const {
    if (n > 0) *p = v;
  }

  static vf load_bf16(const bf16* p) { return vf(to_float(*p)); }
  static vf load_partial_bf16(const bf16* p, int n) { return vf(n > 0 ? to_float(*p) : 0.0f); }
  void store_bf16(bf16* p) const { *p = to_bf16(v); }
  void store_partial_bf16(bf16* p, int n) const {
    if (n > 0) *p = to_bf16(v);
  }
  static vf load_f16(const f16* p) { return vf(to_float(*p)); }
  static vf load_partial_f16(const f16* p, int n) { return vf(n > 0 ? to_float(*p) : 0.0f); }
  void store_f16(f16* p) const { *p = to_f16(v); }
  void store_partial_f16(f16* p, int n) const {
    if (n > 0) *p = to_f16(v);
  }

  vf& operator+=(vf o) {
    v += o.v;
    return *this;
  }
  vf& operator-=(vf o) {
    v -= o.v;
    return *this;
  }
  vf& operator*=(vf o) {
    v *= o.v;
    return *this;
  }
  vf& operator/=(vf o) {
    v /= o.v;
    return *this;
  }
};

EMBER_RT_LAZY
inline vf operator+(vf a, vf b) { return vf(a.v + b.v); }
EMBER_RT_LAZY
inline vf operator-(vf a, vf b) { return vf(a.v - b.v); }
EMBER_RT_LAZY
inline vf operator*(vf a, vf b) { return vf(a.v * b.v); }
EMBER_RT_LAZY
inline vf operator/(vf a, vf b) { return vf(a.v / b.v); }
EMBER_RT_LAZY
inline vf operator-(vf a) { return vf(-a.v); }

EMBER_RT_LAZY
inline vf fma(vf a, vf b, vf c) { return vf(std::fma(a.v, b.v, c.v)); }
EMBER_RT_LAZY
inline vf sqrt(vf a) { return vf(std::sqrt(a.v)); }
EMBER_RT_LAZY
inline vf abs(vf a) { return vf(std::fabs(a.v)); }
EMBER_RT_LAZY
inline vf floor(vf a) { return vf(std::floor(a.v)); }
EMBER_RT_LAZY
inline vf ceil(vf a) { return vf(std::ceil(a.v)); }
EMBER_RT_LAZY
inline vf round(vf a) { return vf(std::nearbyint(a.v)); }

EMBER_RT_LAZY
inline vm lt(vf a, vf b) { return vm{a.v < b.v}; }
EMBER_RT_LAZY
inline vm le(vf a, vf b) { return vm{a.v <= b.v}; }
EMBER_RT_LAZY
inline vm gt(vf a, vf b) { return vm{a.v > b.v}; }
EMBER_RT_LAZY
inline vm ge(vf a, vf b) { return vm{a.v >= b.v}; }
EMBER_RT_LAZY
inline vm eq(vf a, vf b) { return vm{a.v == b.v}; }
EMBER_RT_LAZY
inline vm ne(vf a, vf b) { return vm{a.v != b.v}; }
EMBER_RT_LAZY
inline vf select(vm m, vf a, vf b) { return m.m ? a : b; }
EMBER_RT_LAZY
inline vm logical_and(vm a, vm b) { return vm{a.m && b.m}; }
EMBER_RT_LAZY
inline vm logical_or(vm a, vm b) { return vm{a.m || b.m}; }
EMBER_RT_LAZY
inline vm logical_xor(vm a, vm b) { return vm{a.m != b.m}; }
EMBER_RT_LAZY
inline vm logical_not(vm a) { return vm{!a.m}; }

namespace detail {
EMBER_RT_LAZY
inline vm isnan(vf a) { return vm{a.v != a.v}; }
EMBER_RT_LAZY
inline bool any(vm m) { return m.m; }
EMBER_RT_LAZY
inline vf max_raw(vf a, vf b) { return vf(a.v > b.v ? a.v : b.v); }
EMBER_RT_LAZY
inline vf min_raw(vf a, vf b) { return vf(a.v < b.v ? a.v : b.v); }
EMBER_RT_LAZY
inline vf exp2i(vf n) {
  return vf(bits_float(static_cast<uint32_t>(static_cast<int32_t>(n.v) + 127) << 23));
}
EMBER_RT_LAZY
inline vf split_exponent(vf x, vf& e) {
  const uint32_t u = float_bits(x.v);
  e = vf(static_cast<float>(static_cast<int32_t>(u >> 23) - 127));
  return vf(bits_float((u & 0x007fffffu) | 0x3f800000u));
}
EMBER_RT_LAZY
inline float hsum(vf a) { return a.v; }
EMBER_RT_LAZY
inline float hmax_raw(vf a) { return a.v; }
EMBER_RT_LAZY
inline float hmin_raw(vf a) { return a.v; }
}  // namespace detail

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
