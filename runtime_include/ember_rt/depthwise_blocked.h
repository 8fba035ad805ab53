// Depthwise 2-d convolution on the channel-blocked layout, float32, channel multiplier 1:
// output channel c of out convolves input channel c of x with its own KH x KW filter, any
// stride, zero padding and dilation.
//
// Layouts (B = vf::width lanes: 16 with AVX-512, 8 with AVX2, 1 in the portable fallback;
// CB = ceil(C / B)):
//   x    [N, CB, H, W, B]    channel c at block c / B, lane c % B; lanes past C zero
//   w    [C, KH * KW]        the convolution's weight as it is (plain)
//   out  [N, CB, OH, OW, B]  lanes past C hold zeros (with no epilogue)
//
// Design: the B channels of a block are the vector's lanes, so every lane does useful work
// whatever the map's size (a 7 x 7 map wastes none), and a tap of an output pixel is one
// multiply-add of the input pixel's vector by the tap's weight vector:
//   - Items are (channel block, image, band of output rows); a thread keeps the block's
//     weights transposed into tap vectors (w[cb * B + lane, tap] gathered, zero past C) and
//     fills them again only when the block changes.
//   - Padding: with padding, the input rows a band reads are copied into per-thread scratch
//     with zero rows and columns around them, so that no load is checked; without padding x
//     is read in place.
//   - Register blocking: an output row is cut into blocks of at most kMaxUR outputs (equal
//     sizes), each summed in its own accumulator over the taps (kh, kw); the stride is a
//     template parameter (1, 2, or any at run time).
//   - Epilogue: each finished block of outputs is passed to it in place, as conv_blocked.h
//     does: epi(n * CB + cb, oh, ow0, len, &out[n, cb, oh, ow0, 0]), len outputs of B floats;
//     a ChannelAffine (channel_affine.h) is applied to the accumulators before the store.
// Each output's sum is formed in the same order (taps in row-major order) whatever the thread
// count and the blocking.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "channel_affine.h"
#include "gemm_base.h"  // NoEpilogue; gemm_detail::scratch, the per-thread scratch memory
#include "kernel.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace depthwise_blocked_detail {

constexpr int64_t B = vf::width;

// The largest row block: kMaxUR accumulators, with room for the weight vector and the loads.
#if defined(EMBER_RT_AVX512)
constexpr int kMaxUR = 14;
#elif defined(EMBER_RT_AVX2)
constexpr int kMaxUR = 8;
#else
constexpr int kMaxUR = 4;
#endif

// Output pixels per band of rows: the band's padded input copy stays in the level-2 cache.
constexpr int64_t kBandOutputs = 1024;

EMBER_RT_LAZY
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// v[l] = p[l * stride] for l < n, 0 for the lanes past n (not read).
EMBER_RT_LAZY
inline vf load_strided(const float* p, int64_t stride, int n) {
#if defined(EMBER_RT_AVX512)
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(stride)));
  return vf(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), detail::tail_mask16(n), idx, p, 4));
#elif defined(EMBER_RT_AVX2)
  const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32(static_cast<int>(stride)));
  return vf(_mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, idx,
                                     _mm256_castsi256_ps(detail::tail_mask8(n)), 4));
#else
  (void)stride;
  return vf(n > 0 ? p[0] : 0.0f);
#endif
}

