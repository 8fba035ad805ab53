// Fused groups with several outputs: an intermediate that is also a graph output (or read by
// a node outside the group) is stored by the fused kernel, in the loop that computes the
// group's last value; fusion never makes a cycle between groups.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "ember/codegen/kernel_plan.h"
#include "ember/compile/build.h"
#include "ember/graph/flow_graph.h"
#include "ember/graph/passes.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/nn.h"
#include "ember/ops/ops.h"
#include "graph_fixture.h"

using namespace ember;
using namespace ember::testing_graph;

namespace {

int fused_nodes(const FlowGraph& g) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == &passes::fused_op();
  return n;
}

double gelu_ref(double h) { return 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0))); }

}  // namespace

TEST(FusionOutputs, ElementwiseChainStoresItsIntermediate) {
  Tensor x = Tensor::symbol({4, 8}, DType::float32, Device::cpu(), "x");
  Tensor a = ops::mul(x, ops::scalar(0.5, DType::float32));
  Tensor b = ops::exp(a);
  FlowGraph g = trace_from({b, a}, {x});
  EXPECT_NE(fusion_log(g).find("ember[fusion]: Fused(y_1, y): Mul, Exp\n"), std::string::npos)
      << fusion_log(g);
  FlowGraph opt = optimize(g);
  ASSERT_EQ(opt.nodes.size(), 1u) << opt.str();
  EXPECT_NE(opt.str().find("y_1: float32[4, 8], y: float32[4, 8] = Fused(x, "), std::string::npos)
      << opt.str();
  // One stage computes both: the intermediate is a further store of the same loop.
  ir::Task task = lower_node(opt, opt.nodes[0], "k");
  ASSERT_EQ(task.stages.size(), 1u) << task.str();
  ASSERT_EQ(task.stages[0].stores.size(), 1u);
  EXPECT_NE(task.str().find(" and b"), std::string::npos) << task.str();
  const std::string plan = codegen::plan_kernel(task).str();
  EXPECT_NE(plan.find("also stores: b"), std::string::npos) << plan;
  EXPECT_NE(plan.find("vector: "), std::string::npos) << plan;
  EXPECT_EQ(plan.find("vector: none"), std::string::npos) << plan;
  Tensor in = seq({4, 8}, -3.0, 0.2);
  std::vector<Tensor> got = opt({in});
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 32; ++i) {
    double v = element_as_double(in, i) * 0.5;
    EXPECT_NEAR(element_as_double(got[1], i), v, 1e-6);
    EXPECT_NEAR(element_as_double(got[0], i), std::exp(v), 1e-5 * std::exp(v));
  }
}

TEST(FusionOutputs, MatmulEpilogueStoresThePreActivation) {
  // h = x @ w + c; y = gelu(h); return y, h (h saved for the backward).
  Tensor x = Tensor::symbol({5, 3}, DType::float32, Device::cpu(), "x");
  Tensor w = seq({3, 4}, -0.5, 0.1), c = seq({4}, -0.2, 0.1);
  Tensor h = ops::add(ops::matmul(x, w), c);
  Tensor y = ops::gelu(h, false);
  FlowGraph opt = optimize(trace_from({y, h}, {x}));
  ASSERT_EQ(opt.nodes.size(), 1u) << opt.str();
  EXPECT_NE(opt.str().find("fused=[Matmul, Add, Gelu], anchor=Matmul"), std::string::npos)
      << opt.str();
  ir::Task task = lower_node(opt, opt.nodes[0], "k");
  ASSERT_EQ(task.stages.size(), 1u) << task.str();
  EXPECT_EQ(task.stages[0].kind, ir::StageKind::Matmul);
  EXPECT_EQ(task.stages[0].stores.size(), 1u) << task.str();
  Tensor in = seq({5, 3}, -1.0, 0.15);
  std::vector<Tensor> got = opt({in});
  ASSERT_EQ(got.size(), 2u);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = element_as_double(c, j);
      for (int k = 0; k < 3; ++k)
        s += element_as_double(in, i * 3 + k) * element_as_double(w, k * 4 + j);
      EXPECT_NEAR(element_as_double(got[1], i * 4 + j), s, 1e-5);
      EXPECT_NEAR(element_as_double(got[0], i * 4 + j), gelu_ref(s), 1e-5);
    }
}

