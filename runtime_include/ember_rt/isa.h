// Instruction-set selection for the runtime headers.
//
// The generated code is compiled with explicit ISA flags; the predefined macros those flags
// set choose one of three implementations of ember_rt::vf:
//   EMBER_RT_AVX512  __AVX512F__ defined: 16 floats in a zmm register, __mmask16 masks.
//   EMBER_RT_AVX2    __AVX2__ and __FMA__: 8 floats in a ymm register, vector masks.
//   EMBER_RT_SCALAR  anything else: width 1, plain C++ (correct everywhere, not fast).
// Exactly one of them is defined to 1.
//
// Testing hook: defining EMBER_RT_EMULATE_AVX512 before including (with SIMDe's headers on the
// include path) builds the AVX-512 implementation on any x86-64 machine, every _mm512_*
// intrinsic being emulated by SIMDe. It exists only so the AVX-512 code path can be checked
// on machines without AVX-512; generated code never sets it.
#pragma once

#include <cstdint>
#include <cstring>

#include "lazy.h"

#if defined(EMBER_RT_EMULATE_AVX512)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#define EMBER_RT_AVX512 1
#define EMBER_RT_AVX512_BW_VL 1
#elif defined(__AVX512F__)
// GCC 12's AVX-512 intrinsics initialize their "undefined" operands from themselves, which
// -Wuninitialized reports once inlined (GCC bug 105593); silence it for the header's lines.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define EMBER_RT_AVX512 1
#if defined(__AVX512BW__) && defined(__AVX512VL__)
#define EMBER_RT_AVX512_BW_VL 1  // 16-bit masked loads/stores for the half-precision tails
#endif
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define EMBER_RT_AVX2 1
#else
#define EMBER_RT_SCALAR 1
#endif

// Everything in ember_rt's headers lives in an inline namespace named after the ISA
// (ember_rt::isa_avx2::vf, spelled ember_rt::vf), so shared objects built with different
// flags never share a symbol for code that differs between them.
#if defined(EMBER_RT_EMULATE_AVX512)
#define EMBER_RT_ISA_NS isa_avx512_emulated
#elif defined(EMBER_RT_AVX512)
#define EMBER_RT_ISA_NS isa_avx512
#elif defined(EMBER_RT_AVX2)
#define EMBER_RT_ISA_NS isa_avx2
#else
#define EMBER_RT_ISA_NS isa_scalar
#endif

// Hardware fused multiply-add for scalar float code (std::fma is a slow library call without it).
#if defined(__FMA__) || defined(__AVX512F__) || defined(EMBER_RT_EMULATE_AVX512)
#define EMBER_RT_HAS_FMA 1
#endif

#if defined(EMBER_RT_EMULATE_AVX512)
// SIMDe lacks a few AVX-512F intrinsics; these stand-ins do the same thing lane by lane
// (the half conversion uses the host's F16C, so the emulated path is checked against real
// hardware rounding).
namespace ember_rt::emu {
EMBER_RT_LAZY
inline __m256i cvtepi32_epi16(__m512i a) {
  int32_t in[16];
  uint16_t out[16];
  std::memcpy(in, &a, sizeof in);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<uint16_t>(in[i]);
  __m256i r;
  std::memcpy(&r, out, sizeof r);
  return r;
}
EMBER_RT_LAZY
inline __m256i cvtps_ph(__m512 a) {
  float in[16];
  std::memcpy(in, &a, sizeof in);
  ::__m128i lo = ::_mm256_cvtps_ph(::_mm256_loadu_ps(in), 0);
  ::__m128i hi = ::_mm256_cvtps_ph(::_mm256_loadu_ps(in + 8), 0);
  __m256i r;
  std::memcpy(&r, &lo, 16);
  std::memcpy(reinterpret_cast<char*>(&r) + 16, &hi, 16);
  return r;
}
// SIMDe's masked loads read, and its masked stores write, the whole vector; real AVX-512
// touches only the selected lanes. Replace them with lane-exact versions.
template <class T, class V, int N>
inline V maskz_load(unsigned k, const void* p) {
  T lane[N] = {};
  for (int i = 0; i < N; ++i)
    if (k >> i & 1u) std::memcpy(&lane[i], static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  V r;
  std::memcpy(&r, lane, sizeof r);
  return r;
}
template <class T, class V, int N>
inline void mask_store(void* p, unsigned k, V v) {
  T lane[N];
  std::memcpy(lane, &v, sizeof lane);
  for (int i = 0; i < N; ++i)
    if (k >> i & 1u) std::memcpy(static_cast<char*>(p) + i * sizeof(T), &lane[i], sizeof(T));
}
// SIMDe's roundscale ignores the rounding mode here; only scale 0 is used by ember_rt.
EMBER_RT_LAZY
inline __m512 roundscale0(__m512 a, int imm) {
  float x[16];
  std::memcpy(x, &a, sizeof x);
  for (float& v : x) {
    switch (imm & 3) {
      case 0: v = __builtin_nearbyintf(v); break;
      case 1: v = __builtin_floorf(v); break;
      case 2: v = __builtin_ceilf(v); break;
      default: v = __builtin_truncf(v); break;
    }
  }
  __m512 r;
  std::memcpy(&r, x, sizeof r);
  return r;
}
}  // namespace ember_rt::emu
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps(a, imm) (::ember_rt::emu::roundscale0((a), (imm)))
#undef _mm512_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#undef _mm256_maskz_loadu_epi16
#undef _mm256_mask_storeu_epi16
#define _mm512_maskz_loadu_ps(k, p) (::ember_rt::emu::maskz_load<float, __m512, 16>((k), (p)))
#define _mm512_mask_storeu_ps(p, k, v) \
  (::ember_rt::emu::mask_store<float, __m512, 16>((p), (k), (v)))
#define _mm256_maskz_loadu_epi16(k, p) \
  (::ember_rt::emu::maskz_load<uint16_t, __m256i, 16>((k), (p)))
#define _mm256_mask_storeu_epi16(p, k, v) \
  (::ember_rt::emu::mask_store<uint16_t, __m256i, 16>((p), (k), (v)))
#define EMBER_RT_CVTEPI32_EPI16(a) ::ember_rt::emu::cvtepi32_epi16(a)
#define EMBER_RT_CVTPS_PH(a) ::ember_rt::emu::cvtps_ph(a)
#elif defined(EMBER_RT_AVX512)
#define EMBER_RT_CVTEPI32_EPI16(a) _mm512_cvtepi32_epi16(a)
#define EMBER_RT_CVTPS_PH(a) _mm512_cvtps_ph((a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#endif
