// Layout conversions (ember/ir/layout.h) of float32 tensors as library routines: the kernel of
// a to_layout that only copies (no fused arithmetic) between plain and channel-blocked or
// channels-last memory. Both are transposes of [rows, S] matrices (S = the spatial size):
//   plain [N, C, S] <-> blocked [N, ceil(C / B), S, B]: per (n, channel block), [B, S] <-> [S, B]
//     (the lanes past C written as zeros);
//   plain [N, C, S] <-> channels-last [N, S, C]: per n, [C, S] <-> [S, C].
// They run in tiles of W x W (W = 16 with AVX-512, 8 with AVX2) transposed in registers, so
// both sides are read and written in whole vectors along their contiguous dimension; tiles
// cut by the matrix's edges use masked loads and stores. Without a vector ISA (or for another
// block) the same tiles run as scalar loops.
#pragma once

#include <cstdint>

#include "isa.h"
#include "kernel.h"
#include "lazy.h"

#if defined(EMBER_RT_AVX512) || defined(EMBER_RT_AVX2)
#include <immintrin.h>
#endif

namespace ember_rt {
namespace layout_detail {

// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols of a tile of at most T x T;
// with `fill`, dst[j * ldd + i] = 0 for rows <= i < T too (a blocked buffer's padding lanes).
template <int T>
inline void tile_scalar(const float* src, int64_t lds, float* dst, int64_t ldd, int rows, int cols,
                        bool fill) {
  const int width = fill ? T : rows;
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < width; ++i) dst[j * ldd + i] = i < rows ? src[i * lds + j] : 0.0f;
}

#if defined(EMBER_RT_AVX512)
// Inlined always and unrolled: otherwise r and t live in memory (GCC at -O2 kept the loops,
// and a pack of A by these tiles ran 3x slower than with them in registers).
EMBER_RT_LAZY
[[gnu::always_inline]] inline void transpose16(__m512* r) {
  __m512 t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  // Each 128-bit quarter of r[i] now holds 4 columns' values of 4 rows; gather the quarters.
#pragma GCC unroll 16
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
  }
}

// (Inlined, with every loop over constant indices, so that r stays in registers: the GEMM's
// pack of a row-major A runs on these tiles too, gemm_kernels.h pack_a_transposed.)
EMBER_RT_LAZY
[[gnu::always_inline]] inline void tile16(const float* src, int64_t lds, float* dst, int64_t ldd,
                                          int rows, int cols, bool fill) {
  __m512 r[16];
  if (rows == 16 && cols == 16) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * lds);
    transpose16(r);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + j * ldd, r[j]);
    return;
  }
  const __mmask16 cm = static_cast<__mmask16>((1u << cols) - 1);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(cm, src + i * lds) : _mm512_setzero_ps();
  transpose16(r);
  const __mmask16 rm =
      fill ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << rows) - 1);
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j)
    if (j < cols) _mm512_mask_storeu_ps(dst + j * ldd, rm, r[j]);
}
#endif

#if defined(EMBER_RT_AVX512) || defined(EMBER_RT_AVX2)
EMBER_RT_LAZY
inline void transpose8(__m256* r) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 s[8];
  for (int i = 0; i < 8; i += 4) {
    s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
  }
}

EMBER_RT_LAZY
inline __m256i mask8(int n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes);
}

EMBER_RT_LAZY
inline void tile8(const float* src, int64_t lds, float* dst, int64_t ldd, int rows, int cols,
                  bool fill) {
  __m256 r[8];
  if (rows == 8 && cols == 8) {
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    transpose8(r);
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + j * ldd, r[j]);
    return;
  }
  // Masked loads and stores only where a row or column is partial: AMD's masked stores are
  // microcoded (about ten times a store), and a 3-channel image (a CNN's input) has only
  // partial tiles.
  const __m256i cm = mask8(cols);
  for (int i = 0; i < 8; ++i)
    r[i] = i >= rows   ? _mm256_setzero_ps()
           : cols == 8 ? _mm256_loadu_ps(src + i * lds)
                       : _mm256_maskload_ps(src + i * lds, cm);
  transpose8(r);
  if (fill || rows == 8) {
    for (int j = 0; j < cols; ++j) _mm256_storeu_ps(dst + j * ldd, r[j]);
  } else {
    const __m256i rm = mask8(rows);
    for (int j = 0; j < cols; ++j) _mm256_maskstore_ps(dst + j * ldd, rm, r[j]);
  }
}
#endif

// The widest tile this build transposes in registers (1: scalar tiles of 16).
#if defined(EMBER_RT_AVX512)
constexpr int kTile = 16;
#elif defined(EMBER_RT_AVX2)
constexpr int kTile = 8;
#else
constexpr int kTile = 16;
#endif

// One tile of at most T x T (T = 16 or 8), in registers where the ISA has them.
template <int T>
inline void tile(const float* src, int64_t lds, float* dst, int64_t ldd, int rows, int cols,
                 bool fill) {
#if defined(EMBER_RT_AVX512)
  if constexpr (T == 16) return tile16(src, lds, dst, ldd, rows, cols, fill);
#endif
#if defined(EMBER_RT_AVX512) || defined(EMBER_RT_AVX2)
  if constexpr (T == 8) return tile8(src, lds, dst, ldd, rows, cols, fill);
#endif
  tile_scalar<T>(src, lds, dst, ldd, rows, cols, fill);
}

