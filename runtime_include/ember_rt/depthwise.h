// Depthwise 2-d convolution, float32: each output channel o of out [N, O, OH, OW] convolves
// one input channel c = o / (O / C) of x [N, C, H, W] with its own KH x KW filter
// (w [O, KH * KW]), any stride, zero padding and dilation.
//
// Each channel plane is computed as one flat 1-d convolution, vectorized along it:
//   1. a band of output rows [r0, r1) reads a band of rows of the zero-padded input; that
//      band is copied into per-thread scratch split into sh * sw "phase" planes,
//        P[a, b][r, q] = x_padded[(r0 + r) * sh + a, q * sw + b],
//      each Wq = OW + (KW - 1) * dw / sw columns wide, so that every tap (kh, kw) of every
//      output (oh, ow) reads P[(kh dh) % sh, (kw dw) % sw][oh - r0 + (kh dh) / sh,
//      ow + (kw dw) / sw]: for a fixed tap, consecutive outputs read consecutive floats at
//      any stride or dilation, and the padding is zeros already in the copy;
//   2. the band's outputs are computed "wide", Wq per row: wide[p] = sum over taps of
//      w[tap] * P_tap[p + offset(tap)] for every p in [0, rows * Wq), in whole vectors, so
//      that no lane is masked and a small map (7 x 7) fills the vectors across its rows
//      instead of wasting most lanes on one short row; the Wq - OW extra outputs per row
//      (and the last vector's excess) are computed into scratch and dropped;
//   3. each output row goes from the wide rows to out: copied, or, with an epilogue
//      (generated code for the bias, batch norm, activation, residual fused after the
//      convolution), written by epi(n * O + o, oh, 0, OW, wide_row), which computes
//      out[n, o, oh, 0 : OW] from wide_row[0 : OW] (the GEMM's epilogue signature, the plane
//      index standing for the batch of row segments). The epilogue reads the rows from
//      scratch rather than from out: reading back a short row just stored to out would wait
//      for that store at every row (a store to memory that the next row's masked vector
//      overlaps cannot be forwarded to its load).
// Work is split across threads by (plane, band of output rows); a band's result does not
// depend on the thread count.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "gemm_base.h"  // NoEpilogue; gemm_detail::scratch, the per-thread scratch memory
#include "kernel.h"
#include "lanes.h"  // detail::evens
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace depthwise_detail {

// Output positions per band: a band's input copy and wide outputs stay in L1 / L2.
constexpr int64_t kBandOutputs = 4096;

struct Geom {
  int64_t N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
  int64_t Wq;      // columns of a phase plane and of a wide output row
  int64_t extra;   // rows a phase plane has beyond the band's output rows
  int64_t rows;    // output rows per band (the last band may have fewer)
  int64_t bands;   // bands per plane
  int64_t taps;    // KH * KW
  int64_t phases;  // sh * sw
};

EMBER_RT_LAZY
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

EMBER_RT_LAZY
inline Geom make_geom(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t OH, int64_t OW,
                      int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                      int64_t dh, int64_t dw) {
  Geom g{N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, 0, 0, 0, 0, 0, 0};
  g.Wq = OW + (KW - 1) * dw / sw;
  g.extra = (KH - 1) * dh / sh;
  const int64_t want = ceil_div(kBandOutputs, g.Wq);
  g.bands = want >= OH ? 1 : ceil_div(OH, want);
  g.rows = ceil_div(OH, g.bands);
  g.taps = KH * KW;
  g.phases = sh * sw;
  return g;
}

// Floats of scratch one band needs: the phase planes with their slack (the last vector and
// the extra columns read past the last plane), then the wide outputs.
EMBER_RT_LAZY
inline int64_t phase_floats(const Geom& g) {
  return g.phases * (g.rows + g.extra) * g.Wq + g.Wq + vf::width;
}
EMBER_RT_LAZY
inline int64_t wide_floats(const Geom& g) { return ceil_div(g.rows * g.Wq, vf::width) * vf::width; }

// dst[q] = src[q] for q in [0, n), in vectors.
EMBER_RT_LAZY
inline void copy_floats(float* dst, const float* src, int64_t n) {
  constexpr int64_t V = vf::width;
  int64_t q = 0;
  for (; q + V <= n; q += V) vf::load(src + q).store(dst + q);
  if (q < n)
    vf::load_partial(src + q, static_cast<int>(n - q))
        .store_partial(dst + q, static_cast<int>(n - q));
}

// The floats p[0], p[2], ..., p[2 * width - 2] among p[0, avail) (0 for the others);
// only p[0, avail) is read.
EMBER_RT_LAZY
inline vf load_evens(const float* p, int64_t avail) {
#if defined(EMBER_RT_AVX512)
  if (avail >= 32) return detail::evens(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16));
  const int a = static_cast<int>(avail);
  return detail::evens(_mm512_maskz_loadu_ps(detail::tail_mask16(a), p),
                       _mm512_maskz_loadu_ps(detail::tail_mask16(a > 16 ? a - 16 : 0), p + 16));
#elif defined(EMBER_RT_AVX2)
  if (avail >= 16) return detail::evens(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8));
  const int a = static_cast<int>(avail);
  return detail::evens(_mm256_maskload_ps(p, detail::tail_mask8(a)),
                       _mm256_maskload_ps(p + 8, detail::tail_mask8(a > 8 ? a - 8 : 0)));
