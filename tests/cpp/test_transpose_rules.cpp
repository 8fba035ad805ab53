// The rewrite rules for transposes (src/graph/passes/transpose_rules.cpp): permute(permute(x))
// becomes one permute or none, a permute that only moves dimensions of size 1 a reshape, and
// a matrix product of an operand whose last two dimensions a
// permute swapped reads it transposed in place (matmul_nt, matmul_tn, matmul_tt). Values are
// checked against float64 loops over the original operands.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/passes.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/ops.h"
#include "ember/runtime/compiled_graph.h"

namespace ember {
namespace {

Tensor filled(const std::vector<int64_t>& dims, DType t, double seed) {
  Shape s;
  int64_t n = 1;
  for (int64_t d : dims) s.push_back(d), n *= d;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(seed + 0.37 * static_cast<double>(i)));
  return from_values(v, s, t);
}

int count_op(const FlowGraph& g, const std::string& title) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op->title == title;
  return n;
}

TEST(TransposeRules, PermutePairsBecomeOnePermuteOrNone) {
  Tensor x = Tensor::symbol({2, 3, 4}, DType::float32, Device::cpu(), "x");
  Tensor inner = ops::permute(x, {1, 0, 2});
  Tensor composed = ops::permute(inner, {0, 2, 1});                   // [3, 4, 2]: x's dims 1, 2, 0
  Tensor back = ops::permute(ops::permute(x, {2, 0, 1}), {1, 2, 0});  // the identity
  Tensor other = ops::relu(inner);                                    // keeps the inner permute
  FlowGraph g = trace_from({composed, back, other}, {x});
  FlowGraph r = passes::rewrite_patterns(g);
  EXPECT_EQ(count_op(g, "Permute"), 4);
  EXPECT_EQ(count_op(r, "Permute"), 2) << r.str();  // inner (read by relu) and composed
  EXPECT_EQ(r.outputs.at(1), r.inputs.at(0)) << "the identity is x itself: " << r.str();
  Tensor a = filled({2, 3, 4}, DType::float32, 0.3);
  std::vector<Tensor> out = optimize(g).build()->run({a});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(shape_str(out[0].shape()), "[3, 4, 2]");
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        const double v = element_as_double(a, (i * 3 + j) * 4 + k);
        EXPECT_EQ(element_as_double(out[0], (j * 4 + k) * 2 + i), v);
        EXPECT_EQ(element_as_double(out[1], (i * 3 + j) * 4 + k), v);
        EXPECT_EQ(element_as_double(out[2], (j * 2 + i) * 4 + k), std::max(0.0, v));
      }
}

TEST(TransposeRules, PermutesOfUnitDimensionsBecomeReshapes) {
  // A 1x1 transposed convolution's output: [N, O, 1, 1, H, W] -> [N, O, H, 1, W, 1].
  Tensor x = Tensor::symbol({2, 3, 1, 1, 4, 5}, DType::float32, Device::cpu(), "x");
  Tensor units = ops::relu(ops::permute(x, {0, 1, 4, 2, 5, 3}));
  Tensor moves = ops::permute(x, {0, 4, 2, 3, 1, 5});  // swaps 3 and 4: a real transpose
  FlowGraph g = trace_from({units, moves}, {x});
  FlowGraph r = passes::rewrite_patterns(g);
  EXPECT_EQ(count_op(g, "Permute"), 2);
  EXPECT_EQ(count_op(r, "Permute"), 1) << r.str();
  EXPECT_EQ(count_op(r, "Reshape"), 1) << r.str();
  Tensor a = filled({2, 3, 1, 1, 4, 5}, DType::float32, 0.7);
  std::vector<Tensor> out = optimize(g).build()->run({a});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(shape_str(out[0].shape()), "[2, 3, 4, 1, 5, 1]");
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t w = 0; w < 5; ++w) {
          const double v = element_as_double(a, ((n * 3 + o) * 4 + h) * 5 + w);
          EXPECT_EQ(element_as_double(out[0], ((n * 3 + o) * 4 + h) * 5 + w), std::max(0.0, v));
          EXPECT_EQ(element_as_double(out[1], ((n * 4 + h) * 3 + o) * 5 + w),
                    v);  // [2, 4, 1, 1, 3, 5]
        }
}

// a[b, m, k] (stored [b, k, m] when ta) times b[b?, k, n] (stored [b?, n, k] when tb), each
// transposed operand written as a permute of the stored one.
struct Product {
  bool ta, tb;
  int64_t batch, b_batch, m, n, k;
  DType dtype;
};