// Transposes `count` matrices [R, S] (src, row stride lds, matrix stride ms) into [S, R]
// (dst, row stride ldd, matrix stride md): dst[m][s][r] = src[m][r][s].
template <int T>
inline void transpose_all(const LaunchContext* ctx, const float* src, float* dst, int64_t count,
                          int64_t R, int64_t S, int64_t lds, int64_t ldd, int64_t ms, int64_t md) {
  const int64_t rt = (R + T - 1) / T, st = (S + T - 1) / T;
  const double work =
      static_cast<double>(count) * static_cast<double>(rt * T) * static_cast<double>(st * T) * 2.0;
  parallel_for(ctx, count * rt * st, work, [&](int64_t begin, int64_t end) {
    for (int64_t it = begin; it < end; ++it) {
      const int64_t m = it / (rt * st), r0 = (it / st) % rt * T, s0 = it % st * T;
      const int rows = static_cast<int>(R - r0 < T ? R - r0 : T);
      const int cols = static_cast<int>(S - s0 < T ? S - s0 : T);
      tile<T>(src + m * ms + r0 * lds + s0, lds, dst + m * md + s0 * ldd + r0, ldd, rows, cols,
              false);
    }
  });
}

}  // namespace layout_detail

namespace lib {

// plain [N, C, S] -> [N, ceil(C / block), S, block] (channels past C zero).
EMBER_RT_LAZY
inline void layout_plain_to_blocked(const LaunchContext* ctx, const float* src, float* dst,
                                    int64_t N, int64_t C, int64_t S, int64_t block) {
  using namespace layout_detail;
  const int64_t CB = (C + block - 1) / block;
  auto run = [&](auto t) {
    constexpr int T = decltype(t)::value;
    // Per (n, cb): the block's channels [bc, S] (row stride S) -> [S, block].
    const int64_t count = N * CB;
    const int64_t st = (S + T - 1) / T;
    const double work = static_cast<double>(count) * static_cast<double>(st * T * T) * 2.0;
    parallel_for(ctx, count * st, work, [&](int64_t begin, int64_t end) {
      for (int64_t it = begin; it < end; ++it) {
        const int64_t m = it / st, s0 = it % st * T, n = m / CB, cb = m % CB;
        const int64_t c0 = cb * block;
        const int rows = static_cast<int>(C - c0 < block ? C - c0 : block);
        const int cols = static_cast<int>(S - s0 < T ? S - s0 : T);
        tile<T>(src + (n * C + c0) * S + s0, S, dst + (m * S + s0) * block, block, rows, cols,
                true);
      }
    });
  };
  if (block == kTile) return run(std::integral_constant<int, kTile>{});
  if (block == 8) return run(std::integral_constant<int, 8>{});
  // Another block: scalar loops.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < CB; ++cb) {
      const int64_t c0 = cb * block, bc = C - c0 < block ? C - c0 : block;
      float* d = dst + (n * CB + cb) * S * block;
      for (int64_t s = 0; s < S; ++s)
        for (int64_t l = 0; l < block; ++l)
          d[s * block + l] = l < bc ? src[(n * C + c0 + l) * S + s] : 0.0f;
    }
}

// [N, ceil(C / block), S, block] -> plain [N, C, S] (the padding lanes are not read).
EMBER_RT_LAZY
inline void layout_blocked_to_plain(const LaunchContext* ctx, const float* src, float* dst,
                                    int64_t N, int64_t C, int64_t S, int64_t block) {
  using namespace layout_detail;
  const int64_t CB = (C + block - 1) / block;
  auto run = [&](auto t) {
    constexpr int T = decltype(t)::value;
    // Per (n, cb): [S, block] (row stride block) -> the block's channels [bc, S].
    const int64_t count = N * CB;
    const int64_t st = (S + T - 1) / T;
    const double work = static_cast<double>(count) * static_cast<double>(st * T * T) * 2.0;
    parallel_for(ctx, count * st, work, [&](int64_t begin, int64_t end) {
      for (int64_t it = begin; it < end; ++it) {
        const int64_t m = it / st, s0 = it % st * T, n = m / CB, cb = m % CB;
        const int64_t c0 = cb * block;
        const int bc = static_cast<int>(C - c0 < block ? C - c0 : block);
        const int rows = static_cast<int>(S - s0 < T ? S - s0 : T);
        tile<T>(src + (m * S + s0) * block, block, dst + (n * C + c0) * S + s0, S, rows, bc, false);
      }
    });
  };
  if (block == kTile) return run(std::integral_constant<int, kTile>{});
  if (block == 8) return run(std::integral_constant<int, 8>{});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s)
        dst[(n * C + c) * S + s] = src[((n * CB + c / block) * S + s) * block + c % block];
}

// plain [N, C, S] -> channels-last [N, S, C].
EMBER_RT_LAZY
inline void layout_plain_to_channels_last(const LaunchContext* ctx, const float* src, float* dst,
                                          int64_t N, int64_t C, int64_t S) {
  layout_detail::transpose_all<layout_detail::kTile>(ctx, src, dst, N, C, S, S, C, C * S, C * S);
}

// channels-last [N, S, C] -> plain [N, C, S].
EMBER_RT_LAZY
inline void layout_channels_last_to_plain(const LaunchContext* ctx, const float* src, float* dst,
                                          int64_t N, int64_t C, int64_t S) {
  layout_detail::transpose_all<layout_detail::kTile>(ctx, src, dst, N, S, C, C, S, C * S, C * S);
}

}  // namespace lib
}  // namespace ember_rt
