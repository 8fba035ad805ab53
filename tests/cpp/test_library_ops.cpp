// Operators computed by a runtime library routine (a Call stage): scans, sorts, scatters.
// Each is checked element by element against a plain loop, imperatively and in a compiled
// graph with symbolic sizes; a scatter index out of range raises ember::DataError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "ember/compile/build.h"
#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/ops.h"
#include "ember/runtime/compiled_graph.h"
#include "ember/support/error.h"

namespace ember {
namespace {

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(element_as_double(t, i));
  return v;
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want, double tol = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else if (std::isinf(want[i]) || tol == 0) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at " << i;
    }
  }
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(LibraryOps, CumsumAlongEachAxis) {
  // x[i, j] = i * 3 + j over [2, 3].
  Tensor x = from_values({0, 1, 2, 3, 4, 5}, {2, 3}, DType::float32);
  expect_same(values_of(ops::cumsum(x, 1)), {0, 1, 3, 3, 7, 12});
  expect_same(values_of(ops::cumsum(x, 0)), {0, 1, 2, 3, 5, 7});
  expect_same(values_of(ops::cumsum(x, -2)), {0, 1, 2, 3, 5, 7});
  Tensor i = from_values({5, -2, 7}, {3}, DType::int64);
  Tensor ci = ops::cumsum(i, 0);
  EXPECT_EQ(ci.dtype(), DType::int64);
  expect_same(values_of(ci), {5, 3, 10});
  expect_same(values_of(ops::cumprod(i, 0)), {5, -10, -70});
}

TEST(LibraryOps, LongFloatCumsumAccumulatesInDouble) {
  const int64_t n = 100000;
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = 0.1 + static_cast<double>(k % 7) * 0.01;
  Tensor x = from_values(v, {n}, DType::float32);
  std::vector<double> got = values_of(ops::cumsum(x, 0));
  double acc = 0;
  for (int64_t k = 0; k < n; ++k) {
    acc += static_cast<double>(static_cast<float>(v[k]));
    ASSERT_NEAR(got[k], acc, 1e-6 * acc) << "at " << k;
  }
}

TEST(LibraryOps, LogcumsumexpAndRunningMaxWithNaN) {
  Tensor x = from_values({1, -kInf, 3, kNaN, 0}, {5}, DType::float64);
  std::vector<double> want;
  double acc = -kInf;
  for (double v : {1.0, -kInf, 3.0}) {
    acc = std::max(acc, v) + std::log1p(std::exp(std::min(acc, v) - std::max(acc, v)));
    want.push_back(acc);
  }
  want.push_back(kNaN);
  want.push_back(kNaN);
  expect_same(values_of(ops::logcumsumexp(x, 0)), want, 1e-12);

  Tensor y = from_values({1, 2, 2, kNaN, 5, kNaN}, {6}, DType::float32);
  std::vector<Tensor> m = ops::cummax(y, 0);
  expect_same(values_of(m[0]), {1, 2, 2, kNaN, kNaN, kNaN});
  expect_same(values_of(m[1]), {0, 1, 2, 3, 3, 5});  // ties take the later; each NaN too
  std::vector<Tensor> lo = ops::cummin(from_values({3, 1, 1, 2}, {4}, DType::int64), 0);
  expect_same(values_of(lo[0]), {3, 1, 1, 1});
  expect_same(values_of(lo[1]), {0, 1, 2, 2});
}

TEST(LibraryOps, StableSortWithNaNAboveEveryNumber) {
  Tensor x = from_values({2, kNaN, 1, 2, -kInf, 1}, {1, 6}, DType::float32);
  std::vector<Tensor> up = ops::sort(x, 1);
  expect_same(values_of(up[0]), {-kInf, 1, 1, 2, 2, kNaN});
  expect_same(values_of(up[1]), {4, 2, 5, 0, 3, 1});
  std::vector<Tensor> down = ops::sort(x, -1, true);
  expect_same(values_of(down[0]), {kNaN, 2, 2, 1, 1, -kInf});
  expect_same(values_of(down[1]), {1, 0, 3, 2, 5, 4});
  // Along axis 0 of [3, 2]: each column sorted on its own.
  Tensor c = from_values({3, 0, 1, 5, 2, 4}, {3, 2}, DType::int64);
  std::vector<Tensor> cs = ops::sort(c, 0);
  expect_same(values_of(cs[0]), {1, 0, 2, 4, 3, 5});
  expect_same(values_of(cs[1]), {1, 0, 2, 2, 0, 1});
}

