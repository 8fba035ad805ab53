// matmul_nt(a, b) = a @ b^T with b stored [..., N, K]: the GEMM reads b transposed in place
// (float32), the generic reduction does for other dtypes. Checked against a float64 loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/ops.h"
#include "ember/runtime/compiled_graph.h"
#include "error_text.h"

namespace ember {
namespace {

Tensor filled(const std::vector<int64_t>& dims, DType t, double seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(seed + 0.37 * static_cast<double>(i)));
  Shape s;
  for (int64_t d : dims) s.push_back(d);
  return from_values(v, s, t);
}

// out[b, m, n] = sum_k a[b, m, k] * w[b or 0, n, k], a batch of `batch` (w broadcast when
// w_batch is 1).
void expect_product(const Tensor& out, const Tensor& a, const Tensor& w, int64_t batch,
                    int64_t w_batch, int64_t m, int64_t n, int64_t k, double tol) {
  ASSERT_EQ(out.numel(), batch * m * n);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t p = 0; p < k; ++p)
          want += element_as_double(a, (b * m + i) * k + p) *
                  element_as_double(w, ((w_batch == 1 ? 0 : b) * n + j) * k + p);
        EXPECT_NEAR(element_as_double(out, (b * m + i) * n + j), want, tol)
            << "b " << b << " m " << i << " n " << j;
      }
}

TEST(MatmulNT, GemmReadsTheWeightAsStored) {
  for (auto [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 37, 70}, {5, 17, 33}, {64, 48, 96}, {130, 3, 9}}) {
    Tensor a = filled({m, k}, DType::float32, 0.1);
    Tensor w = filled({n, k}, DType::float32, 0.7);
    Tensor x = Tensor::symbol({m, k}, DType::float32, Device::cpu(), "x");
    Tensor y = ops::relu(ops::matmul_nt(x, w));  // with a GEMM epilogue
    auto g = optimize(trace_from({y}, {x})).build();
    Tensor out = g->run({a})[0];
    Tensor plain = ops::matmul_nt(a, w);  // run at once
    expect_product(plain, a, w, 1, 1, m, n, k, 1e-4);
    // The graph's constant weight is read from prepared panels, the eager one as stored: the
    // sums are ordered differently.
    for (int64_t i = 0; i < out.numel(); ++i) {
      const double want = std::max(0.0, element_as_double(plain, i));
      EXPECT_NEAR(element_as_double(out, i), want, 1e-5 * (1 + std::fabs(want)));
    }
  }
}

TEST(MatmulNT, BatchesVectorsAndOtherDtypes) {
  Tensor a = filled({3, 4, 6}, DType::float32, 0.2);
  Tensor w = filled({5, 6}, DType::float32, 0.4);  // broadcast over the batch
  expect_product(ops::matmul_nt(a, w), a, w, 3, 1, 4, 5, 6, 1e-5);
  Tensor wb = filled({3, 5, 6}, DType::float32, 0.9);
  expect_product(ops::matmul_nt(a, wb), a, wb, 3, 3, 4, 5, 6, 1e-5);
  Tensor v = filled({6}, DType::float32, 0.3);  // a vector: out is [5]
  Tensor ov = ops::matmul_nt(v, w);
  EXPECT_EQ(shape_str(ov.shape()), "[5]");
  expect_product(ov, v, w, 1, 1, 1, 5, 6, 1e-5);
  Tensor a64 = filled({4, 6}, DType::float64, 0.5), w64 = filled({5, 6}, DType::float64, 0.6);
  expect_product(ops::matmul_nt(a64, w64), a64, w64, 1, 1, 4, 5, 6, 1e-12);  // the reduction
}

TEST(MatmulNT, ShapeErrors) {
  Tensor a = filled({4, 6}, DType::float32, 0.2);
  EXPECT_TRUE(Contains(error_of([&] {
                         ops::matmul_nt(a, filled({5, 7}, DType::float32, 0));
                       }),
                       "not aligned"));
  EXPECT_TRUE(Contains(error_of([&] { ops::matmul_nt(a, filled({6}, DType::float32, 0)); }),
                       "read transposed in place"));
}

}  // namespace
}  // namespace ember
