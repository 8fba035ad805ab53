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

}  // namespace
}  // namespace ember_rt