TEST(FusionOutputs, ReductionAndSoftmaxGroupsStoreAnExtraOutput) {
  // s = sum(x * x, 1); y = sqrt(s); return y, s
  Tensor x = Tensor::symbol({3, 5}, DType::float32, Device::cpu(), "x");
  Tensor s = ops::sum(ops::mul(x, x), {1});
  Tensor y = ops::sqrt(s);
  FlowGraph opt = optimize(trace_from({y, s}, {x}));
  ASSERT_EQ(opt.nodes.size(), 1u) << opt.str();
  Tensor in = seq({3, 5}, -1.0, 0.25);
  std::vector<Tensor> got = opt({in});
  for (int i = 0; i < 3; ++i) {
    double r = 0;
    for (int j = 0; j < 5; ++j) r += std::pow(element_as_double(in, i * 5 + j), 2);
    EXPECT_NEAR(element_as_double(got[1], i), r, 1e-5);
    EXPECT_NEAR(element_as_double(got[0], i), std::sqrt(r), 1e-5);
  }
  // p = softmax(x); z = p * 3; return z, p
  Tensor m = Tensor::symbol({4, 6}, DType::float32, Device::cpu(), "m");
  Tensor p = ops::softmax(m, 1);
  Tensor z = ops::mul(p, ops::scalar(3.0, DType::float32));
  FlowGraph sm = optimize(trace_from({z, p}, {m}));
  ASSERT_EQ(sm.nodes.size(), 1u) << sm.str();
  EXPECT_NE(sm.str().find("fused=[Softmax, Mul], anchor=Softmax"), std::string::npos);
  Tensor a = seq({4, 6}, -1.0, 0.3);
  std::vector<Tensor> out = sm({a});
  for (int i = 0; i < 4; ++i) {
    double d = 0;
    for (int j = 0; j < 6; ++j) d += std::exp(element_as_double(a, i * 6 + j));
    for (int j = 0; j < 6; ++j) {
      double ref = std::exp(element_as_double(a, i * 6 + j)) / d;
      EXPECT_NEAR(element_as_double(out[1], i * 6 + j), ref, 1e-6);
      EXPECT_NEAR(element_as_double(out[0], i * 6 + j), 3.0 * ref, 1e-5);
    }
  }
}

TEST(FusionOutputs, NoMergeMakesACycle) {
  // e = exp(x) is read by a sum and by the add of the sum and e: fusing e into the add
  // would make a group that runs before and after the sum.
  Tensor x = Tensor::symbol({4}, DType::float32, Device::cpu(), "x");
  Tensor e = ops::exp(x);
  Tensor y = ops::add(ops::sum(e, {0}, true), e);
  FlowGraph g = trace_from({y}, {x});
  EXPECT_NE(fusion_log(g).find("refused Exp(y) into Add(y_2): a path through another node leads "
                               "back into the group"),
            std::string::npos)
      << fusion_log(g);
  FlowGraph opt = optimize(g);
  EXPECT_EQ(opt.nodes.size(), 3u) << opt.str();
  Tensor in = seq({4}, -1.0, 0.5);
  Tensor got = opt({in})[0];
  double total = 0;
  for (int i = 0; i < 4; ++i) total += std::exp(element_as_double(in, i));
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(element_as_double(got, i), total + std::exp(element_as_double(in, i)), 1e-5);

  // a = x * 2 (an output) feeds a matmul and exp(a); d = exp(a) + a @ w. {Mul, Exp} may
  // write a and exp(a) together, but then the add cannot join them (a -> matmul -> add):
  // it joins the matmul instead, and the groups run in a topological order.
  Tensor xm = Tensor::symbol({4, 4}, DType::float32, Device::cpu(), "xm");
  Tensor w = seq({4, 4}, -0.3, 0.05);
  Tensor am = ops::mul(xm, ops::scalar(2.0, DType::float32));
  Tensor em = ops::exp(am);
  Tensor d = ops::add(em, ops::matmul(am, w));
  FlowGraph opt2 = optimize(trace_from({d, am}, {xm}));
  EXPECT_EQ(opt2.nodes.size(), 2u) << opt2.str();
  EXPECT_EQ(fused_nodes(opt2), 2) << opt2.str();
  Tensor in2 = seq({4, 4}, -0.4, 0.05);
  std::vector<Tensor> got2 = opt2({in2});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k)
        s += 2.0 * element_as_double(in2, i * 4 + k) * element_as_double(w, k * 4 + j);
      double av = 2.0 * element_as_double(in2, i * 4 + j);
      EXPECT_NEAR(element_as_double(got2[1], i * 4 + j), av, 1e-6);
      EXPECT_NEAR(element_as_double(got2[0], i * 4 + j), std::exp(av) + s, 1e-5);
    }
}

TEST(FusionOutputs, GroupsAreEmittedAfterWhatTheyRead) {
  // a = x * 2 joins e = exp(a) as an extra output; the matmul reading a stood before e but
  // must run after the group that writes a.
  Tensor x = Tensor::symbol({3, 3}, DType::float32, Device::cpu(), "x");
  Tensor w = seq({3, 3}, 0.0, 0.1);
  Tensor a = ops::mul(x, ops::scalar(2.0, DType::float32));
  Tensor c = ops::matmul(a, w);
  Tensor e = ops::exp(a);
  FlowGraph opt = optimize(trace_from({c, e, a}, {x}));
  ASSERT_EQ(opt.nodes.size(), 2u) << opt.str();
  EXPECT_EQ(opt.nodes[0].op, &passes::fused_op()) << opt.str();
  Tensor in = seq({3, 3}, -0.5, 0.1);
  std::vector<Tensor> got = opt({in});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k)
        s += 2.0 * element_as_double(in, i * 3 + k) * element_as_double(w, k * 3 + j);
      double av = 2.0 * element_as_double(in, i * 3 + j);
      EXPECT_NEAR(element_as_double(got[0], i * 3 + j), s, 1e-5);
      EXPECT_NEAR(element_as_double(got[1], i * 3 + j), std::exp(av), 1e-5 * std::exp(av));
      EXPECT_NEAR(element_as_double(got[2], i * 3 + j), av, 1e-6);
    }
}