#else
  return vf(avail > 0 ? p[0] : 0.0f);
#endif
}

// dst[q] = src[q * s] for q in [0, n), where only src[0, (n - 1) * s] is read; for s = 1
// and 2 the last vector is stored whole, so dst[n, n + width) may be overwritten by zeros.
EMBER_RT_LAZY
inline void fill_row(float* dst, const float* src, int64_t n, int64_t s) {
  constexpr int64_t V = vf::width;
  int64_t q = 0;
  if (s == 1) {
    for (; q + V <= n; q += V) vf::load(src + q).store(dst + q);
    if (q < n) vf::load_partial(src + q, static_cast<int>(n - q)).store(dst + q);
  } else if (s == 2) {
    for (; q < n; q += V) load_evens(src + 2 * q, 2 * (n - q) - 1).store(dst + q);
  } else {
    for (; q < n; ++q) dst[q] = src[q * s];
  }
}

// Copies the padded input rows that output rows [r0, r0 + rows) read from channel plane xc
// into the phase planes at P. With `borders`, also writes the zeros of the padding (the
// columns and rows outside x) and of the slack after the planes; these depend only on the
// band, so a thread that fills the same band of another plane next skips them. Rows are
// filled in the order of their addresses and fill_row only spills zeros past a row's end:
// into that row's right padding, the next row's left padding or the slack (zeros anyway), or
// into data written after it.
EMBER_RT_LAZY
inline void fill_phases(const Geom& g, const float* xc, int64_t r0, int64_t rows, float* P,
                        bool borders) {
  const int64_t rq = rows + g.extra;
  for (int64_t a = 0; a < g.sh; ++a) {
    for (int64_t b = 0; b < g.sw; ++b) {
      float* plane = P + (a * g.sw + b) * rq * g.Wq;
      // Columns q whose input column q * sw + b - pw lies in [0, W).
      const int64_t lo = g.pw > b ? ceil_div(g.pw - b, g.sw) : 0;
      int64_t hi = ceil_div(g.W + g.pw - b, g.sw);
      hi = hi < g.Wq ? hi : g.Wq;
      hi = hi > lo ? hi : lo;
      for (int64_t r = 0; r < rq; ++r) {
        float* dst = plane + r * g.Wq;
        const int64_t i = (r0 + r) * g.sh + a - g.ph;
        if (i < 0 || i >= g.H || hi == lo) {
          if (borders) std::memset(dst, 0, static_cast<size_t>(g.Wq) * sizeof(float));
          continue;
        }
        if (borders) {
          std::memset(dst, 0, static_cast<size_t>(lo) * sizeof(float));
          std::memset(dst + hi, 0, static_cast<size_t>(g.Wq - hi) * sizeof(float));
        }
        fill_row(dst + lo, xc + i * g.W + (lo * g.sw + b - g.pw), hi - lo, g.sw);
      }
    }
  }
  if (borders)
    std::memset(P + g.phases * rq * g.Wq, 0, static_cast<size_t>(g.Wq + vf::width) * sizeof(float));
}

// U vectors of wide outputs from p: U accumulators, so that U independent multiply-adds
// are in flight per tap (the loops over them unrolled, so that they stay in registers).
template <int U>
inline void wide_block(const float* P, const int64_t* off, const float* wt, int64_t taps, int64_t p,
                       float* wide) {
  constexpr int64_t V = vf::width;
  vf acc[U];
  for (int64_t t = 0; t < taps; ++t) {
    const vf k(wt[t]);
    const float* s = P + off[t] + p;
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) acc[u] = fma(k, vf::load(s + u * V), acc[u]);
  }
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) acc[u].store(wide + p + u * V);
}

