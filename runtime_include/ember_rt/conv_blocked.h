// Direct 2-d convolution on the channel-blocked layout, float32, groups 1.
//
// Layouts (B = vf::width lanes: 16 with AVX-512, 8 with AVX2, 1 in the portable fallback;
// CB = ceil(C / B), OB = ceil(O / B)):
//   x    [N, CB, H, W, B]          channel c at block c / B, lane c % B; lanes past C zero;
//                                  or plain [N, C, H, W] (x_plain: a network's first
//                                  convolution on its 3-channel image, which blocked would be
//                                  B / 3 times its size and a conversion of its own)
//   w    [OB, CB, KH, KW, B_in, B_out]  from conv_blocked_prepare (once per weight): the B
//                                  input lanes of a tap, each a vector of B output channels;
//                                  channels past O or C zero
//   out  [N, OB, OH, OW, B]        lanes past O hold zeros (with no epilogue)
// Any kernel size, stride, zero padding and dilation.
//
// Design:
//   - Register blocking. An output row is cut into blocks of UR consecutive outputs; a block
//     computes UR outputs x NOC output-channel vectors in UR * NOC accumulators (AVX-512: 14 x
//     2 or 7 x 4, 28 of the 32 registers; AVX2: 6 x 2 of 16). Per input channel of a tap it
//     loads NOC weight vectors and, for each of the UR outputs, broadcasts one input value
//     and multiply-adds it into that output's NOC accumulators. The stride is a template
//     parameter (1, 2, or any at run time), so the UR input addresses are constant offsets.
//     The blocking (UR, NOC) is chosen per layer by the accumulators it keeps busy
//     (choose_blocking: 14 x 2 for rows of 14, 28, 56 or 112 outputs, 7 x 4 for 7x7 maps); a
//     row of OW outputs is cut into equal blocks (56 = 4 x 14). Only the input channels of
//     a partial last block are multiplied (the 3-channel stem does 3 of 16 lanes' work). A
//     pointwise convolution's pixels are regrouped into rows of the length that blocks best
//     (pointwise_rows: a 7x7 map is one row of 49 on AVX2); the epilogue still sees the
//     caller's rows.
//   - Padding. Rows: an output row takes only the taps kh whose input row lies inside x (a
//     range computed per row; the kernel gets one pointer per tap row). Columns: with no
//     column padding x is read in place; with padding, input rows are copied into per-thread
//     scratch with zero columns on both sides, so no load in the inner loop is checked. A
//     plain x always goes through the scratch, which its copy lays out blocked. The
//     scratch is a ring of (KH - 1) * dh + 1 padded rows (of the chunk's channel blocks), so
//     the next output row copies only sh new rows. Measured against an input padded
//     beforehand: 1-7% more time at stride 1, about 15% at stride 2 (twice the rows and the
//     columns per output), when each group copies the rows again (groups outer, below).
//   - Cache blocking. The input-channel blocks are split into chunks whose weights (for the
//     NOC output-channel blocks of a group) fit in about half of a level-2 cache; for each
//     chunk every output row of the thread's run of rows is computed before the next chunk,
//     the later chunks adding to the stored partial sums.
//   - Loop order. Items are (n, group of NOC output-channel blocks, output row): groups
//     outer, so that a group's weights stay in cache over its rows, except when all the
//     weights fit in the level-2 cache and the input image is larger than them (the early
//     layers): then rows outer, (n, row, group), so that an input row and its padded copy
//     serve every group.
//   - Threads split the items into contiguous ranges; each output's sum is formed in the same
//     order whatever the split and the blocking (the partial sums between chunks are stored
//     as the float32 they are), so the result does not depend on the thread count or on
//     ConvBlockedTuning.
//   - Epilogue: once an output block is final (last chunk), the epilogue is called once per
//     output-channel block on its row segment, in place: epi(n * OB + ob, oh, ow0, len, p),
//     p = &out[n, ob, oh, ow0, 0], len outputs of B floats each (the GEMM's epilogue
//     signature, the plane index n * OB + ob standing for its batch). The data is still in
//     level 1 then. NoEpilogue leaves the plain sums. A ChannelAffine (channel_affine.h: a
//     per-channel scale and shift, a residual, then clamps) is applied instead by the
//     micro-kernel to its accumulators before it stores them, on the last chunk.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "channel_affine.h"
#include "conv_blocked_filter.h"  // conv_blocked_reorder
#include "gemm_base.h"            // NoEpilogue; gemm_detail::scratch, the per-thread scratch memory
#include "kernel.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace conv_blocked_detail {

