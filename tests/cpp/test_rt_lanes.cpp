// Tests for runtime_include/ember_rt/lanes.h: LaneRange against a brute-force
// count of the lanes where a * i + b >= 0 holds, and the guarded / strided
// loads lane by lane against scalar reads, with the data ending at an
// unreadable page so that a read outside the lanes asked for faults.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "ember_rt/lanes.h"

namespace ember_rt {
namespace {

constexpr int W = vf::width;

// Room for n floats that end right before an unreadable page.
struct GuardedFloats {
  char* base = nullptr;
  size_t page = 0;
  explicit GuardedFloats(int n) {
    page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = static_cast<char*>(p);
    mprotect(base + page, page, PROT_NONE);
    data = reinterpret_cast<float*>(base + page) - n;
    for (int i = 0; i < n; ++i) data[i] = 1.0f + static_cast<float>(i);
  }
  ~GuardedFloats() { munmap(base, 2 * page); }
  float* data = nullptr;
};

std::vector<float> lanes_of(vf v) {
  std::vector<float> out(W);
  v.store(out.data());
  return out;
}

// The lanes [0, limit) with a * i + b >= 0, by counting.
template <int64_t A>
void check_ge(int64_t limit, int64_t b) {
  const LaneRange r = LaneRange(limit).ge<A>(b);
  for (int64_t i = 0; i < W; ++i) {
    const bool want = i < limit && A * i + b >= 0;
    const bool got = i >= r.lo && i < r.hi;
    ASSERT_EQ(got, want) << "a = " << A << ", b = " << b << ", limit = " << limit << ", lane " << i;
  }
}

TEST(RtLanes, RangeOfAffineConditions) {
  for (int64_t limit = 0; limit <= W; ++limit) {
    for (int64_t b = -40; b <= 40; ++b) {
      check_ge<0>(limit, b);
      check_ge<1>(limit, b);
      check_ge<2>(limit, b);
      check_ge<3>(limit, b);
      check_ge<-1>(limit, b);
      check_ge<-2>(limit, b);
      check_ge<-3>(limit, b);
    }
  }
}

TEST(RtLanes, ChainedConditionsIntersect) {
  // 2 <= i + 1 < 6, i.e. lanes 1..4 (clipped by the width)
  const LaneRange r = LaneRange(W).ge<1>(1 - 2).ge<-1>(6 - 1 - 1);
  EXPECT_EQ(r.lo, 1);
  EXPECT_EQ(r.hi, std::min<int64_t>(5, W));
  EXPECT_TRUE(LaneRange(W).full());
  EXPECT_TRUE(LaneRange(W).ge<0>(-1).empty());
  EXPECT_FALSE(LaneRange(W).ge<0>(-1).any());
}

// Every [lo, hi) of every stride, with the last lane read at the buffer's very
// end.
TEST(RtLanes, GuardedAndStridedLoadsReadOnlyTheirLanes) {
  for (int64_t s = 1; s <= 3; ++s) {
    for (int lo = 0; lo <= W; ++lo) {
      for (int hi = lo; hi <= W; ++hi) {
        const int n = hi > lo ? static_cast<int>((hi - 1) * s + 1) : 1;
        GuardedFloats buf(n);
        const float* p = buf.data;  // lane i reads p[i * s]
        const std::vector<float> got =
            lanes_of(s == 1 ? load_range(p, LaneRange(lo, hi))
                            : load_strided_range(p, s, LaneRange(lo, hi)));
        for (int i = 0; i < W; ++i) {
          const float want = i >= lo && i < hi ? p[i * s] : 0.0f;
          ASSERT_EQ(got[i], want) << "stride " << s << ", lanes [" << lo << ", " << hi << "), lane "
                                  << i;
        }
      }
    }
    GuardedFloats full(static_cast<int>((W - 1) * s + 1));
    const std::vector<float> got = lanes_of(load_strided(full.data, s));
    for (int i = 0; i < W; ++i) ASSERT_EQ(got[i], full.data[i * s]) << "stride " << s;
  }
}

TEST(RtLanes, GuardBlendsOutsideTheRange) {
  std::vector<float> x(W), y(W);
  for (int i = 0; i < W; ++i) x[i] = static_cast<float>(i), y[i] = -1.0f;
  for (int lo = 0; lo <= W; ++lo) {
    for (int hi = lo; hi <= W; ++hi) {
      const std::vector<float> got =
          lanes_of(guard(LaneRange(lo, hi), vf::load(x.data()), vf::load(y.data())));
      for (int i = 0; i < W; ++i)
        ASSERT_EQ(got[i], i >= lo && i < hi ? x[i] : y[i]) << lo << " " << hi;
    }
  }
}

// bool lanes read with a stride: the lanes of the range get the bytes' truth (any nonzero
// byte is true), the others false, and nothing past the last lane asked for is read.
TEST(RtLanes, StridedBoolLoadsReadOnlyTheirLanes) {
  for (int64_t s = 1; s <= 3; ++s) {
    for (int lo = 0; lo <= W; ++lo) {
      for (int hi = lo; hi <= W; ++hi) {
        const int n = hi > lo ? static_cast<int>((hi - 1) * s + 1) : 1;
        GuardedFloats buf(n);  // n floats: room for at least n bytes before the guard page
        auto* bytes = reinterpret_cast<unsigned char*>(buf.data + n) - n;
        for (int i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(i % 3 == 0 ? 0 : i);
        const auto* p = reinterpret_cast<const bool*>(bytes);
        const std::vector<float> got =
            lanes_of(select(load_strided_range(p, s, LaneRange(lo, hi)), vf(1.0f), vf(0.0f)));
        for (int i = 0; i < W; ++i) {
          const bool want = i >= lo && i < hi && bytes[i * s] != 0;
          ASSERT_EQ(got[i], want ? 1.0f : 0.0f)
              << "stride " << s << ", lanes [" << lo << ", " << hi << "), lane " << i;
        }
        if (lo == 0 && hi == W) {
          const std::vector<float> whole = lanes_of(select(load_strided(p, s), vf(1.0f), vf(0.0f)));
          EXPECT_EQ(whole, got) << "stride " << s;
        }
      }
    }
  }
}

// Two vectors stored interleaved, whole and for every count of lanes: p[2 i] = a[i],
// p[2 i + 1] = b[i], nothing written after the last pair (the guard page would fault).
TEST(RtLanes, InterleavedStoresWritePairsOfLanes) {
  std::vector<float> a(W), b(W);
  for (int i = 0; i < W; ++i) a[i] = static_cast<float>(i + 1), b[i] = -static_cast<float>(i + 1);
  for (int n = 0; n <= W; ++n) {
    GuardedFloats buf(2 * n > 0 ? 2 * n : 1);
    float* p = buf.data + (2 * n > 0 ? 0 : 1);  // p[2 n] would fault
    if (n == W) {
      store_interleaved(p, vf::load(a.data()), vf::load(b.data()));
      for (int i = 0; i < W; ++i) ASSERT_TRUE(p[2 * i] == a[i] && p[2 * i + 1] == b[i]) << i;
      for (int i = 0; i < 2 * W; ++i) p[i] = 0.0f;
    }
    store_interleaved_partial(p, n, vf::load(a.data()), vf::load(b.data()));
    for (int i = 0; i < n; ++i)
      ASSERT_TRUE(p[2 * i] == a[i] && p[2 * i + 1] == b[i]) << "n " << n << ", lane " << i;
  }
  // In the middle of a buffer, the floats after the n pairs are left alone.
  for (int n = 0; n <= W; ++n) {
    std::vector<float> out(2 * W + 1, 7.0f);
    store_interleaved_partial(out.data(), n, vf::load(a.data()), vf::load(b.data()));
    for (int i = 2 * n; i <= 2 * W; ++i) ASSERT_EQ(out[i], 7.0f) << "n " << n << ", float " << i;
  }
}

// bool lane masks stored interleaved: bytes 0/1 in pairs, none written after the n-th pair.
TEST(RtLanes, InterleavedBoolStoresWritePairsOfLanes) {
  std::vector<float> a(W), b(W);
  for (int i = 0; i < W; ++i) a[i] = static_cast<float>(i % 3), b[i] = static_cast<float>(i % 2);
  const vm ma = gt(vf::load(a.data()), vf(0.0f)), mb = gt(vf::load(b.data()), vf(0.0f));
  for (int n = 0; n <= W; ++n) {
    std::vector<unsigned char> out(2 * W + 1, 7);
    auto* p = reinterpret_cast<bool*>(out.data());
    if (n == W)
      store_interleaved(p, ma, mb);
    else
      store_interleaved_partial(p, n, ma, mb);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(out[2 * i], a[i] > 0 ? 1 : 0) << "n " << n << ", lane " << i;
      ASSERT_EQ(out[2 * i + 1], b[i] > 0 ? 1 : 0) << "n " << n << ", lane " << i;
    }
    for (int i = 2 * n; i <= 2 * W; ++i) ASSERT_EQ(out[i], 7) << "n " << n << ", byte " << i;
  }
}

}  // namespace
}  // namespace ember_rt
