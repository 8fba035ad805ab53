// Tests for runtime_include/ember_rt/attention.h against a float64 reference that stores the
// whole score matrix: odd lengths and head sizes (1, 3, 17, 64, 65, 130), lq != lk, causal,
// additive and boolean masks broadcast over batch and query rows, rows with every key
// masked, and one to three threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ember_rt/attention.h"
#include "rt_threads.h"

namespace ember_rt {
namespace {

using test::make_ctx;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A problem: batch = b0 * b1 (two batch dimensions), and a mask of shape [mb0, mb1, mlq, mlk]
// with each dimension 1 (broadcast) or full; mask_kind 0: none, 1: float, 2: bool.
struct Case {
  int64_t b0, b1, lq, lk, e, ev;
  bool causal = false;
  int mask_kind = 0;
  bool mb0 = true, mb1 = false, mlq = true, mlk = true;  // which mask dimensions are full
  bool empty_nan = false;
  double scale = 0;                                        // 0: 1 / sqrt(e)
  double fill = -std::numeric_limits<double>::infinity();  // a masked score
};

std::string name(const Case& c) {
  return "b" + std::to_string(c.b0) + "x" + std::to_string(c.b1) + " lq" + std::to_string(c.lq) +
         " lk" + std::to_string(c.lk) + " e" + std::to_string(c.e) + " ev" + std::to_string(c.ev) +
         (c.causal ? " causal" : "") + " mask" + std::to_string(c.mask_kind);
}

void check(const Case& c, int threads, uint32_t seed) {
  SCOPED_TRACE(name(c) + " threads " + std::to_string(threads));
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t batch = c.b0 * c.b1;
  std::vector<float> q(batch * c.lq * c.e), k(batch * c.lk * c.e), v(batch * c.lk * c.ev);
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = nd(rng);
  const int64_t d0 = c.mb0 ? c.b0 : 1, d1 = c.mb1 ? c.b1 : 1, dq = c.mlq ? c.lq : 1,
                dk = c.mlk ? c.lk : 1;
  const int64_t m0 = c.mb0 ? d1 * dq * dk : 0, m1 = c.mb1 ? dq * dk : 0, mq = c.mlq ? dk : 0,
                mk = c.mlk ? 1 : 0;
  std::vector<float> fmask(d0 * d1 * dq * dk);
  std::unique_ptr<bool[]> bmask(new bool[fmask.size()]);
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  for (size_t i = 0; i < fmask.size(); ++i) {
    const float r = ud(rng);
    fmask[i] = r < 0.2f ? -std::numeric_limits<float>::infinity() : nd(rng);
    bmask[i] = r >= 0.3f;
  }
  // The first query row keeps no key at all (when the mask has query rows).
  if (c.mlq)
    for (int64_t a = 0; a < d0 * d1; ++a)
      for (int64_t j = 0; j < dk; ++j) {
        fmask[a * dq * dk + j] = -std::numeric_limits<float>::infinity();
        bmask[a * dq * dk + j] = false;
      }
  const double scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.e));