constexpr int64_t B = vf::width;

// The largest row block per number of output-channel vectors NOC: UR x NOC accumulators in
// registers, with room for NOC weight vectors and a broadcast. (7 x 4 on AVX-512 needs 33:
// the compiler keeps one accumulator in memory, which measured no slower than 6 x 4.)
#if defined(EMBER_RT_AVX512)
constexpr int kMaxUR1 = 14, kMaxUR2 = 14, kMaxUR4 = 7;
#elif defined(EMBER_RT_AVX2)
constexpr int kMaxUR1 = 12, kMaxUR2 = 6, kMaxUR4 = 0;
#else
constexpr int kMaxUR1 = 4, kMaxUR2 = 4, kMaxUR4 = 0;
#endif

// Floats of prepared weights of one chunk and group kept in cache (half of a 1 MiB L2), and
// the most weights for which rows go outer (all groups' weights then cycle through the L2
// once per row; measured on 3x3 stride-2 layers: 128 channels, 576 KiB, gain, 256 lose).
constexpr int64_t kChunkWeightFloats = 128 * 1024;
constexpr int64_t kRowsOuterWeightFloats = 160 * 1024;

EMBER_RT_LAZY
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One block: UR outputs x NOC output-channel blocks, summed over ncb input-channel blocks,
// taps kh in [0, nkh) (the caller has dropped the rows outside x) and all KW taps.
struct BlockArgs {
  const float* const* rows;  // per tap row kh: the input row at the first channel block, at
                             // the column of output 0's first tap, lane 0
  int64_t col;               // floats from there to the block's first output's first tap
  int64_t x_cb;              // floats between input-channel blocks
  int64_t x_kw;              // floats between tap columns (dw * B)
  int64_t x_u;               // floats between consecutive outputs (sw * B; read only when S == 0)
  const float* w;            // weights at (first output block, first channel block, first tap row)
  int64_t w_ob;              // floats between output-channel blocks
  int64_t w_cb;              // floats between input-channel blocks (KH * KW * B * B)
  int64_t ncb, nkh, KW;
  int64_t last_ic;  // input channels in the last block (C - (CB - 1) * B when the block is
                    // C's last, else B): the zero lanes past C are not multiplied
  float* out;       // output at (first output block, row, first output)
  int64_t out_ob;   // floats between output-channel blocks
  bool accumulate;  // add to out (a later chunk) instead of overwriting it
  const ChannelAffine* affine;  // applied before the store (the last chunk), or null
  int64_t ch0;                  // the first output block's first channel (for affine)
  const float* res;             // affine's residual at `out`'s element, or null
};

template <int UR, int NOC, int S>
inline void block(const BlockArgs& a) {
  const int64_t xu = S == 0 ? a.x_u : S * B;
  vf acc[UR][NOC];
  if (a.accumulate) {
#pragma GCC unroll 16
    for (int u = 0; u < UR; ++u)
#pragma GCC unroll 4
      for (int j = 0; j < NOC; ++j) acc[u][j] = vf::load(a.out + j * a.out_ob + u * B);
  }
  const int64_t wkw = B * B, wkh = a.KW * B * B;
  for (int64_t cb = 0; cb < a.ncb; ++cb) {
    const int64_t xc = a.col + cb * a.x_cb;
    const float* wc = a.w + cb * a.w_cb;
    const int64_t nic = cb + 1 == a.ncb ? a.last_ic : B;
    for (int64_t kh = 0; kh < a.nkh; ++kh) {
      const float* xk = a.rows[kh] + xc;
      const float* wk = wc + kh * wkh;
      for (int64_t kw = 0; kw < a.KW; ++kw) {
        const float* xw = xk + kw * a.x_kw;
        const float* ww = wk + kw * wkw;
#pragma GCC unroll 2
        for (int64_t ic = 0; ic < nic; ++ic) {
          vf wv[NOC];
#pragma GCC unroll 4
          for (int j = 0; j < NOC; ++j) wv[j] = vf::load(ww + ic * B + j * a.w_ob);
#pragma GCC unroll 16
          for (int u = 0; u < UR; ++u) {
            const vf xb(xw[u * xu + ic]);
#pragma GCC unroll 4
            for (int j = 0; j < NOC; ++j) acc[u][j] = fma(xb, wv[j], acc[u][j]);
          }
        }
      }
    }
  }
  if (a.affine != nullptr) apply_channel_affine<UR, NOC>(acc, *a.affine, a.ch0, a.res, a.out_ob);
#pragma GCC unroll 16
  for (int u = 0; u < UR; ++u)
#pragma GCC unroll 4
    for (int j = 0; j < NOC; ++j) acc[u][j].store(a.out + j * a.out_ob + u * B);
}