TEST(TransposeRules, ProductsReadPermutedOperandsInPlace) {
  const char* titles[2][2] = {{"Matmul", "MatmulNT"}, {"MatmulTN", "MatmulTT"}};
  for (const Product& p : {Product{false, true, 1, 1, 5, 17, 33, DType::float32},
                           Product{true, false, 1, 1, 37, 29, 8, DType::float32},
                           Product{true, true, 1, 1, 9, 21, 14, DType::float32},
                           Product{true, false, 3, 3, 6, 10, 7, DType::float32},
                           Product{true, true, 3, 1, 4, 5, 6, DType::float32},
                           Product{true, false, 2, 2, 4, 3, 5, DType::float64},
                           Product{false, true, 2, 1, 4, 3, 5, DType::float64}}) {
    SCOPED_TRACE(std::string(titles[p.ta][p.tb]) + " batch " + std::to_string(p.batch) + " dtype " +
                 dtype_name(p.dtype));
    auto dims = [](int64_t batch, int64_t r, int64_t c) {
      return batch == 1 ? std::vector<int64_t>{r, c} : std::vector<int64_t>{batch, r, c};
    };
    const std::vector<int64_t> a_dims = p.ta ? dims(p.batch, p.k, p.m) : dims(p.batch, p.m, p.k);
    const std::vector<int64_t> b_dims =
        p.tb ? dims(p.b_batch, p.n, p.k) : dims(p.b_batch, p.k, p.n);
    Tensor a = filled(a_dims, p.dtype, 0.1), b = filled(b_dims, p.dtype, 0.8);
    Shape as, bs;
    for (int64_t d : a_dims) as.push_back(d);
    for (int64_t d : b_dims) bs.push_back(d);
    Tensor xa = Tensor::symbol(as, p.dtype, Device::cpu(), "a");
    Tensor xb = Tensor::symbol(bs, p.dtype, Device::cpu(), "b");
    auto swap_last = [](const Tensor& t) {
      std::vector<int64_t> d;
      for (size_t i = 0; i < t.shape().size(); ++i) d.push_back(static_cast<int64_t>(i));
      std::swap(d[d.size() - 1], d[d.size() - 2]);
      return ops::permute(t, d);
    };
    Tensor y = ops::relu(ops::matmul(p.ta ? swap_last(xa) : xa, p.tb ? swap_last(xb) : xb));
    FlowGraph g = trace_from({y}, {xa, xb});
    FlowGraph opt = optimize(g);
    EXPECT_EQ(count_op(passes::rewrite_patterns(g), titles[p.ta][p.tb]), 1);
    EXPECT_EQ(count_op(opt, "Permute"), 0) << opt.str();
    Tensor out = opt.build()->run({a, b})[0];
    ASSERT_EQ(out.numel(), p.batch * p.m * p.n);
    const double tol = p.dtype == DType::float64 ? 1e-12 : 1e-5;
    for (int64_t bb = 0; bb < p.batch; ++bb)
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) {
          const int64_t wb = p.b_batch == 1 ? 0 : bb;
          double want = 0;
          for (int64_t q = 0; q < p.k; ++q) {
            const int64_t ai = p.ta ? (bb * p.k + q) * p.m + i : (bb * p.m + i) * p.k + q;
            const int64_t bi = p.tb ? (wb * p.n + j) * p.k + q : (wb * p.k + q) * p.n + j;
            want += element_as_double(a, ai) * element_as_double(b, bi);
          }
          EXPECT_NEAR(element_as_double(out, (bb * p.m + i) * p.n + j), std::max(0.0, want),
                      tol * (1 + std::fabs(want)))
              << "b " << bb << " m " << i << " n " << j;
        }
  }
}

TEST(TransposeRules, OtherPermutesStay) {
  // A permute that moves a batch dimension is not a transposed operand.
  Tensor xa = Tensor::symbol({2, 3, 4}, DType::float32, Device::cpu(), "a");
  Tensor xb = Tensor::symbol({3, 4, 5}, DType::float32, Device::cpu(), "b");
  Tensor y = ops::matmul(ops::permute(xa, {1, 0, 2}), xb);
  FlowGraph r = passes::rewrite_patterns(trace_from({y}, {xa, xb}));
  EXPECT_EQ(count_op(r, "Permute"), 1);
  EXPECT_EQ(count_op(r, "Matmul"), 1);
}

}  // namespace
}  // namespace ember