  std::vector<double> want(batch * c.lq * c.ev);
  std::vector<double> sc(c.lk);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t moff = (b / c.b1) * m0 + (b % c.b1) * m1;
    for (int64_t i = 0; i < c.lq; ++i) {
      double mx = kNegInf;
      for (int64_t j = 0; j < c.lk; ++j) {
        double s = 0;
        for (int64_t d = 0; d < c.e; ++d)
          s += static_cast<double>(q[(b * c.lq + i) * c.e + d]) * k[(b * c.lk + j) * c.e + d];
        s *= scale;
        const int64_t mi = moff + i * mq + j * mk;
        if (c.mask_kind == 1) s += fmask[mi];
        if (c.mask_kind == 2 && !bmask[mi]) s = static_cast<float>(c.fill);
        if (c.causal && j > i) s = static_cast<float>(c.fill);
        sc[j] = s;
        mx = std::max(mx, s);
      }
      double* w = &want[(b * c.lq + i) * c.ev];
      if (mx == kNegInf) {
        for (int64_t d = 0; d < c.ev; ++d)
          w[d] = c.empty_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < c.lk; ++j) sum += sc[j] = std::exp(sc[j] - mx);
      for (int64_t d = 0; d < c.ev; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < c.lk; ++j) acc += sc[j] * v[(b * c.lk + j) * c.ev + d];
        w[d] = acc / sum;
      }
    }
  }

  std::vector<float> got(want.size(), 12345.0f);
  const LaunchContext ctx = make_ctx(threads);
  const int64_t def = c.scale == 0 ? 1 : 0;
  if (c.mask_kind == 0) {
    ASSERT_EQ(c.b1, 1);
    lib::attention(&ctx, q.data(), k.data(), v.data(), got.data(), batch, c.lq, c.lk, c.e, c.ev,
                   c.causal, c.empty_nan, def, c.scale, c.fill);
  } else if (c.mask_kind == 1) {
    lib::attention_masked(&ctx, q.data(), k.data(), v.data(), fmask.data(), got.data(), c.b0, c.b1,
                          int64_t{1}, c.lq, c.lk, c.e, c.ev, m0, m1, int64_t{0}, mq, mk, c.causal,
                          c.empty_nan, def, c.scale, c.fill);
  } else {
    lib::attention_masked(&ctx, q.data(), k.data(), v.data(), static_cast<const bool*>(bmask.get()),
                          got.data(), c.b0, c.b1, int64_t{1}, c.lq, c.lk, c.e, c.ev, m0, m1,
                          int64_t{0}, mq, mk, c.causal, c.empty_nan, def, c.scale, c.fill);
  }
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    if (std::isnan(want[i])) {
      if (!std::isnan(got[i])) ++bad, ADD_FAILURE() << "at " << i << ": want NaN, got " << got[i];
      continue;
    }
    const double tol = 2e-5 * (1.0 + std::fabs(want[i])) * std::sqrt(static_cast<double>(c.e));
    if (!(std::fabs(got[i] - want[i]) <= tol))
      ++bad, ADD_FAILURE() << "at " << i << ": want " << want[i] << ", got " << got[i];
  }
}

TEST(RtAttention, OddLengthsAndHeadSizes) {
  const int64_t sizes[] = {1, 3, 17, 64, 65, 130};
  uint32_t seed = 1;
  for (int64_t lq : sizes)
    for (int64_t lk : sizes) {
      const int64_t e = sizes[(lq + lk) % 6], ev = sizes[(lq * 3 + lk) % 6];
      check(Case{2, 1, lq, lk, e, ev}, 2, seed++);
    }
  for (int64_t e : sizes) check(Case{1, 1, 33, 40, e, e}, 1, seed++);
}

TEST(RtAttention, Causal) {
  uint32_t seed = 100;
  for (int64_t lq : {1, 17, 64, 130})
    for (int64_t lk : {1, 17, 65, 130, 300}) {
      Case c{3, 1, lq, lk, 64, 64};
      c.causal = true;
      check(c, 3, seed++);
    }
}

TEST(RtAttention, AdditiveMasks) {
  uint32_t seed = 200;
  // [b0, 1, 1, lk] (BERT's padding mask), [1, 1, lq, lk], [b0, b1, lq, lk], [1, b1, lq, 1].
  const bool shapes[][4] = {{true, false, false, true},
                            {false, false, true, true},
                            {true, true, true, true},
                            {false, true, true, false}};
  for (const auto& sh : shapes)
    for (int64_t l : {1, 17, 65, 130}) {
      Case c{2, 3, l, l + 5, 17, 64};
      c.mask_kind = 1;
      c.mb0 = sh[0], c.mb1 = sh[1], c.mlq = sh[2], c.mlk = sh[3];
      check(c, 2, seed++);
      c.causal = true;
      c.empty_nan = true;
      check(c, 1, seed++);
    }
}

TEST(RtAttention, BooleanMasks) {
  uint32_t seed = 300;
  const bool shapes[][4] = {{true, false, false, true},
                            {false, false, true, true},
                            {true, true, true, true},
                            {false, true, true, false}};
  for (const auto& sh : shapes)
    for (int64_t l : {3, 64, 130}) {
      Case c{2, 2, l, 2 * l, 64, 65};
      c.mask_kind = 2;
      c.mb0 = sh[0], c.mb1 = sh[1], c.mlq = sh[2], c.mlk = sh[3];
      c.scale = 0.3;
      check(c, 3, seed++);
      c.empty_nan = true;
      check(c, 2, seed++);
      c.fill = -1e4;  // masked_fill with a finite value: fully masked rows average v
      c.causal = true;
      check(c, 2, seed++);
    }
}

}  // namespace
}  // namespace ember_rt