using BlockFn = void (*)(const BlockArgs&);

// kernel_table<NOC, S>(): &block<1, NOC, S> ... &block<MaxUR, NOC, S>.
template <int NOC, int S, int... U>
inline const BlockFn* table_of(std::integer_sequence<int, U...>) {
  static const BlockFn t[] = {&block<U + 1, NOC, S>...};
  return t;
}
template <int NOC, int S>
inline const BlockFn* kernel_table() {
  constexpr int kMax = NOC == 1 ? kMaxUR1 : NOC == 2 ? kMaxUR2 : kMaxUR4;
  if constexpr (kMax == 0) {
    return nullptr;
  } else {
    return table_of<NOC, S>(std::make_integer_sequence<int, kMax>{});
  }
}
// Every micro-kernel (about a hundred) is compiled where this is: in generated modules
// (EMBER_RT_GEMM_EXTERN) that is pieces.h, once for all of them, and `kernel` is declared
// here only.
EMBER_RT_LAZY
inline BlockFn kernel_of(int ur, int noc, int64_t sw) {
  const int s = sw == 1 ? 1 : sw == 2 ? 2 : 0;
  const BlockFn* t = nullptr;
  if (noc == 1)
    t = s == 1 ? kernel_table<1, 1>() : s == 2 ? kernel_table<1, 2>() : kernel_table<1, 0>();
  if (noc == 2)
    t = s == 1 ? kernel_table<2, 1>() : s == 2 ? kernel_table<2, 2>() : kernel_table<2, 0>();
  if (noc == 4)
    t = s == 1 ? kernel_table<4, 1>() : s == 2 ? kernel_table<4, 2>() : kernel_table<4, 0>();
  return t[ur - 1];
}
#if defined(EMBER_RT_GEMM_EXTERN)
[[gnu::visibility("hidden")]] BlockFn kernel(int ur, int noc, int64_t sw);
#else
EMBER_RT_LAZY
inline BlockFn kernel(int ur, int noc, int64_t sw) { return kernel_of(ur, noc, sw); }
#endif
EMBER_RT_LAZY
inline int max_ur(int noc) { return noc == 1 ? kMaxUR1 : noc == 2 ? kMaxUR2 : kMaxUR4; }

}  // namespace conv_blocked_detail

// Blocking of conv2d_blocked; 0 picks the default, other values are clamped to what the
// ISA's kernels have, so a tuner may pass anything.
struct ConvBlockedTuning {
  int noc = 0;        // output-channel blocks per register block: 1, 2 or 4 (AVX-512)
  int ur = 0;         // largest number of outputs per register block
  int64_t chunk = 0;  // input-channel blocks per cache chunk
  int order = 0;      // 1: groups outer; 2: rows outer (with one chunk)
};

