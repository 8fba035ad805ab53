// Tests for runtime_include/ember_rt/vec.h: every vf operation lane by lane against the float
// version of the same name, partial loads/stores at every n (guarded by an unreadable page),
// masks, reductions and the bf16 / f16 vector conversions.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ember_rt/math.h"
#include "ember_rt/vec.h"

// The tests live inside namespace ember_rt, as generated kernels should: unqualified calls
// such as abs(x) then find ember_rt's overloads first, whatever the C headers declared.
namespace ember_rt {
namespace {

constexpr int W = vf::width;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

// Equal as bit patterns, or both NaN.
bool same(float a, float b) { return (a != a && b != b) || bits_of(a) == bits_of(b); }

std::array<float, W> lanes(vf v) {
  std::array<float, W> r;
  v.store(r.data());
  return r;
}

vf from(const float* p) { return vf::load(p); }

// Inputs: specials plus random values of assorted magnitudes.
std::vector<float> inputs() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 3.5f,
                          kInf, -kInf, kNaN, 1e-40f, -1e-40f, 3.4e38f, -3.4e38f, 1e-30f,
                          7.0f, -7.0f, 100.0f, -100.0f, 0.1f, 1e6f + 0.5f, 8388607.5f};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  std::uniform_int_distribution<int> e(-20, 20);
  while (v.size() % W != 0 || v.size() < 512) v.push_back(std::ldexp(u(rng), e(rng)));
  return v;
}

// A buffer whose end touches an unreadable page, so reading past it faults.
struct GuardedBuffer {
  char* base = nullptr;
  size_t page = 0;
  GuardedBuffer() {
    page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = static_cast<char*>(p);
    mprotect(base + page, page, PROT_NONE);
  }
  ~GuardedBuffer() { munmap(base, 2 * page); }
  template <class T>
  T* tail(int n) {  // room for exactly n elements of T before the guard page
    return reinterpret_cast<T*>(base + page) - n;
  }
};

// Checks f(vf) lane by lane against f(float) on all inputs.
template <class FV, class FS>
void check_unary(const char* name, FV fv, FS fs) {
  const std::vector<float> in = inputs();
  for (size_t i = 0; i < in.size(); i += W) {
    const auto out = lanes(fv(from(&in[i])));
    for (int l = 0; l < W; ++l)
      ASSERT_TRUE(same(out[l], fs(in[i + l])))
          << name << "(" << in[i + l] << "): vector " << out[l] << " scalar " << fs(in[i + l]);
  }
}

template <class FV, class FS>
void check_binary(const char* name, FV fv, FS fs) {
  std::vector<float> a = inputs(), b = inputs();
  std::mt19937 rng(3);
  std::shuffle(b.begin(), b.end(), rng);
  for (size_t i = 0; i < a.size(); i += W) {
    const auto out = lanes(fv(from(&a[i]), from(&b[i])));
    for (int l = 0; l < W; ++l)
      ASSERT_TRUE(same(out[l], fs(a[i + l], b[i + l])))
          << name << "(" << a[i + l] << ", " << b[i + l] << "): vector " << out[l] << " scalar "
          << fs(a[i + l], b[i + l]);
  }
}

TEST(RtVec, ConstructLoadStore) {
  EXPECT_TRUE(W == 16 || W == 8 || W == 1);
  for (float x : lanes(vf())) EXPECT_EQ(bits_of(x), 0u);
  for (float x : lanes(vf(2.5f))) EXPECT_EQ(x, 2.5f);
  for (float x : lanes(vf::broadcast(-1.0f))) EXPECT_EQ(x, -1.0f);
  float src[W], dst[W];
  for (int i = 0; i < W; ++i) src[i] = static_cast<float>(i) * 1.25f - 3.0f;
  vf::load(src).store(dst);
  for (int i = 0; i < W; ++i) EXPECT_EQ(dst[i], src[i]);
}