// UR consecutive outputs of one row: out[u] = sum over taps (kh, kw) of
// x[kh * x_kh + kw * x_kw + u * xu] * wt[(kh * KW + kw) * B] (vectors of B lanes).
// With `affine`, the outputs are channels ch0 + lane, mapped before they are stored (its
// residual read at res, laid out as out).
template <int UR, int S>
inline void block(const float* x, int64_t x_kh, int64_t x_kw, int64_t x_u, const float* wt,
                  int64_t KH, int64_t KW, float* out, const ChannelAffine* affine, int64_t ch0,
                  const float* res) {
  const int64_t xu = S == 0 ? x_u : S * B;
  vf acc[UR];
  for (int64_t kh = 0; kh < KH; ++kh) {
    const float* xr = x + kh * x_kh;
    const float* wr = wt + kh * KW * B;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const vf wv = vf::load(wr + kw * B);
      const float* xp = xr + kw * x_kw;
#pragma GCC unroll 16
      for (int u = 0; u < UR; ++u) acc[u] = fma(vf::load(xp + u * xu), wv, acc[u]);
    }
  }
  if (affine != nullptr) {
    const ChannelAffineLanes f(*affine, ch0);
    if (!f.partial()) {
      if (res == nullptr) {
#pragma GCC unroll 16
        for (int u = 0; u < UR; ++u) acc[u] = f(acc[u]);
      } else {
#pragma GCC unroll 16
        for (int u = 0; u < UR; ++u) acc[u] = f(acc[u], vf::load(res + u * B));
      }
    } else {
      const auto keep = f.channel_lanes();
      for (int u = 0; u < UR; ++u) {
        const vf v = res == nullptr ? f(acc[u]) : f(acc[u], vf::load(res + u * B));
        acc[u] = select(keep, v, vf(0.0f));
      }
    }
  }
#pragma GCC unroll 16
  for (int u = 0; u < UR; ++u) acc[u].store(out + u * B);
}

using BlockFn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, int64_t, int64_t,
                         float*, const ChannelAffine*, int64_t, const float*);

template <int S, int... U>
inline const BlockFn* table_of(std::integer_sequence<int, U...>) {
  static const BlockFn t[] = {&block<U + 1, S>...};
  return t;
}
// Compiled in pieces.h for generated modules (EMBER_RT_GEMM_EXTERN), as conv_blocked's.
EMBER_RT_LAZY
inline BlockFn kernel_of(int64_t ur, int64_t sw) {
  const auto seq = std::make_integer_sequence<int, kMaxUR>{};
  const BlockFn* t = sw == 1 ? table_of<1>(seq) : sw == 2 ? table_of<2>(seq) : table_of<0>(seq);
  return t[ur - 1];
}
#if defined(EMBER_RT_GEMM_EXTERN)
[[gnu::visibility("hidden")]] BlockFn kernel(int64_t ur, int64_t sw);
#else
EMBER_RT_LAZY
inline BlockFn kernel(int64_t ur, int64_t sw) { return kernel_of(ur, sw); }
#endif

struct Geom {
  int64_t N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
  int64_t CB;
  int64_t rows;   // output rows per band (the last band may have fewer)
  int64_t bands;  // bands per plane
  bool padded;    // the band's input rows go through the zero-padded scratch copy
  int64_t Wp;     // columns of a padded row: (OW - 1) * sw + (KW - 1) * dw + 1
};

EMBER_RT_LAZY
inline Geom make_geom(int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW,
                      int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                      int64_t dh, int64_t dw) {
  Geom g{N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, 0, 0, 0, false, 0};
  g.CB = ceil_div(C, B);
  const int64_t want = ceil_div(kBandOutputs, OW);
  g.rows = want >= OH ? OH : want;
  g.bands = ceil_div(OH, g.rows);
  g.Wp = (OW - 1) * sw + (KW - 1) * dw + 1;
  // Without padding every tap of every output lies inside x (OH and OW say so); a caller's
  // OH or OW that reads past x takes the checked copy too.
  g.padded = ph > 0 || pw > 0 || g.Wp > W || (OH - 1) * sh + (KH - 1) * dh + 1 > H;
  return g;
}

// Input rows a band of `rows` output rows reads.
EMBER_RT_LAZY
inline int64_t band_rows(const Geom& g, int64_t rows) {
  return (rows - 1) * g.sh + (g.KH - 1) * g.dh + 1;
}

