// Tracing, printing, passes (golden before / after text) and running graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "ember/graph/flow_graph.h"
#include "ember/graph/passes.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/ops.h"
#include "ember/support/error.h"
#include "graph_fixture.h"

using namespace ember;
using namespace ember::testing_graph;

TEST(Graph, TraceAndPrint) {
  Tensor b = seq({3, 2});
  Tensor c = seq({2});
  Tensor x = Tensor::symbol({2, 3}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::add(ops::matmul(x, b), c);
  EXPECT_TRUE(y.is_symbolic());
  ASSERT_TRUE(y.trace());
  FlowGraph g = trace_from({y}, {x});
  EXPECT_EQ(g.str(),
            "Graph(x: float32[2, 3]) {\n"
            "  c = Constant(float32[3, 2])\n"
            "  c_1 = Constant(float32[2])\n"
            "  y: float32[2, 2] = Matmul(x, c)\n"
            "  y_1: float32[2, 2] = Add(y, c_1)\n"
            "  return y_1\n"
            "}");
}

TEST(Graph, FusionPutsTheBiasAddIntoTheMatmul) {
  Tensor x = Tensor::symbol({2, 3}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::relu(ops::add(ops::matmul(x, seq({3, 2})), seq({2})));
  FlowGraph opt = optimize(trace_from({y}, {x}));
  ASSERT_EQ(opt.nodes.size(), 1u);
  EXPECT_NE(opt.str().find("= Fused(x, c, c_1, fused=[Matmul, Add, Relu], anchor=Matmul)"),
            std::string::npos)
      << opt.str();
  // And it computes the same as the unfused graph, element by element.
  Tensor a = seq({2, 3}, -1.0, 0.5);
  Tensor got = opt({a})[0];
  std::vector<double> bv = {0, 1, 2, 3, 4, 5}, cv = {0, 1};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = cv[j];
      for (int k = 0; k < 3; ++k) s += element_as_double(a, i * 3 + k) * bv[k * 2 + j];
      EXPECT_NEAR(element_as_double(got, i * 2 + j), std::max(s, 0.0), 1e-5);
    }
}

TEST(Graph, ElementwiseChainsBecomeOneKernel) {
  Tensor x = Tensor::symbol({4, 8}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::exp(ops::mul(ops::add(x, ops::scalar(1.0, DType::float32)), x));
  FlowGraph opt = optimize(trace_from({y}, {x}));
  ASSERT_EQ(opt.nodes.size(), 1u) << opt.str();
  Tensor a = seq({4, 8}, -2.0, 0.125);
  Tensor got = opt({a})[0];
  for (int i = 0; i < 32; ++i) {
    double v = element_as_double(a, i);
    EXPECT_NEAR(element_as_double(got, i), std::exp((v + 1) * v), 1e-5 * std::exp((v + 1) * v));
  }
}

TEST(Graph, ReductionTakesPrologueAndEpilogue) {
  Tensor x = Tensor::symbol({3, 5}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::sqrt(ops::sum(ops::mul(x, x), {1}));
  FlowGraph opt = optimize(trace_from({y}, {x}));
  ASSERT_EQ(opt.nodes.size(), 1u) << opt.str();
  EXPECT_NE(opt.str().find("fused=[Mul, Sum, Sqrt], anchor=Sum"), std::string::npos) << opt.str();
  Tensor a = seq({3, 5}, -1.0, 0.25);
  Tensor got = opt({a})[0];
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 5; ++j) s += std::pow(element_as_double(a, i * 5 + j), 2);
    EXPECT_NEAR(element_as_double(got, i), std::sqrt(s), 1e-5);
  }
}

TEST(Graph, SharedValuesAreNotInlined) {
  Tensor x = Tensor::symbol({4}, DType::float32, Device::cpu(), "x");
  Tensor e = ops::exp(x);
  Tensor y = ops::add(ops::sum(e, {0}, true), e);  // e has two consumers
  FlowGraph opt = optimize(trace_from({y}, {x}));
  EXPECT_EQ(opt.nodes.size(), 3u) << opt.str();
}

TEST(Graph, FusionLogsEveryDecisionWithItsReason) {
  Tensor x = Tensor::symbol({4}, DType::float32, Device::cpu(), "x");
  Tensor e = ops::exp(x);
  Tensor y = ops::add(ops::sum(e, {0}, true), e);  // e has two consumers
  FlowGraph g = trace_from({y}, {x});
  ASSERT_EQ(g.nodes.size(), 3u) << g.str();  // y = Exp, y_1 = Sum, y_2 = Add
  const std::string log = fusion_log(g, "fusion");
  EXPECT_EQ(log,
            "ember[fusion]: refused Exp(y) into Sum(y_1): y has 2 uses\n"
            "ember[fusion]: refused Sum(y_1) into Add(y_2): Add writes float32[4] but y_1 is "
            "float32[1]\n"
            "ember[fusion]: refused Exp(y) into Add(y_2): a path through another node leads "
            "back into the group\n");
  // Accepted fusions are logged too: a prologue inlined, an epilogue joined.
  Tensor m = Tensor::symbol({3, 5}, DType::float32, Device::cpu(), "m");
  FlowGraph r = trace_from({ops::sqrt(ops::sum(ops::mul(m, m), {1}))}, {m});
  EXPECT_EQ(fusion_log(r, "debug,fusion"),
            "ember[fusion]: fused Mul(y) into Sum(y_1): inlined\n"
            "ember[fusion]: fused Sum(y_1) into Sqrt(y_2): epilogue\n");
  // A matmul reads materialized buffers: its operand's producer is not inlined.
  Tensor a = Tensor::symbol({3, 2}, DType::float32, Device::cpu(), "a");
  FlowGraph mm = trace_from({ops::matmul(ops::permute(a, {1, 0}), a)}, {a});
  EXPECT_EQ(fusion_log(mm, "fusion"),
            "ember[fusion]: refused Permute(y) into Matmul(y_1): Matmul takes no prologue\n");
  // Other channels, or none, print nothing.
  EXPECT_EQ(fusion_log(g, "debug"), "");
  EXPECT_EQ(fusion_log(g, ""), "");
}

TEST(Graph, ConstantFolding) {
  // Tracing runs all-constant operators at once, so build such a graph by hand.
  TensorType t{DType::float32, {2}, Device::cpu()};
  FlowGraph g;
  int x = g.add_value(t, "x");
  g.inputs = {x};
  int c = g.add_value(t, "c");
  g.constants[c] = seq({2});
  int e = g.nodes[g.add_node(&op_def("exp"), NoAttrs{}, {c}, {t})].outputs[0];
  int y = g.nodes[g.add_node(&op_def("add"), NoAttrs{}, {x, e}, {t})].outputs[0];
  g.outputs = {y};
  FlowGraph folded = passes::fold_constants(g);
  ASSERT_EQ(folded.nodes.size(), 1u) << folded.str();
  EXPECT_EQ(folded.nodes[0].op->name, "add");
  Tensor got = folded({seq({2})})[0];
  EXPECT_NEAR(element_as_double(got, 1), 1.0 + std::exp(1.0), 1e-4);
}

TEST(Graph, DumpAndTimings) {
  auto dir = std::filesystem::temp_directory_path() / "ember_dump_test";
  std::filesystem::remove_all(dir);
  Tensor x = Tensor::symbol({2}, DType::float32, Device::cpu(), "x");
  FlowGraph g = trace_from({ops::relu(x)}, {x});
  std::vector<PassTiming> t;
  PassOptions options;
  options.dump_dir = dir.string();
  optimize(g, options, &t);
  EXPECT_EQ(t.size(), pass_names().size());
  EXPECT_TRUE(std::filesystem::exists(dir / "00_input.txt"));
  const std::vector<std::string> names = pass_names();
  for (size_t i = 0; i < names.size(); ++i) {  // one dump per pass, numbered in order
    char prefix[24];
    std::snprintf(prefix, sizeof(prefix), "%02zu_", i + 1);
    EXPECT_TRUE(std::filesystem::exists(dir / (prefix + names[i] + ".txt"))) << prefix << names[i];
  }
}

TEST(Graph, TraceNeedsItsInputs) {
  Tensor x = Tensor::symbol({2}, DType::float32, Device::cpu(), "x");
  Tensor z = Tensor::symbol({2}, DType::float32, Device::cpu(), "z");
  Tensor y = ops::add(x, z);
  try {
    trace_from({y}, {x});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "trace_from: the outputs depend on symbolic tensor 'z' of type float32[2] that "
                 "is not among the inputs; pass it in `inputs`");
  }
  // Without inputs, they are discovered.
  FlowGraph g = trace_from({y});
  EXPECT_EQ(g.inputs.size(), 2u);
}