// wide[p] = sum over taps t of wt[t] * P[off[t] + p] for p in [0, n) rounded up to whole
// vectors: blocks of 8 vectors, then one block of the rest.
EMBER_RT_LAZY
inline void wide_conv(const float* P, const int64_t* off, const float* wt, int64_t taps, int64_t n,
                      float* wide) {
  constexpr int64_t V = vf::width;
  const int64_t vectors = ceil_div(n, V);
  int64_t v = 0;
  for (; v + 8 <= vectors; v += 8) wide_block<8>(P, off, wt, taps, v * V, wide);
  switch (vectors - v) {
    case 7: wide_block<7>(P, off, wt, taps, v * V, wide); break;
    case 6: wide_block<6>(P, off, wt, taps, v * V, wide); break;
    case 5: wide_block<5>(P, off, wt, taps, v * V, wide); break;
    case 4: wide_block<4>(P, off, wt, taps, v * V, wide); break;
    case 3: wide_block<3>(P, off, wt, taps, v * V, wide); break;
    case 2: wide_block<2>(P, off, wt, taps, v * V, wide); break;
    case 1: wide_block<1>(P, off, wt, taps, v * V, wide); break;
    default: break;
  }
}

template <class Epi>
inline void run(const LaunchContext* ctx, const float* x, const float* w, float* out, const Geom& g,
                const Epi& epi) {
  const int64_t planes = g.N * g.O;
  const int64_t items = planes * g.bands;
  if (items <= 0) return;
  const int64_t mult = g.O / g.C;
  const double work = static_cast<double>(planes) * static_cast<double>(g.OH * g.Wq) *
                      static_cast<double>(2 * g.taps + 2);
  parallel_for(ctx, items, work, [&](int64_t begin, int64_t end) {
    float* P = gemm_detail::scratch(ctx, gemm_detail::kSlotA, static_cast<size_t>(phase_floats(g)));
    float* wide =
        gemm_detail::scratch(ctx, gemm_detail::kSlotB, static_cast<size_t>(wide_floats(g)));
    std::vector<int64_t> off(static_cast<size_t>(g.taps));  // each tap's offset into P
    int64_t filled_band = -1;                               // the band whose borders P holds
    int64_t rq_offsets = -1;  // the band height the offsets were computed for
    // item = (n * O + o) * bands + band, stepped without divisions.
    int64_t plane = begin / g.bands, band = begin % g.bands;
    int64_t n = plane / g.O, o = plane % g.O;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r0 = band * g.rows;
      const int64_t rows = r0 + g.rows <= g.OH ? g.rows : g.OH - r0;
      const int64_t rq = rows + g.extra;
      if (rq != rq_offsets) {
        for (int64_t kh = 0; kh < g.KH; ++kh) {
          for (int64_t kw = 0; kw < g.KW; ++kw) {
            const int64_t dy = kh * g.dh, dx = kw * g.dw;
            const int64_t phase = (dy % g.sh) * g.sw + dx % g.sw;
            off[kh * g.KW + kw] = phase * rq * g.Wq + (dy / g.sh) * g.Wq + dx / g.sw;
          }
        }
        rq_offsets = rq;
      }
      const float* xc = x + (n * g.C + (mult == 1 ? o : o / mult)) * g.H * g.W;
      fill_phases(g, xc, r0, rows, P, band != filled_band);
      filled_band = band;
      wide_conv(P, off.data(), w + o * g.taps, g.taps, rows * g.Wq, wide);
      float* dst = out + plane * g.OH * g.OW;
      for (int64_t r = 0; r < rows; ++r) {
        if constexpr (std::is_same_v<Epi, NoEpilogue>) {
          copy_floats(dst + (r0 + r) * g.OW, wide + r * g.Wq, g.OW);
        } else {
          epi(plane, r0 + r, 0, g.OW, wide + r * g.Wq);
        }
      }
      if (++band == g.bands) {
        band = 0;
        ++plane;
        if (++o == g.O) o = 0, ++n;
      }
    }
  });
}

}  // namespace depthwise_detail
}  // namespace EMBER_RT_ISA_NS

namespace lib {

// out [N, O, OH, OW] = the depthwise convolution of x [N, C, H, W] with w [O, KH * KW]
// (O a multiple of C: output channel o reads input channel o / (O / C)), stride (sh, sw),
// zero padding (ph, pw), dilation (dh, dw). With an epilogue, out is written by it:
// epi(n * O + o, oh, 0, OW, values) for each output row, values[0 : OW] the convolution's.
template <class Epi = NoEpilogue>
inline void depthwise_conv2d(const LaunchContext* ctx, const float* x, const float* w, float* out,
                             int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t OH,
                             int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t ph,
                             int64_t pw, int64_t dh, int64_t dw, const Epi& epi = Epi{}) {
  const depthwise_detail::Geom g =
      depthwise_detail::make_geom(N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw);
  depthwise_detail::run(ctx, x, w, out, g, epi);
}

}  // namespace lib
}  // namespace ember_rt
