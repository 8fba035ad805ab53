// Scaled-dot-product attention in one pass (the Call routine of the `attention` operator,
// src/ops/attention.cpp):
//
//   out[b, i, :] = sum_j softmax_j(scale * q[b, i, :] . k[b, j, :] (+ mask)) * v[b, j, :]
//
// q [batch, lq, e], k [batch, lk, e], v [batch, lk, ev], out [batch, lq, ev], float32,
// row-major and contiguous. The lq x lk matrix of scores is never stored: a task takes a
// block of query rows of one batch entry and walks the keys in blocks, with an online
// softmax (Milakov and Gimelshein 2018; the FlashAttention loop):
//
//   S = Q_blk K_blk^T                  the GEMM micro-kernel on packed Q and K^T panels
//   S = scale * S (+ mask), masked -inf for each row: m' = max(m, max_j S), p = exp(S - m'),
//   l = l * exp(m - m') + sum_j p,     O = O * exp(m - m') + P V_blk (the micro-kernel again)
//
// and finally out = O / l. Tasks (batch entry, query block) are split across threads; each
// computes its rows in the same order at every thread count.
//
// Masks: `causal` keeps key j for query i when j <= i (torch's is_causal: the upper-left
// aligned lower triangle of [lq, lk]); key blocks wholly above the diagonal are skipped. An
// optional mask, float (added to the scaled scores) or bool (true keeps the key), is read
// through strides: element (b, i, j) at mask[moff(b) + i * mq + j * mk], with the batch
// entry b split as b = (b0i * b1 + b1i) * b2 + b2i and moff(b) = b0i * m0 + b1i * m1 +
// b2i * m2 (a stride 0 broadcasts). A row whose every key is masked (every score -inf) gives
// 0 (torch's scaled_dot_product_attention) or, with empty_nan, NaN (softmax of a row of -inf,
// as attention written out with softmax computes it).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "gemm_kernels.h"
#include "kernel.h"
#include "lazy.h"
#include "math.h"
#include "vec.h"