TEST(Graph, SymbolicShapesRunWithDifferentSizes) {
  Tensor x = Tensor::symbol({ir::var("n"), 3}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::mul(ops::softmax(x, -1), ops::scalar(2.0, DType::float32));
  FlowGraph g = optimize(trace_from({y}, {x}));
  for (int64_t n : {1, 5, 33}) {
    Tensor a = seq({n, 3}, 0.0, 0.1);
    Tensor got = g({a})[0];
    ASSERT_EQ(shape_values(got.shape()), (std::vector<int64_t>{n, 3}));
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < 3; ++j) s += element_as_double(got, i * 3 + j);
      EXPECT_NEAR(s, 2.0, 1e-5);
    }
  }
}

TEST(Graph, CompositeTakesAnEpilogue) {
  Tensor x = Tensor::symbol({4, 6}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::mul(ops::softmax(x, 1), ops::scalar(3.0, DType::float32));
  FlowGraph opt = optimize(trace_from({y}, {x}));
  ASSERT_EQ(opt.nodes.size(), 1u) << opt.str();
  EXPECT_NE(opt.str().find("fused=[Softmax, Mul], anchor=Softmax"), std::string::npos);
  Tensor a = seq({4, 6}, -1.0, 0.3);
  Tensor got = opt({a})[0];
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int j = 0; j < 6; ++j) s += std::exp(element_as_double(a, i * 6 + j));
    for (int j = 0; j < 6; ++j)
      EXPECT_NEAR(element_as_double(got, i * 6 + j),
                  3.0 * std::exp(element_as_double(a, i * 6 + j)) / s, 1e-5);
  }
}