// dst[r][q][lane] = x plane's [r0 * sh - ph + r, q - pw, lane], zero outside x, for the R
// input rows of a band.
EMBER_RT_LAZY
inline void fill_band(const Geom& g, const float* plane, int64_t r0, int64_t R, float* dst) {
  const int64_t row = g.Wp * B;
  const int64_t qlo = g.pw < g.Wp ? g.pw : g.Wp;
  int64_t qhi = g.W + g.pw < g.Wp ? g.W + g.pw : g.Wp;
  qhi = qhi > qlo ? qhi : qlo;
  for (int64_t r = 0; r < R; ++r) {
    float* d = dst + r * row;
    const int64_t ih = r0 * g.sh - g.ph + r;
    if (ih < 0 || ih >= g.H) {
      std::memset(d, 0, static_cast<size_t>(row) * sizeof(float));
      continue;
    }
    const float* s = plane + (ih * g.W + (qlo - g.pw)) * B;
    std::memset(d, 0, static_cast<size_t>(qlo * B) * sizeof(float));
    std::memcpy(d + qlo * B, s, static_cast<size_t>((qhi - qlo) * B) * sizeof(float));
    std::memset(d + qhi * B, 0, static_cast<size_t>((g.Wp - qhi) * B) * sizeof(float));
  }
}

template <class Epi>
inline void run(const LaunchContext* ctx, const float* x, const float* w, float* out, const Geom& g,
                const Epi& epi) {
  const int64_t items = g.CB * g.N * g.bands;
  if (items <= 0) return;
  const int64_t taps = g.KH * g.KW;
  const double work =
      2.0 * static_cast<double>(g.N * g.CB * B * g.OH * g.OW) * static_cast<double>(taps);
  // Row blocks: OW outputs in nblk blocks of equal size (the first OW % nblk one longer).
  const int64_t nblk = ceil_div(g.OW, kMaxUR), ur_short = g.OW / nblk;
  const BlockFn short_block = kernel(ur_short, g.sw);
  const BlockFn long_block = g.OW % nblk ? kernel(ur_short + 1, g.sw) : short_block;
  const ChannelAffine* affine = nullptr;
  const float* res = nullptr;  // the affine's residual, laid out as out
  if constexpr (std::is_same_v<Epi, ChannelAffine>) affine = &epi, res = epi.residual;
  parallel_for(ctx, items, work, [&](int64_t begin, int64_t end) {
    // The block's weights as tap vectors, and the padded band.
    float* wt = gemm_detail::scratch(ctx, gemm_detail::kSlotB, static_cast<size_t>(taps * B));
    float* band = g.padded
                      ? gemm_detail::scratch(ctx, gemm_detail::kSlotA,
                                             static_cast<size_t>(band_rows(g, g.rows) * g.Wp * B))
                      : nullptr;
    int64_t held_cb = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t cb = item / (g.N * g.bands);
      const int64_t n = item / g.bands % g.N, bi = item % g.bands;
      if (cb != held_cb) {
        const int lanes = static_cast<int>(g.C - cb * B < B ? g.C - cb * B : B);
        for (int64_t t = 0; t < taps; ++t)
          load_strided(w + cb * B * taps + t, taps, lanes).store(wt + t * B);
        held_cb = cb;
      }
      const int64_t r0 = bi * g.rows;
      const int64_t rows = r0 + g.rows <= g.OH ? g.rows : g.OH - r0;
      const float* plane = x + (n * g.CB + cb) * g.H * g.W * B;
      const float* src;
      int64_t row_floats;
      if (g.padded) {
        fill_band(g, plane, r0, band_rows(g, rows), band);
        src = band, row_floats = g.Wp * B;
      } else {
        src = plane + r0 * g.sh * g.W * B, row_floats = g.W * B;
      }
      float* oplane = out + (n * g.CB + cb) * g.OH * g.OW * B;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t oh = r0 + r;
        const float* xr = src + r * g.sh * row_floats;
        float* orow = oplane + oh * g.OW * B;
        int64_t ow0 = 0;
        for (int64_t blk = 0; blk < nblk; ++blk) {
          const bool longer = blk < g.OW % nblk;
          const int64_t ur = ur_short + (longer ? 1 : 0);
          (longer ? long_block : short_block)(
              xr + ow0 * g.sw * B, g.dh * row_floats, g.dw * B, g.sw * B, wt, g.KH, g.KW,
              orow + ow0 * B, affine, cb * B,
              res == nullptr ? nullptr : res + (orow - out) + ow0 * B);
          if constexpr (!std::is_same_v<Epi, NoEpilogue> && !std::is_same_v<Epi, ChannelAffine>)
            epi(n * g.CB + cb, oh, ow0, ur, orow + ow0 * B);
          ow0 += ur;
        }
      }
    }
  });
}

}  // namespace depthwise_blocked_detail
}  // namespace EMBER_RT_ISA_NS