namespace conv_blocked_detail {

struct Geom {
  int64_t N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
  int64_t CB, OB;
  int noc;          // output-channel blocks per group
  int64_t groups;   // ceil(OB / noc)
  int64_t ur_max;   // the largest row block
  int64_t chunk;    // input-channel blocks per cache chunk
  int64_t chunks;   // ceil(CB / chunk)
  bool padded;      // column padding or a plain x: the input rows go through the scratch band
  bool x_plain;     // x is [N, C, H, W], not blocked
  int64_t Wp;       // columns of a band row: (OW - 1) * sw + (KW - 1) * dw + 1
  bool rows_outer;  // items ordered (n, oh, group), not (n, group, oh)
  int64_t epi_ow;   // the caller's output row length, which the epilogue's coordinates use
                    // (OW unless pointwise_rows regrouped the pixels)
};

// The blocking that keeps most accumulators busy (ties: 2 output-channel blocks, then 4),
// from the row length and the channel blocks; returns how many are busy on average.
EMBER_RT_LAZY
inline double choose_blocking(Geom& g) {
  double best = -1;
  for (int noc : {2, 4, 1}) {
    const int urm = max_ur(noc);
    if (urm == 0 || (noc > 1 && g.OB < noc)) continue;
    const double ur = static_cast<double>(g.OW) / static_cast<double>(ceil_div(g.OW, urm));
    const double nc = static_cast<double>(g.OB) / static_cast<double>(ceil_div(g.OB, noc));
    const double score = ur * nc;
    if (score > best + 1e-9) best = score, g.noc = noc, g.ur_max = urm;
  }
  return best;
}

// The longest row a pointwise convolution's pixels are regrouped into (pointwise_rows).
constexpr int64_t kPointwiseRowMax = 64;

// A pointwise convolution (1x1, stride 1, no padding) computes each output pixel from the
// input pixel at the same place, so any rows of L pixels (L dividing H * W) are the same
// convolution on the same memory. Rows of a small map fill few register blocks (7 outputs
// make blocks of 4 and 3 where AVX2 holds 6): this takes the row length in
// [W, max(W, kPointwiseRowMax)] that keeps most accumulators busy (ties: the shorter, which
// leaves more rows to the threads), so 7x7 maps run as one row of 49 and 14x14 as rows of 28
// on AVX2. Each output is summed in the same order as before.
EMBER_RT_LAZY
inline void pointwise_rows(Geom& g) {
  if (g.KH != 1 || g.KW != 1 || g.sh != 1 || g.sw != 1 || g.ph != 0 || g.pw != 0 || g.OH != g.H ||
      g.OW != g.W)
    return;
  const int64_t pixels = g.H * g.W, limit = g.W > kPointwiseRowMax ? g.W : kPointwiseRowMax;
  int64_t best_len = g.W;
  double best = -1;
  for (int64_t len = g.W; len <= limit && len <= pixels; ++len) {
    if (pixels % len != 0) continue;
    Geom t = g;
    t.OW = len;
    const double score = choose_blocking(t);
    if (score > best + 1e-9) best = score, best_len = len;
  }
  g.W = g.OW = best_len;
  g.H = g.OH = pixels / best_len;
}

EMBER_RT_LAZY
inline Geom make_geom(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t OH, int64_t OW,
                      int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                      int64_t dh, int64_t dw, const ConvBlockedTuning& t, bool x_plain = false) {
  Geom g{N,  C, H, W, O, OH, OW, KH, KW,    sh,      sw, ph,    pw, dh,
         dw, 0, 0, 1, 0, 1,  1,  1,  false, x_plain, 0,  false, OW};
  g.CB = ceil_div(C, B);
  g.OB = ceil_div(O, B);
  pointwise_rows(g);  // (a plain x's rows regroup as well: its pixels are contiguous too)
  choose_blocking(g);
  if (t.noc > 0) {
    g.noc = t.noc >= 4 && kMaxUR4 > 0 ? 4 : (t.noc >= 2 ? 2 : 1);
    g.ur_max = max_ur(g.noc);
  }
  if (t.ur > 0) g.ur_max = t.ur < g.ur_max ? t.ur : g.ur_max;
  g.groups = ceil_div(g.OB, g.noc);
  const int64_t per_cb = KH * KW * B * B * g.noc;
  g.chunk = t.chunk > 0 ? t.chunk : kChunkWeightFloats / per_cb;
  g.chunk = g.chunk < 1 ? 1 : (g.chunk > g.CB ? g.CB : g.chunk);
  g.chunks = ceil_div(g.CB, g.chunk);
  g.chunk = ceil_div(g.CB, g.chunks);          // even chunks
  g.Wp = (g.OW - 1) * sw + (KW - 1) * dw + 1;  // (g: the rows pointwise_rows chose)
  g.padded = pw > 0 || g.Wp > g.W || x_plain;
  // The loop order: a group's weights stay in cache over its rows (groups outer), unless all
  // the weights fit in the level-2 cache and the input image is larger: then the input rows
  // stay in cache over the groups (rows outer, one chunk; each row's band is copied once for
  // all groups).
  const int64_t weights = g.OB * g.CB * KH * KW * B * B;
  g.rows_outer = t.order == 2 ||
                 (t.order != 1 && weights <= kRowsOuterWeightFloats && g.CB * H * W * B > weights);
  if (g.rows_outer) g.chunk = g.CB, g.chunks = 1;
  return g;
}

// The band: a ring of R = (KH - 1) * dh + 1 zero-padded input rows (slot ih % R), each
// slot the chunk's channel blocks x Wp columns x B. The rows an output row reads lie within R
// consecutive input rows, so they never share a slot, and the next row (of a run, or the same
// row for the next group) finds all but sh of them in place.
EMBER_RT_LAZY
inline int64_t band_slots(const Geom& g) { return (g.KH - 1) * g.dh + 1; }
EMBER_RT_LAZY
inline int64_t slot_floats(const Geom& g) { return g.chunk * g.Wp * B; }

// The taps kh whose input row oh * sh - ph + kh * dh lies in [0, H): [lo, hi).
EMBER_RT_LAZY
inline void tap_rows(const Geom& g, int64_t oh, int64_t& lo, int64_t& hi) {
  const int64_t top = oh * g.sh - g.ph;  // input row of tap 0
  lo = top >= 0 ? 0 : ceil_div(-top, g.dh);
  hi = g.H - top <= 0 ? 0 : ceil_div(g.H - top, g.dh);
  if (hi > g.KH) hi = g.KH;
  if (lo > hi) lo = hi;
}

// Copies input row ih of channel blocks [cb0, cb0 + ncb) of image n into a band slot:
// slot[cbi][q][lane] = x[n, cb0 + cbi, ih, q - pw, lane], zero outside x (a plain x: channel
// (cb0 + cbi) * B + lane of x [N, C, H, W], written into a band zeroed by run: the padding
// columns, and with one chunk the lanes past C, are never written).
EMBER_RT_LAZY
inline void fill_slot(const Geom& g, const float* x, int64_t n, int64_t ih, int64_t cb0,
                      int64_t ncb, float* slot) {
  const int64_t qlo = g.pw < g.Wp ? g.pw : g.Wp;
  int64_t qhi = g.W + g.pw;
  qhi = qhi < g.Wp ? qhi : g.Wp;
  qhi = qhi > qlo ? qhi : qlo;
  if (g.x_plain) {  // lanes past C and the padding columns: zero since the band was made
    for (int64_t cbi = 0; cbi < ncb; ++cbi) {
      float* dst = slot + cbi * g.Wp * B;
      const int64_t c0 = (cb0 + cbi) * B, nc = g.C - c0 < B ? g.C - c0 : B;
      if (nc < B && g.chunks > 1)  // the slot may hold a full block of another chunk
        std::memset(dst, 0, static_cast<size_t>(g.Wp * B) * sizeof(float));
      // A pixel's channels side by side (the stores of a pixel fill one vector's lanes).
      const float* src = x + ((n * g.C + c0) * g.H + ih) * g.W + (qlo - g.pw);
      const int64_t plane = g.H * g.W;
      for (int64_t q = qlo; q < qhi; ++q)
        for (int64_t l = 0; l < nc; ++l) dst[q * B + l] = src[l * plane + q - qlo];
    }
    return;
  }
  for (int64_t cbi = 0; cbi < ncb; ++cbi) {
    float* dst = slot + cbi * g.Wp * B;
    const float* src = x + (((n * g.CB + cb0 + cbi) * g.H + ih) * g.W + (qlo - g.pw)) * B;
    std::memset(dst, 0, static_cast<size_t>(qlo * B) * sizeof(float));
    std::memcpy(dst + qlo * B, src, static_cast<size_t>((qhi - qlo) * B) * sizeof(float));
    std::memset(dst + qhi * B, 0, static_cast<size_t>((g.Wp - qhi) * B) * sizeof(float));
  }
}

// Calls the epilogue on `len` finished outputs from pixel `p0` of a plane, in the caller's
// rows: a regrouped row (pointwise_rows) may span several of them.
template <class Epi>
inline void finish(const Epi& epi, const Geom& g, int64_t plane, int64_t p0, int64_t len,
                   float* p) {
  while (len > 0) {
    const int64_t row = p0 / g.epi_ow, col = p0 % g.epi_ow;
    const int64_t n = len < g.epi_ow - col ? len : g.epi_ow - col;
    epi(plane, row, col, n, p);
    p0 += n, len -= n, p += n * B;
  }
}

template <class Epi>
inline void run(const LaunchContext* ctx, const float* x, const float* w, float* out, const Geom& g,
                const Epi& epi) {
  const int64_t items = g.N * g.groups * g.OH;
  if (items <= 0) return;
  const double work = 2.0 * static_cast<double>(g.N * g.OB * g.OH * g.OW) *
                      static_cast<double>(g.CB * g.KH * g.KW * B * B);
  const int64_t x_plane = g.H * g.W * B, o_plane = g.OH * g.OW * B;
  const int64_t w_cb = g.KH * g.KW * B * B, w_ob = g.CB * w_cb;
  // Row blocks: OW outputs in nblk blocks of equal size (the first OW % nblk one longer).
  const int64_t nblk = ceil_div(g.OW, g.ur_max);
  parallel_for(ctx, items, work, [&](int64_t begin, int64_t end) {
    const int64_t nslots = band_slots(g);
    float* band = g.padded ? gemm_detail::scratch(ctx, gemm_detail::kSlotA,
                                                  static_cast<size_t>(nslots * slot_floats(g)))
                           : nullptr;
    if (g.x_plain)  // fill_slot writes a plain x's channels only
      std::memset(band, 0, static_cast<size_t>(nslots * slot_floats(g)) * sizeof(float));
    // (n, chunk, ih) each slot holds, and the tap rows' pointers: on the stack for kernels
    // up to 16 rows (no allocation per call), else on the heap.
    constexpr int64_t kSmall = 16;
    int64_t held_small[kSmall];
    const float* rows_small[kSmall];
    std::vector<int64_t> held_big(static_cast<size_t>(nslots > kSmall ? nslots : 0));
    std::vector<const float*> rows_big(static_cast<size_t>(g.KH > kSmall ? g.KH : 0));
    int64_t* held = nslots > kSmall ? held_big.data() : held_small;
    const float** row_ptr = g.KH > kSmall ? rows_big.data() : rows_small;
    for (int64_t i = 0; i < nslots; ++i) held[i] = -1;
    for (int64_t item = begin; item < end;) {
      // A run: consecutive rows of one (n, group); a single row when rows are outer.
      int64_t n, grp, oh0, run_end;
      if (g.rows_outer) {
        const int64_t nr = item / g.groups;
        n = nr / g.OH, oh0 = nr % g.OH, grp = item % g.groups, run_end = item + 1;
      } else {
        const int64_t ng = item / g.OH;
        n = ng / g.groups, grp = ng % g.groups, oh0 = item % g.OH;
        run_end = (ng + 1) * g.OH < end ? (ng + 1) * g.OH : end;
      }
      const int64_t rows = run_end - item;
      const int64_t ob0 = grp * g.noc;
      const int64_t nob = g.OB - ob0 < g.noc ? g.OB - ob0 : g.noc;
      for (int64_t ck = 0; ck < g.chunks; ++ck) {
        const int64_t cb0 = ck * g.chunk;
        const int64_t ncb = g.CB - cb0 < g.chunk ? g.CB - cb0 : g.chunk;
        const bool last = ck + 1 == g.chunks;
        for (int64_t oh = oh0; oh < oh0 + rows; ++oh) {
          int64_t lo = 0, hi = 0;
          tap_rows(g, oh, lo, hi);
          BlockArgs a{};
          a.x_kw = g.dw * B;
          a.x_u = g.sw * B;
          a.w_ob = w_ob;
          a.w_cb = w_cb;
          a.ncb = ncb;
          a.last_ic = cb0 + ncb == g.CB ? g.C - (g.CB - 1) * B : B;
          a.nkh = hi - lo;
          a.KW = g.KW;
          a.out_ob = o_plane;
          a.accumulate = ck > 0;
          if constexpr (std::is_same_v<Epi, ChannelAffine>) a.affine = last ? &epi : nullptr;
          a.rows = row_ptr;
          for (int64_t kh = lo; kh < hi; ++kh) {
            const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
            if (g.padded) {
              const int64_t key = (n * g.chunks + ck) * g.H + ih, slot = ih % nslots;
              float* p = band + slot * slot_floats(g);
              if (held[slot] != key) {
                fill_slot(g, x, n, ih, cb0, ncb, p);
                held[slot] = key;
              }
              row_ptr[kh - lo] = p;
            } else {
              row_ptr[kh - lo] = x + ((n * g.CB + cb0) * g.H + ih) * g.W * B;
            }
          }
          a.x_cb = g.padded ? g.Wp * B : x_plane;
          // The output-channel blocks of the group: sub-groups of 4, 2, 1 as the kernels go.
          for (int64_t j0 = 0; j0 < nob;) {
            int noc = g.noc;
            while (noc > nob - j0) noc /= 2;
            const int64_t ob = ob0 + j0;
            float* orow = out + ((n * g.OB + ob) * g.OH + oh) * g.OW * B;
            a.w = w + ob * w_ob + cb0 * w_cb + lo * g.KW * B * B;
            a.ch0 = ob * B;
            int64_t ow0 = 0;
            for (int64_t blk = 0; blk < nblk; ++blk) {
              const int64_t ur = g.OW / nblk + (blk < g.OW % nblk ? 1 : 0);
              a.col = ow0 * g.sw * B;
              a.out = orow + ow0 * B;
              if constexpr (std::is_same_v<Epi, ChannelAffine>)
                a.res = epi.residual != nullptr ? epi.residual + (a.out - out) : nullptr;
              if (a.nkh > 0 || a.affine != nullptr) {  // (with no taps: the affine of 0)
                kernel(static_cast<int>(ur), noc, g.sw)(a);
              } else if (!a.accumulate) {  // every tap row outside x: zeros
                for (int j = 0; j < noc; ++j)
                  std::memset(a.out + j * o_plane, 0, static_cast<size_t>(ur * B) * sizeof(float));
              }
              if constexpr (!std::is_same_v<Epi, NoEpilogue> &&
                            !std::is_same_v<Epi, ChannelAffine>) {
                if (last)
                  for (int j = 0; j < noc; ++j)
                    finish(epi, g, n * g.OB + ob + j, oh * g.OW + ow0, ur, a.out + j * o_plane);
              }
              ow0 += ur;
            }
            j0 += noc;
          }
        }
      }
      item = run_end;
    }
  });
}

}  // namespace conv_blocked_detail
}  // namespace EMBER_RT_ISA_NS