TEST(Graph, SymbolNamesMayNotLookLikeLoopVariables) {
  try {
    Tensor::symbol({ir::var("__i0"), 3}, DType::float32);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "symbol: '__i0' is not a valid dimension name; use letters, digits and '_', "
                 "not starting with a digit or with '__'");
  }
  EXPECT_THROW(Tensor::symbol({ir::var("seq len")}, DType::float32), Error);
  EXPECT_NO_THROW(Tensor::symbol({ir::var("seq_len")}, DType::float32));
}

// add_value's names: the hint when it is free, else the hint with the smallest free suffix
// (names made elsewhere included), in a graph and in its copies alike.
TEST(Graph, ValueNamesTakeTheSmallestFreeSuffix) {
  TensorType t{DType::float32, {2}, Device::cpu()};
  FlowGraph g;
  auto name = [&](FlowGraph& graph, const std::string& hint) {
    return graph.names[static_cast<size_t>(graph.add_value(t, hint))];
  };
  EXPECT_EQ(name(g, "y"), "y");
  EXPECT_EQ(name(g, "y_2"), "y_2");
  EXPECT_EQ(name(g, "y"), "y_1");
  EXPECT_EQ(name(g, "y"), "y_3");  // y_2 was taken by a hint
  EXPECT_EQ(name(g, "y_1"), "y_1_1");
  EXPECT_EQ(name(g, ""), "v");
  EXPECT_EQ(name(g, ""), "v_1");
  FlowGraph copy = g;
  EXPECT_EQ(name(copy, "y"), "y_4");
  EXPECT_EQ(name(g, "y"), "y_4");  // the copy's names are its own
  EXPECT_EQ(name(copy, "v_1"), "v_1_1");
  // Names of a graph built value by value stay unique over many values of one hint.
  for (int i = 0; i < 2000; ++i) g.add_value(t, i % 3 ? "y" : "y_" + std::to_string(i));
  std::set<std::string> unique(g.names.begin(), g.names.end());
  EXPECT_EQ(unique.size(), g.names.size());
  EXPECT_EQ(g.names.size(), g.values.size());
}