namespace ember_rt::lib {
inline namespace EMBER_RT_ISA_NS {

namespace attention_detail {

using gemm_detail::micro_kernel;
using gemm_detail::pack_a;
using gemm_detail::pack_b;

// The register tile of the GEMM's default micro-kernel (entry 0 of EMBER_RT_GEMM_KERNELS):
// MR rows by NV vectors.
struct Tile {
  int mr, nv;
};
constexpr Tile kTile = [] {
  Tile t{0, 0};
#define EMBER_RT_ATTN_TILE(ID, MR, NV) \
  if (ID == 0) t = Tile{MR, NV};
  EMBER_RT_GEMM_KERNELS(EMBER_RT_ATTN_TILE)
#undef EMBER_RT_ATTN_TILE
  return t;
}();
constexpr int MR = kTile.mr;
constexpr int NV = kTile.nv;
constexpr int W = vf::width;
constexpr int NR = NV * W;
constexpr int64_t kKeyBlock = 128;      // keys per block: a multiple of every NR
constexpr int64_t kQueryBlockMax = 64;  // query rows per task, at most (rounded up to MR)

EMBER_RT_LAZY
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
EMBER_RT_LAZY
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

struct Problem {
  int64_t batch, lq, lk, e, ev;
  int64_t b1, b2;              // the batch entry's split for the mask's strides
  int64_t m0, m1, m2, mq, mk;  // the mask's strides
  bool causal, empty_nan;
  float scale, fill;  // fill: a masked score (bool mask, causal)
};

// Row r of a score block (j0 .. j0 + n of keys) scaled and masked in place; returns its max.
template <class M>
inline float mask_row(float* s, int64_t n, int64_t valid, float scale, float fill, const M* mrow,
                      int64_t mk) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  vf vmax(kNegInf);
  float smax = kNegInf;
  int64_t j = 0;
  if constexpr (std::is_same_v<M, float>) {
    if (mrow != nullptr && mk == 0) {  // one mask value for the row
      const vf add(mrow[0]);
      for (; j + W <= valid; j += W) {
        const vf x = fma(vf::load(s + j), vf(scale), add);
        x.store(s + j);
        vmax = max(vmax, x);
      }
      for (; j < valid; ++j) smax = max(smax, s[j] = ember_rt::fma(s[j], scale, mrow[0]));
    } else if (mrow != nullptr) {
      for (; j + W <= valid; j += W) {
        const vf x = fma(vf::load(s + j), vf(scale), vf::load(mrow + j));
        x.store(s + j);
        vmax = max(vmax, x);
      }
      for (; j < valid; ++j) smax = max(smax, s[j] = ember_rt::fma(s[j], scale, mrow[j]));
    }
  } else {  // bool: false masks the key
    if (mrow != nullptr) {
      for (; j < valid; ++j) {
        const float x = mrow[j * mk] ? s[j] * scale : fill;
        s[j] = x;
        smax = max(smax, x);
      }
    }
  }
  for (; j + W <= valid; j += W) {  // no mask
    const vf x = vf::load(s + j) * vf(scale);
    x.store(s + j);
    vmax = max(vmax, x);
  }
  for (; j < valid; ++j) smax = max(smax, s[j] *= scale);
  for (; j < n; ++j) s[j] = fill;  // past the causal limit
  if (valid < n) smax = max(smax, fill);
  return max(smax, reduce_max(vmax));
}

// exp(s - m) in place; returns the sum.
EMBER_RT_LAZY
inline float exp_row(float* s, int64_t n, float m) {
  vf acc(0.0f);
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    const vf p = exp(vf::load(s + j) - vf(m));
    p.store(s + j);
    acc += p;
  }
  float sum = 0.0f;
  for (; j < n; ++j) sum += (s[j] = ember_rt::exp(s[j] - m));
  return sum + reduce_add(acc);
}

EMBER_RT_LAZY
inline void scale_row(float* o, int64_t n, float a) {
  int64_t j = 0;
  for (; j + W <= n; j += W) (vf::load(o + j) * vf(a)).store(o + j);
  for (; j < n; ++j) o[j] *= a;
}

// One task: query rows [i0, i0 + mb) of batch entry b.
template <class M>
inline void attention_block(const LaunchContext* ctx, const Problem& p, const float* q,
                            const float* k, const float* v, const M* mask, float* out, int64_t b,
                            int64_t i0, int64_t mb, int64_t mb_max) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t e = p.e, ev = p.ev;
  const int64_t ldo = round_up(ev > 0 ? ev : 1, NR);
  const int64_t lds = kKeyBlock;
  const int64_t mbp = round_up(mb_max, MR);
  // One scratch buffer: Q panels, K^T panels, the scores, P panels, a V panel, O, m and l.
  const int64_t n_q = mbp * e, n_k = e * kKeyBlock, n_s = mbp * lds, n_p = mbp * kKeyBlock;
  const int64_t n_v = kKeyBlock * NR, n_o = mbp * ldo;
  float* buf = gemm_detail::scratch(
      ctx, gemm_detail::kSlotA,
      static_cast<size_t>(n_q + n_k + n_s + n_p + n_v + n_o + 2 * mbp + 16 * 8));
  auto carve = [&buf](int64_t n) {  // 64-byte aligned pieces
    float* r = buf;
    buf += round_up(n, 16);
    return r;
  };
  float* qpack = carve(n_q);
  float* kpack = carve(n_k);
  float* s = carve(n_s);
  float* ppack = carve(n_p);
  float* vpack = carve(n_v);
  float* o = carve(n_o);
  float* rmax = carve(mbp);
  float* rsum = carve(mbp);

  const float* qb = q + (b * p.lq + i0) * e;
  const float* kb = k + b * p.lk * e;
  const float* vb = v + b * p.lk * ev;
  const M* mb_base = nullptr;
  if (mask != nullptr) {
    const int64_t b2i = b % p.b2, b1i = (b / p.b2) % p.b1, b0i = b / (p.b2 * p.b1);
    mb_base = mask + b0i * p.m0 + b1i * p.m1 + b2i * p.m2;
  }
  pack_a<MR>(qb, e, 1, mb, e, qpack);
  for (int64_t i = 0; i < mb * ldo; ++i) o[i] = 0.0f;
  for (int64_t i = 0; i < mb; ++i) rmax[i] = kNegInf, rsum[i] = 0.0f;