TEST(RtVec, PartialLoadStoreEveryN) {
  GuardedBuffer g;
  for (int n = 0; n <= W; ++n) {
    float* p = g.tail<float>(n);  // p[n] would fault
    for (int i = 0; i < n; ++i) p[i] = static_cast<float>(i + 1);
    const auto got = lanes(vf::load_partial(p, n));
    for (int i = 0; i < W; ++i) EXPECT_EQ(got[i], i < n ? static_cast<float>(i + 1) : 0.0f) << n;
    for (int i = 0; i < n; ++i) p[i] = -1.0f;
    vf(7.0f).store_partial(p, n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(p[i], 7.0f);
    // The lanes after n are left alone in the middle of a buffer too.
    float buf[W + 1];
    for (float& x : buf) x = -5.0f;
    vf(3.0f).store_partial(buf, n);
    for (int i = 0; i <= W; ++i) EXPECT_EQ(buf[i], i < n ? 3.0f : -5.0f) << n;
  }
}

TEST(RtVec, Arithmetic) {
  check_binary("+", [](vf a, vf b) { return a + b; }, [](float a, float b) { return a + b; });
  check_binary("-", [](vf a, vf b) { return a - b; }, [](float a, float b) { return a - b; });
  check_binary("*", [](vf a, vf b) { return a * b; }, [](float a, float b) { return a * b; });
  check_binary("/", [](vf a, vf b) { return a / b; }, [](float a, float b) { return a / b; });
  check_unary("neg-", [](vf a) { return -a; }, [](float a) { return -a; });
  check_unary("mixed", [](vf a) { return 2.0f * a + 1.0f - a / 4.0f; },
              [](float a) { return 2.0f * a + 1.0f - a / 4.0f; });
  check_binary("compound", [](vf a, vf b) { vf c = a; c += b; c *= b; c -= a; c /= 3.0f; return c; },
               [](float a, float b) { float c = a; c += b; c *= b; c -= a; c /= 3.0f; return c; });
}

TEST(RtVec, ElementwiseMatchesScalar) {
  check_binary("max", [](vf a, vf b) { return max(a, b); }, [](float a, float b) { return max(a, b); });
  check_binary("min", [](vf a, vf b) { return min(a, b); }, [](float a, float b) { return min(a, b); });
  check_unary("abs", [](vf a) { return abs(a); }, [](float a) { return abs(a); });
  check_unary("sqrt", [](vf a) { return sqrt(a); }, [](float a) { return sqrt(a); });
  check_unary("rsqrt", [](vf a) { return rsqrt(a); }, [](float a) { return rsqrt(a); });
  check_unary("floor", [](vf a) { return floor(a); }, [](float a) { return floor(a); });
  check_unary("ceil", [](vf a) { return ceil(a); }, [](float a) { return ceil(a); });
  check_unary("round", [](vf a) { return round(a); }, [](float a) { return round(a); });
  check_unary("neg", [](vf a) { return neg(a); }, [](float a) { return neg(a); });
  check_unary("reciprocal", [](vf a) { return reciprocal(a); }, [](float a) { return reciprocal(a); });
  check_unary("relu", [](vf a) { return relu(a); }, [](float a) { return relu(a); });
  check_binary("fma", [](vf a, vf b) { return fma(a, b, a); },
               [](float a, float b) { return fma(a, b, a); });
  check_binary("max-mixed", [](vf a, vf) { return max(a, 0.0f); },
               [](float a, float) { return max(a, 0.0f); });
}

TEST(RtVec, ElementwiseSemantics) {
  EXPECT_TRUE(std::isnan(max(kNaN, 1.0f)) && std::isnan(max(1.0f, kNaN)));
  EXPECT_TRUE(std::isnan(min(kNaN, 1.0f)) && std::isnan(min(1.0f, kNaN)));
  EXPECT_TRUE(std::isnan(lanes(max(vf(kNaN), vf(1.0f)))[0]));
  EXPECT_TRUE(std::isnan(lanes(min(vf(1.0f), vf(kNaN)))[0]));
  EXPECT_EQ(round(2.5f), 2.0f);
  EXPECT_EQ(round(-3.5f), -4.0f);
  EXPECT_EQ(lanes(round(vf(0.5f)))[0], 0.0f);
  EXPECT_EQ(lanes(round(vf(1.5f)))[0], 2.0f);
  EXPECT_TRUE(std::isnan(relu(kNaN)));
  EXPECT_EQ(relu(-3.0f), 0.0f);
  EXPECT_EQ(rsqrt(4.0f), 0.5f);
  EXPECT_EQ(lanes(rsqrt(vf(0.0f)))[0], kInf);
  EXPECT_EQ(lanes(rsqrt(vf(kInf)))[0], 0.0f);
  // rsqrt is accurate, not the ~12-bit hardware estimate.
  for (float x = 0.01f; x < 1000.0f; x *= 1.37f) {
    const double ref = 1.0 / std::sqrt(static_cast<double>(x));
    EXPECT_NEAR(lanes(rsqrt(vf(x)))[0], ref, ref * 1.2e-7);
  }
}

TEST(RtVec, ComparisonsSelectAndLogic) {
  const std::vector<float> in = inputs();
  std::vector<float> other = in;
  std::rotate(other.begin(), other.begin() + 3, other.end());
  for (int i = 0; i < 16; ++i) other[i * 7 % other.size()] = in[i * 7 % in.size()];  // equal pairs
  for (size_t i = 0; i < in.size(); i += W) {
    const vf a = from(&in[i]), b = from(&other[i]);
    const vm m_lt = lt(a, b), m_le = le(a, b), m_gt = gt(a, b), m_ge = ge(a, b), m_eq = eq(a, b),
             m_ne = ne(a, b);
    auto pick = [&](vm m) { return lanes(select(m, vf(1.0f), vf(0.0f))); };
    const auto r_lt = pick(m_lt), r_le = pick(m_le), r_gt = pick(m_gt), r_ge = pick(m_ge),
               r_eq = pick(m_eq), r_ne = pick(m_ne);
    const auto r_and = pick(logical_and(m_lt, m_ne)), r_or = pick(logical_or(m_gt, m_eq)),
               r_not = pick(logical_not(m_le));
    const auto sel = lanes(select(m_gt, a, b));
    for (int l = 0; l < W; ++l) {
      const float x = in[i + l], y = other[i + l];
      EXPECT_EQ(r_lt[l] != 0, lt(x, y)) << x << " " << y;
      EXPECT_EQ(r_le[l] != 0, le(x, y)) << x << " " << y;
      EXPECT_EQ(r_gt[l] != 0, gt(x, y)) << x << " " << y;
      EXPECT_EQ(r_ge[l] != 0, ge(x, y)) << x << " " << y;
      EXPECT_EQ(r_eq[l] != 0, eq(x, y)) << x << " " << y;
      EXPECT_EQ(r_ne[l] != 0, ne(x, y)) << x << " " << y;
      EXPECT_EQ(r_and[l] != 0, logical_and(lt(x, y), ne(x, y)));
      EXPECT_EQ(r_or[l] != 0, logical_or(gt(x, y), eq(x, y)));
      EXPECT_EQ(r_not[l] != 0, logical_not(le(x, y)));
      EXPECT_TRUE(same(sel[l], select(gt(x, y), x, y)));
    }
  }
  // Mixed forms the generator writes.
  const vf v(2.0f);
  EXPECT_EQ(lanes(select(lt(v, 3.0f), v, 0.0f))[0], 2.0f);
  EXPECT_EQ(lanes(select(gt(1.0f, v), 5.0f, v * 2.0f))[0], 4.0f);
  EXPECT_EQ(select(true, 1.0f, 2.0f), 1.0f);
  EXPECT_TRUE(ne(kNaN, kNaN));
  EXPECT_FALSE(eq(kNaN, kNaN));
}

// bool lanes in memory (one byte each) to and from lane masks: every pattern of the first 8
// lanes (the rest follow another pattern), any nonzero byte loading as true; the partial
// forms at every n read and write nothing past n (the guard page would fault).
TEST(RtVec, BoolMasksLoadAndStore) {
  auto truth = [](vm m) {  // the lanes of m as 0/1 through select
    const auto r = lanes(select(m, vf(1.0f), vf(0.0f)));
    std::array<int, W> t;
    for (int l = 0; l < W; ++l) t[l] = r[l] != 0.0f;
    return t;
  };
  for (int bits = 0; bits < 256; ++bits) {
    unsigned char in[W];
    for (int l = 0; l < W; ++l) {
      const bool on = l < 8 ? (bits >> l) & 1 : ((bits * 7 + l) % 3) == 0;
      in[l] = on ? static_cast<unsigned char>(1 + (bits + l) % 255) : 0;  // any nonzero byte
    }
    bool src[W];
    std::memcpy(src, in, sizeof src);
    const vm m = vm::load(src);
    const auto t = truth(m);
    bool out[W];
    m.store(out);
    unsigned char stored[W];
    std::memcpy(stored, out, sizeof stored);
    for (int l = 0; l < W; ++l) {
      EXPECT_EQ(t[l], in[l] != 0) << bits << " lane " << l;
      EXPECT_EQ(stored[l], in[l] != 0 ? 1 : 0) << bits << " lane " << l;
    }
  }
  for (bool b : {false, true})
    for (int t : truth(vm::broadcast(b))) EXPECT_EQ(t, b ? 1 : 0);
  GuardedBuffer g;
  for (int n = 0; n <= W; ++n) {
    bool* p = g.tail<bool>(n);  // p[n] would fault
    for (int i = 0; i < n; ++i) p[i] = i % 3 != 1;
    const auto t = truth(vm::load_partial(p, n));
    for (int i = 0; i < W; ++i) EXPECT_EQ(t[i], i < n && i % 3 != 1 ? 1 : 0) << n << " " << i;
    const vm ones = vm::broadcast(true);
    ones.store_partial(p, n);
    for (int i = 0; i < n; ++i) EXPECT_TRUE(p[i]) << n;
    // The bytes after n are left alone in the middle of a buffer too.
    unsigned char buf[W + 1];
    std::memset(buf, 7, sizeof buf);
    bool* q = reinterpret_cast<bool*>(buf);
    vm::broadcast(false).store_partial(q, n);
    for (int i = 0; i <= W; ++i) EXPECT_EQ(buf[i], i < n ? 0 : 7) << n << " " << i;
  }
}

TEST(RtVec, Reductions) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  for (int trial = 0; trial < 200; ++trial) {
    float v[W];
    double sum = 0;
    float mx = -kInf, mn = kInf;
    for (int i = 0; i < W; ++i) {
      v[i] = u(rng);
      sum += v[i];
      mx = std::max(mx, v[i]);
      mn = std::min(mn, v[i]);
    }
    EXPECT_NEAR(reduce_add(from(v)), sum, 1e-4 * W);
    EXPECT_EQ(reduce_max(from(v)), mx);
    EXPECT_EQ(reduce_min(from(v)), mn);
    const int nan_lane = trial % W;
    v[nan_lane] = kNaN;
    EXPECT_TRUE(std::isnan(reduce_max(from(v))));
    EXPECT_TRUE(std::isnan(reduce_min(from(v))));
    EXPECT_TRUE(std::isnan(reduce_add(from(v))));
  }
  float ones[W];
  for (float& x : ones) x = 1.0f;
  EXPECT_EQ(reduce_add(from(ones)), static_cast<float>(W));
  EXPECT_EQ(reduce_add(3.0f), 3.0f);
  EXPECT_EQ(reduce_max(-2.0f), -2.0f);
  EXPECT_EQ(reduce_max(vf(-kInf)), -kInf);
}