TEST(FusionOutputs, DiamondsOfElementwiseNodesStayAsBefore) {
  // a is read by two elementwise nodes that can both inline it: it stays materialized by
  // a kernel of its own and the rest fuses into one.
  Tensor x = Tensor::symbol({8}, DType::float32, Device::cpu(), "x");
  Tensor a = ops::exp(x);
  Tensor y = ops::add(ops::sin(a), ops::cos(a));
  FlowGraph opt = optimize(trace_from({y}, {x}));
  EXPECT_EQ(opt.nodes.size(), 2u) << opt.str();
}

TEST(FusionOutputs, CheapSharedValuesAreRecomputedInEachConsumer) {
  // A batch norm's backward: xmu = x - mean[c] is read by a reduction's prologue and by an
  // elementwise node. Its subtraction is copied into both instead of stored (no kernel of its
  // own); exp(x), read twice, stays stored (DiamondsOfElementwiseNodesStayAsBefore), and so
  // does a shared value that is a graph output.
  Tensor x = Tensor::symbol({2, 3, 4, 5}, DType::float32, Device::cpu(), "x");
  Tensor mean = Tensor::symbol({1, 3, 1, 1}, DType::float32, Device::cpu(), "mean");
  Tensor dy = Tensor::symbol({2, 3, 4, 5}, DType::float32, Device::cpu(), "dy");
  Tensor xmu = ops::sub(x, mean);
  Tensor s = ops::sum(ops::mul(dy, xmu), {0, 2, 3}, true);
  Tensor dx = ops::sub(ops::mul(dy, ops::scalar(2.0, DType::float32)), ops::mul(xmu, s));
  FlowGraph opt = optimize(trace_from({dx}, {x, mean, dy}));
  ASSERT_EQ(opt.nodes.size(), 2u) << opt.str();  // the reduction, and dx with its epilogue
  for (const Node& n : opt.nodes)
    for (int v : n.outputs)
      EXPECT_FALSE(shape_equal(opt.values[v].shape, x.shape()) && v != opt.outputs[0]) << opt.str();
  Tensor xs = seq({2, 3, 4, 5}, -1.0, 0.01), ms = seq({1, 3, 1, 1}, 0.1, 0.2);
  Tensor ds = seq({2, 3, 4, 5}, 0.5, -0.007);
  std::vector<Tensor> got = opt({xs, ms, ds});
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 20; ++k) {
        const int64_t i = (n * 3 + c) * 20 + k;
        sum += element_as_double(ds, i) * (element_as_double(xs, i) - element_as_double(ms, c));
      }
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 20; ++k) {
        const int64_t i = (n * 3 + c) * 20 + k;
        const double xm = element_as_double(xs, i) - element_as_double(ms, c);
        EXPECT_NEAR(element_as_double(got[0], i), 2.0 * element_as_double(ds, i) - xm * sum,
                    1e-4 * (1.0 + std::abs(xm * sum)));
      }
  }
  // Returned as well: stored once, by a kernel that computes it.
  FlowGraph kept = optimize(trace_from({dx, xmu}, {x, mean, dy}));
  int stores = 0;
  for (const Node& n : kept.nodes)
    for (int v : n.outputs) stores += kept.names[v] == kept.names[kept.outputs[1]];
  EXPECT_EQ(stores, 1) << kept.str();
}

TEST(FusionOutputs, SymbolicShapes) {
  Tensor x = Tensor::symbol({ir::var("n"), 3}, DType::float32, Device::cpu(), "x");
  Tensor a = ops::add(x, ops::scalar(1.0, DType::float32));
  Tensor b = ops::mul(ops::tanh(a), a);
  FlowGraph opt = optimize(trace_from({b, a}, {x}));
  ASSERT_EQ(opt.nodes.size(), 1u) << opt.str();
  for (int64_t n : {1, 7, 40}) {
    Tensor in = seq({n, 3}, -2.0, 0.05);
    std::vector<Tensor> got = opt({in});
    ASSERT_EQ(shape_values(got[1].shape()), (std::vector<int64_t>{n, 3}));
    for (int64_t i = 0; i < n * 3; ++i) {
      double av = element_as_double(in, i) + 1.0;
      EXPECT_NEAR(element_as_double(got[1], i), av, 1e-6);
      EXPECT_NEAR(element_as_double(got[0], i), std::tanh(av) * av, 1e-5);
    }
  }
}