  // Keys past the last query row's diagonal are masked for every row of the block: skipped
  // when a masked score is -inf (it adds nothing).
  const bool skip = p.causal && p.fill == kNegInf;
  const int64_t kend = skip ? (i0 + mb < p.lk ? i0 + mb : p.lk) : p.lk;
  for (int64_t j0 = 0; j0 < kend; j0 += kKeyBlock) {
    const int64_t nb = kend - j0 < kKeyBlock ? kend - j0 : kKeyBlock;
    // S = Q K^T: K^T's element (d, j) is k[j * e + d].
    pack_b<NR>(kb + j0 * e, 1, e, e, nb, kpack);
    for (int64_t ir = 0; ir < mb; ir += MR) {
      const int mv = static_cast<int>(mb - ir < MR ? mb - ir : MR);
      for (int64_t jr = 0; jr < nb; jr += NR) {
        const int nv = static_cast<int>(nb - jr < NR ? nb - jr : NR);
        micro_kernel<MR, NV>(e, qpack + ir * e, kpack + jr * e, NR, s + ir * lds + jr, lds, mv, nv,
                             false);
      }
    }
    // The online softmax, row by row; P overwrites S.
    for (int64_t i = 0; i < mb; ++i) {
      float* row = s + i * lds;
      const int64_t gi = i0 + i;
      int64_t valid = nb;
      if (p.causal) {
        const int64_t lim = gi - j0 + 1;
        valid = lim < 0 ? 0 : (lim < nb ? lim : nb);
      }
      const M* mrow = mb_base != nullptr ? mb_base + gi * p.mq + j0 * p.mk : nullptr;
      const float bmax = mask_row<M>(row, nb, valid, p.scale, p.fill, mrow, p.mk);
      const float mnew = max(rmax[i], bmax);
      if (mnew == kNegInf) {  // every key so far masked: nothing to add
        for (int64_t j = 0; j < nb; ++j) row[j] = 0.0f;
        continue;
      }
      const float alpha = ember_rt::exp(rmax[i] - mnew);  // 0 the first time
      rsum[i] = rsum[i] * alpha + exp_row(row, nb, mnew);
      if (alpha != 1.0f) scale_row(o + i * ldo, ev, alpha);
      rmax[i] = mnew;
    }
    // O += P V_blk: P as MR-row panels, V read in place (or a packed partial panel).
    pack_a<MR>(s, lds, 1, mb, nb, ppack);
    const float* vblk = vb + j0 * ev;
    for (int64_t jr = 0; jr < ev; jr += NR) {
      const int nv = static_cast<int>(ev - jr < NR ? ev - jr : NR);
      const float* bp = vblk + jr;
      int64_t ldb = ev;
      if (nv < NR) {
        pack_b<NR>(vblk + jr, ev, 1, nb, nv, vpack);
        bp = vpack;
        ldb = NR;
      }
      for (int64_t ir = 0; ir < mb; ir += MR) {
        const int mv = static_cast<int>(mb - ir < MR ? mb - ir : MR);
        micro_kernel<MR, NV>(nb, ppack + ir * nb, bp, ldb, o + ir * ldo + jr, ldo, mv, nv, true);
      }
    }
  }
  float* ob = out + (b * p.lq + i0) * ev;
  for (int64_t i = 0; i < mb; ++i) {
    float* dst = ob + i * ev;
    const float* src = o + i * ldo;
    if (rsum[i] == 0.0f && rmax[i] == kNegInf) {  // every key masked
      const float fill = p.empty_nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
      for (int64_t j = 0; j < ev; ++j) dst[j] = fill;
      continue;
    }
    const float inv = 1.0f / rsum[i];
    int64_t j = 0;
    for (; j + W <= ev; j += W) (vf::load(src + j) * vf(inv)).store(dst + j);
    for (; j < ev; ++j) dst[j] = src[j] * inv;
  }
}