TEST(RtVec, Bf16AndF16LoadsAllPatterns) {
  for (uint32_t base = 0; base < 65536; base += W) {
    bf16 hb[W];
    f16 hf[W];
    for (int i = 0; i < W; ++i) {
      hb[i] = bf16::from_bits(static_cast<uint16_t>(base + i));
      hf[i] = f16::from_bits(static_cast<uint16_t>(base + i));
    }
    const auto b = lanes(vf::load_bf16(hb)), f = lanes(vf::load_f16(hf));
    for (int i = 0; i < W; ++i) {
      ASSERT_TRUE(same(b[i], to_float(hb[i]))) << base + i;
      ASSERT_TRUE(same(f[i], to_float(hf[i]))) << base + i;
    }
  }
}

TEST(RtVec, Bf16AndF16StoresRoundLikeScalar) {
  std::vector<float> in = inputs();
  std::mt19937 rng(9);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t r = rng();
    in.push_back(std::bit_cast<float>(r));
    in.push_back(std::bit_cast<float>((r & 0xffff0000u) | 0x8000u));  // bf16 ties
    in.push_back(std::bit_cast<float>((r & 0xc7ffe000u) | 0x1000u));  // f16 ties, in range
  }
  in.push_back(std::bit_cast<float>(0x7f800001u));  // signaling NaN
  in.push_back(65520.0f);
  in.push_back(0x1p-25f);
  while (in.size() % W) in.push_back(0.0f);
  for (size_t i = 0; i < in.size(); i += W) {
    bf16 ob[W];
    f16 of[W];
    from(&in[i]).store_bf16(ob);
    from(&in[i]).store_f16(of);
    for (int l = 0; l < W; ++l) {
      ASSERT_EQ(ob[l].bits, to_bf16(in[i + l]).bits) << std::hex << bits_of(in[i + l]);
      ASSERT_EQ(of[l].bits, to_f16(in[i + l]).bits) << std::hex << bits_of(in[i + l]);
    }
  }
}