TEST(LibraryOps, SortInACompiledGraphWithSymbolicSizes) {
  ir::Expr n = ir::var("n"), m = ir::var("m");
  Tensor x = Tensor::symbol({n, m}, DType::float32, Device::cpu(), "x");
  std::vector<Tensor> s = ops::sort(x, 1, true);
  Tensor c = ops::cumsum(x, 0);
  auto g = optimize(trace_from({s[0], s[1], c}, {x})).build();
  // 300 rows of 7 (enough work to split across threads): row r holds (r * 5 + k * 3) % 7.
  const int64_t rows = 300, cols = 7;
  std::vector<double> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) v.push_back(static_cast<double>((r * 5 + k * 3) % 7));
  std::vector<Tensor> out = g->run({from_values(v, {rows, cols}, DType::float32)});
  std::vector<double> vals = values_of(out[0]), idx = values_of(out[1]), sums = values_of(out[2]);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> order(cols);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return v[r * cols + a] > v[r * cols + b]; });
    for (int64_t k = 0; k < cols; ++k) {
      ASSERT_EQ(idx[r * cols + k], static_cast<double>(order[k]));
      ASSERT_EQ(vals[r * cols + k], v[r * cols + order[k]]);
    }
  }
  for (int64_t k = 0; k < cols; ++k) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r) {
      acc += v[r * cols + k];
      ASSERT_EQ(sums[r * cols + k], acc);
    }
  }
}

TEST(LibraryOps, ScatterReducesInIndexOrder) {
  Tensor self = from_values({1, 1, 1, 1, 1, 1}, {2, 3}, DType::float32);
  // Along axis 1: row 0 writes columns 2, 0, 2; row 1 writes column 1 twice.
  Tensor index = from_values({2, 0, 2, 1, 1, 0}, {2, 3}, DType::int64);
  Tensor src = from_values({10, 20, 30, 40, 50, 60}, {2, 3}, DType::float32);
  expect_same(values_of(ops::scatter(self, 1, index, src, "assign")), {20, 1, 30, 60, 50, 1});
  expect_same(values_of(ops::scatter(self, 1, index, src, "sum")), {21, 1, 41, 61, 91, 1});
  expect_same(values_of(ops::scatter(self, 1, index, src, "sum", false)), {20, 1, 40, 60, 90, 1});
  expect_same(values_of(ops::scatter(self, 1, index, src, "mean")),
              {10.5, 1, 41.0 / 3, 61.0 / 2, 91.0 / 3, 1}, 1e-6);
  expect_same(values_of(ops::scatter(self, 1, index, src, "amax", false)), {20, 1, 30, 60, 50, 1});
  expect_same(values_of(ops::scatter(self, 1, index, src, "prod")), {20, 1, 300, 60, 2000, 1});
}

TEST(LibraryOps, ScatterAlongTheFirstAxisOfALargeTensorIsDeterministic) {
  // [2000, 3] scattered along axis 0 from [4000, 3]: row k of src goes to row (k * 7) % 2000,
  // each row twice; lines (columns) run in parallel, each in index order.
  const int64_t n = 2000, m = 4000;
  std::vector<double> idx, src;
  for (int64_t k = 0; k < m; ++k)
    for (int64_t c = 0; c < 3; ++c) {
      idx.push_back(static_cast<double>((k * 7) % n));
      src.push_back(static_cast<double>(k * 3 + c));
    }
  Tensor self = from_values(std::vector<double>(n * 3, 0.0), {n, 3}, DType::float64);
  Tensor index = from_values(idx, {m, 3}, DType::int64);
  Tensor s = from_values(src, {m, 3}, DType::float64);
  std::vector<double> want_last(n * 3, 0.0), want_sum(n * 3, 0.0);
  for (int64_t k = 0; k < m; ++k)
    for (int64_t c = 0; c < 3; ++c) {
      const auto t = static_cast<size_t>(((k * 7) % n) * 3 + c);
      want_last[t] = src[static_cast<size_t>(k * 3 + c)];
      want_sum[t] += src[static_cast<size_t>(k * 3 + c)];
    }
  expect_same(values_of(ops::scatter(self, 0, index, s, "assign")), want_last);
  expect_same(values_of(ops::scatter(self, 0, index, s, "sum")), want_sum);
}