template <class M>
inline void run(const LaunchContext* ctx, const Problem& p, const float* q, const float* k,
                const float* v, const M* mask, float* out) {
  if (p.batch <= 0 || p.lq <= 0 || p.ev <= 0) return;
  if (p.lk <= 0) {  // no key: every row is empty
    const float fill = p.empty_nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    for (int64_t i = 0; i < p.batch * p.lq * p.ev; ++i) out[i] = fill;
    return;
  }
  // Query blocks of at most kQueryBlockMax rows, evened out and rounded up to the tile.
  const int64_t qblocks = ceil_div(p.lq, kQueryBlockMax);
  const int64_t mbs = round_up(ceil_div(p.lq, qblocks), MR);
  const int64_t nblk = ceil_div(p.lq, mbs);
  const double work = 2.0 * static_cast<double>(p.batch) * p.lq * p.lk * (p.e + p.ev + 8);
  parallel_for(ctx, p.batch * nblk, work, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / nblk, i0 = (t % nblk) * mbs;
      const int64_t mb = p.lq - i0 < mbs ? p.lq - i0 : mbs;
      attention_block<M>(ctx, p, q, k, v, mask, out, b, i0, mb, mbs);
    }
  });
}

}  // namespace attention_detail

// Without a mask: params batch, lq, lk, e, ev, causal, empty_nan, default_scale (1: the
// scale is 1 / sqrt(e)); scalars: scale, fill (the value of a masked score).
EMBER_RT_LAZY
inline void attention(const LaunchContext* ctx, const float* q, const float* k, const float* v,
                      float* out, int64_t batch, int64_t lq, int64_t lk, int64_t e, int64_t ev,
                      int64_t causal, int64_t empty_nan, int64_t default_scale, double scale,
                      double fill) {
  attention_detail::Problem p{};
  p.batch = batch, p.lq = lq, p.lk = lk, p.e = e, p.ev = ev, p.b1 = 1, p.b2 = 1;
  p.causal = causal != 0, p.empty_nan = empty_nan != 0;
  p.scale =
      static_cast<float>(default_scale != 0 ? 1.0 / std::sqrt(static_cast<double>(e)) : scale);
  p.fill = static_cast<float>(fill);
  attention_detail::run<float>(ctx, p, q, k, v, nullptr, out);
}

// With a mask (float: added; bool: true keeps): params batch split b0, b1, b2, lq, lk, e, ev,
// the mask's strides m0, m1, m2, mq, mk, then causal, empty_nan, default_scale; scalars:
// scale, fill.
template <class M>
inline void attention_masked(const LaunchContext* ctx, const float* q, const float* k,
                             const float* v, const M* mask, float* out, int64_t b0, int64_t b1,
                             int64_t b2, int64_t lq, int64_t lk, int64_t e, int64_t ev, int64_t m0,
                             int64_t m1, int64_t m2, int64_t mq, int64_t mk, int64_t causal,
                             int64_t empty_nan, int64_t default_scale, double scale, double fill) {
  static_assert(std::is_same_v<M, float> || std::is_same_v<M, bool>,
                "an attention mask is float32 or bool");
  attention_detail::Problem p{};
  p.batch = b0 * b1 * b2, p.lq = lq, p.lk = lk, p.e = e, p.ev = ev, p.b1 = b1, p.b2 = b2;
  p.m0 = m0, p.m1 = m1, p.m2 = m2, p.mq = mq, p.mk = mk;
  p.causal = causal != 0, p.empty_nan = empty_nan != 0;
  p.scale =
      static_cast<float>(default_scale != 0 ? 1.0 / std::sqrt(static_cast<double>(e)) : scale);
  p.fill = static_cast<float>(fill);
  attention_detail::run<M>(ctx, p, q, k, v, mask, out);
}

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt::lib