namespace lib {

// out [N, CB, OH, OW, B] = the depthwise convolution (channel multiplier 1) of x
// [N, CB, H, W, B] (lanes past C zero) with w [C, KH * KW], stride (sh, sw), zero padding
// (ph, pw), dilation (dh, dw); B = vf::width. With an epilogue, each finished row segment is
// passed to it in place: epi(n * CB + cb, oh, ow0, len, &out[n, cb, oh, ow0, 0]) (len outputs
// of B floats); a ChannelAffine is applied in registers instead.
template <class Epi = NoEpilogue>
inline void depthwise_conv2d_blocked(const LaunchContext* ctx, const float* x, const float* w,
                                     float* out, int64_t N, int64_t C, int64_t H, int64_t W,
                                     int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                                     int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                                     const Epi& epi = Epi{}) {
  if (N <= 0 || C <= 0 || OH <= 0 || OW <= 0) return;
  const depthwise_blocked_detail::Geom g =
      depthwise_blocked_detail::make_geom(N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw);
  depthwise_blocked_detail::run(ctx, x, w, out, g, epi);
}

// depthwise_conv2d_blocked as a Call stage of a graph's kernel runs it (the
// conv2d_depthwise_blocked operator): `block` is the channel block of its buffers' layout;
// another block (the kernel compiled for another ISA) is reported as an error and nothing is
// computed. A graph's fused epilogue is called on each pixel of out viewed [N, CB, OH * OW,
// B], as conv2d_blocked_layout's: epi(n * CB + cb, oh * OW + ow, 0, B, p); a ChannelAffine is
// applied in registers.
template <class Epi = NoEpilogue>
inline void depthwise_conv2d_blocked_layout(const LaunchContext* ctx, const float* x,
                                            const float* w, float* out, int64_t N, int64_t C,
                                            int64_t H, int64_t W, int64_t OH, int64_t OW,
                                            int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                                            int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                                            int64_t block, const Epi& epi = Epi{}) {
  if (block != vf::width) {
    report_error(ctx, KernelError::kLayout, "depthwise_conv2d_blocked", block, vf::width);
    return;
  }
  if constexpr (std::is_same_v<Epi, NoEpilogue> || std::is_same_v<Epi, ChannelAffine>) {
    depthwise_conv2d_blocked(ctx, x, w, out, N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw,
                             epi);
  } else {
    // A copy of the epilogue per segment: its pointers stay in registers over the pixels.
    const auto rows = [&epi, OW](int64_t plane, int64_t oh, int64_t ow0, int64_t len, float* p) {
      const Epi e = epi;
      for (int64_t i = 0; i < len; ++i)
        e(plane, oh * OW + ow0 + i, 0, vf::width, p + i * vf::width);
    };
    depthwise_conv2d_blocked(ctx, x, w, out, N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw,
                             rows);
  }
}

}  // namespace lib
}  // namespace ember_rt
