// Bad data at run time (kernel.h KernelError): indices read from a tensor that are out of
// range, integer division by zero. Each must raise ember::DataError naming the operator,
// never crash or return garbage, and leave the CompiledGraph fit for the next run.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/nn.h"
#include "ember/ops/ops.h"
#include "ember/runtime/compiled_graph.h"
#include "ember/support/error.h"
#include "ember_rt/kernel.h"
#include "error_text.h"

namespace ember {
namespace {

constexpr int64_t kRows = 5, kDim = 4;

// weight[r, d] = 10 * r + d, so a row read is recognizable.
Tensor weight() {
  std::vector<double> v;
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t d = 0; d < kDim; ++d) v.push_back(static_cast<double>(10 * r + d));
  return from_values(v, {kRows, kDim}, DType::float32);
}

Tensor ids(const std::vector<double>& v, DType t = DType::int64) {
  return from_values(v, {static_cast<int64_t>(v.size())}, t);
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

// out[i, d] = 2 * weight[ids[i], d] + 1, checked element by element.
void expect_embedding(const Tensor& out, const std::vector<int64_t>& rows) {
  ASSERT_EQ(out.numel(), static_cast<int64_t>(rows.size()) * kDim);
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t d = 0; d < kDim; ++d)
      EXPECT_EQ(element_as_double(out, static_cast<int64_t>(i) * kDim + d),
                2.0 * static_cast<double>(10 * rows[i] + d) + 1.0);
}

std::shared_ptr<CompiledGraph> embedding_graph(DType index_type) {
  Tensor x = Tensor::symbol({ir::var("n")}, index_type, Device::cpu(), "ids");
  Tensor y = ops::add(ops::mul(ops::embedding(weight(), x), ops::scalar(2.0, DType::float32)),
                      ops::scalar(1.0, DType::float32));
  return optimize(trace_from({y}, {x})).build();
}

TEST(RuntimeErrors, EmbeddingIndexOutOfRangeInACompiledGraph) {
  for (DType t : {DType::int64, DType::int32}) {
    auto g = embedding_graph(t);
    expect_embedding(g->run({ids({4, 0, 2}, t)})[0], {4, 0, 2});
    for (double bad : {5.0, -1.0, 50000.0}) {
      std::string msg = error_of<DataError>([&] { g->run({ids({1, bad, 3}, t)}); });
      expect_contains(msg, "Embedding");
      expect_contains(msg, "index " + std::to_string(static_cast<int64_t>(bad)) +
                               " is out of range for dimension 0");
      expect_contains(msg, "of size 5 (valid indices are 0 to 4");
      expect_contains(msg, "outputs of this run were discarded");
    }
    // No state is left behind: the next good run is right.
    expect_embedding(g->run({ids({3, 1}, t)})[0], {3, 1});
  }
}

TEST(RuntimeErrors, EmbeddingWithSymbolicRowsChecksAgainstTheBoundSize) {
  Tensor w = Tensor::symbol({ir::var("v"), kDim}, DType::float32, Device::cpu(), "w");
  Tensor x = Tensor::symbol({ir::var("n")}, DType::int64, Device::cpu(), "ids");
  auto g = optimize(trace_from({ops::embedding(w, x)}, {w, x})).build();
  Tensor out = g->run({weight(), ids({4})})[0];
  EXPECT_EQ(element_as_double(out, 1), 41.0);
  std::string msg = error_of<DataError>([&] { g->run({weight(), ids({0, 5})}); });
  expect_contains(msg, "index 5 is out of range");
  expect_contains(msg, "of size 5");
}

TEST(RuntimeErrors, EmbeddingIndexOutOfRangeImperative) {
  std::string msg = error_of<DataError>([] { ops::embedding(weight(), ids({0, 7})); });
  expect_contains(msg, "Embedding");
  expect_contains(msg, "index 7 is out of range");
  Tensor ok = ops::embedding(weight(), ids({2}));
  EXPECT_EQ(element_as_double(ok, 3), 23.0);
}

TEST(RuntimeErrors, ManyThreadsOneBadIndex) {
  // Large enough for parallel_for to split it: every chunk runs, one of them reports.
  std::vector<double> v(20000, 1.0);
  v[12345] = 99.0;
  v[777] = -2.0;
  auto g = embedding_graph(DType::int64);
  std::string msg = error_of<DataError>([&] { g->run({ids(v)}); });
  EXPECT_TRUE(msg.find("index 99 ") != std::string::npos ||
              msg.find("index -2 ") != std::string::npos)
      << msg;
}

// Python semantics: the quotient rounds down, the remainder has the divisor's sign.
int64_t floordiv_ref(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

TEST(RuntimeErrors, IntegerDivisionByZero) {
  Tensor a = ids({7, -7, 7, -7, 0});
  Tensor b = ids({2, 2, -2, -2, 3});
  Tensor q = ops::floor_divide(a, b), r = ops::remainder(a, b);
  for (int64_t i = 0; i < 5; ++i) {
    auto x = static_cast<int64_t>(element_as_double(a, i));
    auto y = static_cast<int64_t>(element_as_double(b, i));
    EXPECT_EQ(element_as_double(q, i), static_cast<double>(floordiv_ref(x, y)));
    EXPECT_EQ(element_as_double(r, i), static_cast<double>(x - floordiv_ref(x, y) * y));
  }
  Tensor zero = ids({2, 0, 1, 1, 1});
  expect_contains(error_of<DataError>([&] { ops::floor_divide(a, zero); }),
                  "FloorDivide computing");
  expect_contains(error_of<DataError>([&] { ops::floor_divide(a, zero); }),
                  "integer division by zero (-7 divided by 0)");
  expect_contains(error_of<DataError>([&] { ops::remainder(a, zero); }), "Remainder");
  // A scalar zero divisor, and int32.
  expect_contains(error_of<DataError>([&] { ops::floor_divide(a, ops::scalar(0, DType::int64)); }),
                  "integer division by zero");
  expect_contains(error_of<DataError>([&] {
                    ops::remainder(ids({1, 2}, DType::int32), ids({1, 0}, DType::int32));
                  }),
                  "integer division by zero");
}

TEST(RuntimeErrors, IntegerDivisionByZeroInACompiledGraphThenGoodInput) {
  Tensor x = Tensor::symbol({ir::var("n")}, DType::int64, Device::cpu(), "x");
  Tensor y = Tensor::symbol({ir::var("n")}, DType::int64, Device::cpu(), "y");
  Tensor z = ops::add(ops::floor_divide(x, y), ops::remainder(x, y));
  auto g = optimize(trace_from({z}, {x, y})).build();
  expect_contains(error_of<DataError>([&] {
                    g->run({ids({5, 6}), ids({0, 4})});
                  }),
                  "integer division by zero");
  Tensor out = g->run({ids({5, -6}), ids({3, 4})})[0];
  EXPECT_EQ(element_as_double(out, 0), 1.0 + 2.0);
  EXPECT_EQ(element_as_double(out, 1), -2.0 + 2.0);
}

TEST(RuntimeErrors, MinimumDividedByMinusOneWrapsInsteadOfTrapping) {
  Tensor a = from_values({-2147483648.0}, {1}, DType::int32);
  Tensor m1 = from_values({-1.0}, {1}, DType::int32);
  EXPECT_EQ(element_as_double(ops::floor_divide(a, m1), 0), -2147483648.0);
  EXPECT_EQ(element_as_double(ops::remainder(a, m1), 0), 0.0);
}

TEST(RuntimeErrors, TheFirstReportWins) {
  ember_rt::KernelError error;
  ember_rt::LaunchContext ctx{nullptr, 1, nullptr, &error, nullptr};
  EXPECT_EQ(ember_rt::checked_index(3, 4, &ctx, "a"), 3);
  EXPECT_FALSE(error.reported());
  EXPECT_EQ(ember_rt::checked_index(4, 4, &ctx, "first"), 0);
  EXPECT_EQ(ember_rt::checked_index(-1, 4, &ctx, "second"), 0);
  EXPECT_TRUE(error.reported());
  EXPECT_EQ(error.kind, ember_rt::KernelError::kIndexOutOfRange);
  EXPECT_EQ(std::string(error.site), "first");
  EXPECT_EQ(error.value, 4);
  EXPECT_EQ(error.bound, 4);
  // Nobody listening: the report is dropped, the safe index still comes back.
  ember_rt::LaunchContext quiet{nullptr, 1, nullptr, nullptr, nullptr};
  EXPECT_EQ(ember_rt::checked_index(9, 4, &quiet, "x"), 0);
}

}  // namespace
}  // namespace ember