namespace lib {

// The channel block of the blocked layout: vf::width.
EMBER_RT_LAZY
inline int64_t conv_blocked_lanes() { return vf::width; }

// Floats of the prepared weight of an [O, C, KH, KW] convolution weight.
EMBER_RT_LAZY
inline int64_t conv_blocked_weight_floats(int64_t O, int64_t C, int64_t KH, int64_t KW) {
  const int64_t b = vf::width;
  return (O + b - 1) / b * ((C + b - 1) / b) * KH * KW * b * b;
}

// dst [OB, CB, KH, KW, B_in, B_out] = w [O, C, KH, KW] reordered, zero past O and C. Done
// once per constant weight.
EMBER_RT_LAZY
inline void conv_blocked_prepare(const float* w, int64_t O, int64_t C, int64_t KH, int64_t KW,
                                 float* dst) {
  conv_blocked_reorder(w, O, C, KH, KW, vf::width, dst);
}

// out [N, OB, OH, OW, B] = the convolution of x [N, CB, H, W, B] (lanes past C zero; with
// x_plain, x [N, C, H, W]) with the prepared weight wp (conv_blocked_prepare), stride (sh, sw),
// zero padding (ph, pw), dilation (dh, dw), groups 1. With an epilogue, each finished row segment
// is passed to it in place: epi(n * OB + ob, oh, ow0, len, &out[n, ob, oh, ow0, 0]) (len outputs of
// B floats); a ChannelAffine is applied in registers instead. `tuning` overrides the blocking (for
// tuners): every output is summed in the same order whatever the blocking (partial sums of a chunk
// are stored as the float32 they are), so the result is the same bit for bit.
template <class Epi = NoEpilogue>
inline void conv2d_blocked(const LaunchContext* ctx, const float* x, const float* wp, float* out,
                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t OH,
                           int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t ph,
                           int64_t pw, int64_t dh, int64_t dw, const Epi& epi = Epi{},
                           const ConvBlockedTuning& tuning = {}, bool x_plain = false) {
  if (N <= 0 || O <= 0 || OH <= 0 || OW <= 0) return;
  const conv_blocked_detail::Geom g = conv_blocked_detail::make_geom(
      N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, tuning, x_plain);
  conv_blocked_detail::run(ctx, x, wp, out, g, epi);
}

// conv_blocked_prepare as a Call stage (the conv_blocked_filter operator on a weight that is
// not a constant of a graph): `block` as in conv2d_blocked_layout.
EMBER_RT_LAZY
inline void conv_blocked_filter(const LaunchContext* ctx, const float* w, float* wp, int64_t O,
                                int64_t C, int64_t KH, int64_t KW, int64_t block) {
  if (block != vf::width) {
    report_error(ctx, KernelError::kLayout, "conv_blocked_filter", block, vf::width);
    return;
  }
  conv_blocked_prepare(w, O, C, KH, KW, wp);
}

// conv2d_blocked_layout and conv2d_blocked_plain_layout: conv2d_blocked with the block
// checked and a graph's fused epilogue adapted (below).
template <class Epi>
inline void conv2d_blocked_call(const LaunchContext* ctx, const float* x, const float* wp,
                                float* out, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                                int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                                int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                                int64_t block, bool x_plain, const Epi& epi) {
  if (block != vf::width) {
    report_error(ctx, KernelError::kLayout, "conv2d_blocked", block, vf::width);
    return;
  }
  if constexpr (std::is_same_v<Epi, NoEpilogue> || std::is_same_v<Epi, ChannelAffine>) {
    conv2d_blocked(ctx, x, wp, out, N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, epi, {},
                   x_plain);
  } else {
    // The graph's epilogue sees out as [N, OB, OH * OW, B]: called on each pixel's B lanes,
    // a vector (its per-channel operands are read along the lanes).
    // A copy of the epilogue per segment: its pointers stay in registers over the pixels.
    const auto rows = [&epi, OW](int64_t plane, int64_t oh, int64_t ow0, int64_t len, float* p) {
      const Epi e = epi;
      for (int64_t i = 0; i < len; ++i)
        e(plane, oh * OW + ow0 + i, 0, vf::width, p + i * vf::width);
    };
    conv2d_blocked(ctx, x, wp, out, N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, rows, {},
                   x_plain);
  }
}

// conv2d_blocked as a Call stage of a graph's kernel runs it (the conv2d_blocked operator):
// `block` is the channel block of its buffers' layout, which the graph chose for the ISA the
// kernel was compiled for; another block (the kernel compiled for another ISA) is reported as
// an error and nothing is computed. A graph's fused epilogue is called on each pixel of out
// viewed [N, OB, OH * OW, B]: epi(n * OB + ob, oh * OW + ow, 0, B, p); a ChannelAffine (the
// epilogue of that form, codegen's plan) is applied in registers.
template <class Epi = NoEpilogue>
inline void conv2d_blocked_layout(const LaunchContext* ctx, const float* x, const float* wp,
                                  float* out, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                                  int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                                  int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
                                  int64_t block, const Epi& epi = Epi{}) {
  conv2d_blocked_call(ctx, x, wp, out, N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, block,
                      false, epi);
}

// conv2d_blocked_layout on a plain input x [N, C, H, W] (out still blocked): a network's
// first convolution reads its few-channel image as it is.
template <class Epi = NoEpilogue>
inline void conv2d_blocked_plain_layout(const LaunchContext* ctx, const float* x, const float* wp,
                                        float* out, int64_t N, int64_t C, int64_t H, int64_t W,
                                        int64_t O, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                        int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                                        int64_t dw, int64_t block, const Epi& epi = Epi{}) {
  conv2d_blocked_call(ctx, x, wp, out, N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, block,
                      true, epi);
}

}  // namespace lib
}  // namespace ember_rt