TEST(LibraryOps, ScatterOfWideRowsAddsInIndexOrderInFloat32) {
  // [2, n, w] scattered along axis 1 from [2, m, w], w = 150 (blocks of 64, 64 and 22
  // columns): the row of each element depends on its column too, rows repeat, and the values'
  // magnitudes differ by 1e8, so a sum in any other order than k's rounds differently.
  const int64_t outer = 2, n = 50, m = 300, w = 150;
  std::vector<double> idx, src;
  std::vector<float> want_sum(static_cast<size_t>(outer * n * w), 0.0f);
  std::vector<float> want_last = want_sum, want_max(want_sum.size(), -1e30f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < m; ++k)
      for (int64_t c = 0; c < w; ++c) {
        const int64_t j = (k * 7 + c * 3 + o) % n;
        const float v = (k % 3 == 0 ? 1e8f : 1.0f) * static_cast<float>((k * 31 + c) % 17 - 8);
        idx.push_back(static_cast<double>(j));
        src.push_back(static_cast<double>(v));
        const auto t = static_cast<size_t>((o * n + j) * w + c);
        want_sum[t] += v;
        want_last[t] = v;
        want_max[t] = std::max(want_max[t], v);
      }
  Tensor self =
      from_values(std::vector<double>(want_sum.size(), 0.0), {outer, n, w}, DType::float32);
  Tensor index = from_values(idx, {outer, m, w}, DType::int64);
  Tensor s = from_values(src, {outer, m, w}, DType::float32);
  auto as_doubles = [](const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
  };
  expect_same(values_of(ops::scatter(self, 1, index, s, "sum")), as_doubles(want_sum));
  expect_same(values_of(ops::scatter(self, 1, index, s, "assign")), as_doubles(want_last));
  for (float& v : want_max) v = std::max(v, 0.0f);  // self's zeros take part
  expect_same(values_of(ops::scatter(self, 1, index, s, "amax")), as_doubles(want_max));
  // An index out of range in one column of one row is a DataError here too.
  idx[static_cast<size_t>((m / 2) * w + 100)] = static_cast<double>(n);
  EXPECT_THROW(ops::scatter(self, 1, from_values(idx, {outer, m, w}, DType::int64), s, "sum"),
               DataError);
}

TEST(LibraryOps, ScatterIndexOutOfRangeIsADataError) {
  Tensor self = from_values({0, 0, 0}, {3}, DType::float32);
  Tensor src = from_values({1, 2}, {2}, DType::float32);
  for (double bad : {3.0, -1.0}) {
    Tensor index = from_values({0, bad}, {2}, DType::int64);
    try {
      ops::scatter(self, 0, index, src, "sum");
      ADD_FAILURE() << "no DataError for index " << bad;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("is out of range"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(ops::scatter(self, 0, from_values({0, 1}, {2}, DType::int64), src, "median"), Error);
}

TEST(LibraryOps, GatherAndSearchSorted) {
  Tensor x = from_values({10, 11, 12, 20, 21, 22}, {2, 3}, DType::float32);
  Tensor idx = from_values({2, 2, 0, 1}, {2, 2}, DType::int64);
  expect_same(values_of(ops::gather(x, 1, idx)), {12, 12, 20, 21});
  EXPECT_THROW(ops::gather(x, 1, from_values({3, 0, 0, 0}, {2, 2}, DType::int64)), DataError);
  Tensor seq = from_values({1, 2, 2, 5, kNaN}, {5}, DType::float32);
  Tensor v = from_values({2, kNaN, 0, 9, 5}, {5}, DType::float32);
  // torch's comparisons: a NaN compares false, so the search steps past NaN elements.
  expect_same(values_of(ops::searchsorted(seq, v)), {1, 5, 0, 5, 5});
  expect_same(values_of(ops::searchsorted(seq, v, true)), {5, 5, 0, 5, 5});
  // One row of the sequence per row of values.
  Tensor rows = from_values({0, 1, 2, 10, 20, 30}, {2, 3}, DType::int64);
  Tensor q = from_values({1, 25}, {2, 1}, DType::int64);
  expect_same(values_of(ops::searchsorted(rows, q)), {1, 2});
}

TEST(LibraryOps, TaskTextShowsTheCall) {
  ir::Expr n = ir::var("n");
  Tensor x = Tensor::symbol({4, n}, DType::float32, Device::cpu(), "x");
  FlowGraph g = trace_from(ops::sort(x, 1), {x});
  ir::Task t = lower_node(g, g.nodes.at(0), "k");
  EXPECT_NE(t.str().find("sort_ascending(b0, &b1, &b2, 4, n, 1)"), std::string::npos) << t.str();
}

}  // namespace
}  // namespace ember