TEST(RtVec, Bf16AndF16PartialEveryN) {
  GuardedBuffer g;
  for (int n = 0; n <= W; ++n) {
    bf16* pb = g.tail<bf16>(n);
    for (int i = 0; i < n; ++i) pb[i] = bf16(static_cast<float>(i) + 0.5f);
    auto got = lanes(vf::load_partial_bf16(pb, n));
    for (int i = 0; i < W; ++i) EXPECT_EQ(got[i], i < n ? static_cast<float>(i) + 0.5f : 0.0f);
    vf(-1.5f).store_partial_bf16(pb, n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(float(pb[i]), -1.5f);

    f16* ph = g.tail<f16>(n);
    for (int i = 0; i < n; ++i) ph[i] = f16(static_cast<float>(i) - 0.25f);
    got = lanes(vf::load_partial_f16(ph, n));
    for (int i = 0; i < W; ++i) EXPECT_EQ(got[i], i < n ? static_cast<float>(i) - 0.25f : 0.0f);
    vf(3.0f).store_partial_f16(ph, n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(float(ph[i]), 3.0f);

    bf16 mid[W + 1];
    for (auto& h : mid) h = bf16(9.0f);
    vf(2.0f).store_partial_bf16(mid, n);
    for (int i = 0; i <= W; ++i) EXPECT_EQ(float(mid[i]), i < n ? 2.0f : 9.0f);
    f16 midh[W + 1];
    for (auto& h : midh) h = f16(9.0f);
    vf(2.0f).store_partial_f16(midh, n);
    for (int i = 0; i <= W; ++i) EXPECT_EQ(float(midh[i]), i < n ? 2.0f : 9.0f);
  }
}

TEST(RtVec, GeneratedCodeShape) {
  // A typical generated loop: vector body with partial tail, then a scalar reduction.
  std::vector<float> x(1000), y(1000), ref(1000);
  for (int i = 0; i < 1000; ++i) x[i] = std::sin(static_cast<float>(i)) * 3.0f;
  for (int n : {1, 7, 8, 15, 16, 17, 100, 1000}) {
    vf acc(0.0f);
    int i = 0;
    for (; i + W <= n; i += W) {
      const vf v = vf::load(&x[i]);
      const vf r = max(v * 2.0f + 1.0f, 0.0f);
      r.store(&y[i]);
      acc += r;
    }
    if (i < n) {
      const vf v = vf::load_partial(&x[i], n - i);
      const vf r = max(v * 2.0f + 1.0f, 0.0f);
      r.store_partial(&y[i], n - i);
      acc += vf::load_partial(&y[i], n - i);  // the padding lanes of r are not zero
    }
    double s = 0;
    for (int j = 0; j < n; ++j) s += std::max(x[j] * 2.0f + 1.0f, 0.0f);
    EXPECT_NEAR(reduce_add(acc), s, 1e-3) << n;
  }
}

}  // namespace
}  // namespace ember_rt
