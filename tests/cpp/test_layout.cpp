// Layouts (ember/ir/layout.h): the addressing they give, the kernels that convert to and from
// them (zeros in the padding lanes), elementwise chains on them, the errors of operators that
// read plain tensors only, the memory a blocked value takes, and saving one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ember/codegen/codegen.h"
#include "ember/codegen/kernel_plan.h"
#include "ember/compile/build.h"
#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/jit/cache.h"
#include "ember/ops/nn.h"
#include "ember/ops/ops.h"
#include "ember/runtime/artifact.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/cpu.h"
#include "ember/support/error.h"
#include "graph_fixture.h"

namespace ember {
namespace {

using testing_graph::seq;

int64_t offset_of(const Layout& l, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& idx) {
  std::vector<ir::Expr> ix(idx.begin(), idx.end());
  return ir::eval_int(l.offset(concrete_shape(shape), ix), {});
}

TEST(Layout, NamesAndParsing) {
  EXPECT_EQ(Layout::blocked(16).name(4), "nChw16c");
  EXPECT_EQ(Layout::blocked(8).name(3), "nCw8c");
  EXPECT_EQ(Layout::channels_last().name(4), "nhwc");
  EXPECT_EQ(Layout::channels_last().name(3), "nwc");
  EXPECT_EQ(Layout::plain().name(2), "plain");
  EXPECT_EQ(parse_layout("nChw16c"), Layout::blocked(16));
  EXPECT_EQ(parse_layout("nCw8c"), Layout::blocked(8));
  EXPECT_EQ(parse_layout("blocked4"), Layout::blocked(4));
  EXPECT_EQ(parse_layout("nhwc"), Layout::channels_last());
  EXPECT_EQ(parse_layout("channels_last"), Layout::channels_last());
  EXPECT_EQ(parse_layout("plain"), Layout::plain());
  for (const char* bad : {"nchw", "nChwc", "blocked", "nChw0c", "blocked-2", ""}) {
    try {
      parse_layout(bad);
      ADD_FAILURE() << "parsed " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("layout"), std::string::npos) << e.what();
    }
  }
  try {
    Layout::blocked(8).check_rank(2, "to_layout");
    ADD_FAILURE() << "a rank-2 blocked tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
  }
}

TEST(Layout, PhysicalShapesAndOffsets) {
  const Shape s = concrete_shape({2, 17, 3, 5});
  EXPECT_EQ(shape_values(Layout::blocked(8).physical_shape(s)),
            (std::vector<int64_t>{2, 3, 3, 5, 8}));
  EXPECT_EQ(shape_values(Layout::channels_last().physical_shape(s)),
            (std::vector<int64_t>{2, 3, 5, 17}));
  EXPECT_EQ(ir::eval_int(Layout::blocked(8).physical_numel(s), {}), 2 * 3 * 3 * 5 * 8);
  // [n, c, h, w] -> [n, c / 8, h, w, c % 8] and [n, h, w, c], row-major.
  EXPECT_EQ(offset_of(Layout::blocked(8), {2, 17, 3, 5}, {1, 10, 2, 4}),
            (((1 * 3 + 1) * 3 + 2) * 5 + 4) * 8 + 2);
  EXPECT_EQ(offset_of(Layout::channels_last(), {2, 17, 3, 5}, {1, 10, 2, 4}),
            ((1 * 3 + 2) * 5 + 4) * 17 + 10);
  EXPECT_EQ(offset_of(Layout::plain(), {2, 17, 3, 5}, {1, 10, 2, 4}),
            ((1 * 17 + 10) * 3 + 2) * 5 + 4);
  // 3-d: [n, c, l].
  EXPECT_EQ(offset_of(Layout::blocked(4), {1, 6, 7}, {0, 5, 3}), (1 * 7 + 3) * 4 + 1);
  EXPECT_EQ(offset_of(Layout::channels_last(), {1, 6, 7}, {0, 5, 3}), 3 * 6 + 5);
}

// One to_layout node as a kernel of its own, run on raw memory: the output buffer holds the
// physical layout, so its padding lanes can be read.
class LayoutKernel : public ::testing::Test {
 protected:
  // Runs to_layout(x, to) for x of `from` layout holding `in` (its memory), returning the
  // output's memory (prefilled with NaN, so that a lane the kernel skips shows).
  std::vector<float> convert(const std::vector<int64_t>& shape, const Layout& from,
                             const Layout& to, const std::vector<float>& in) {
    FlowGraph g;
    const Shape s = concrete_shape(shape);
    int x = g.add_value(TensorType{DType::float32, s, Device::cpu(), from}, "x");
    g.inputs = {x};
    int node = g.add_node(&op_def("to_layout"), LayoutAttrs{to}, {x},
                          {TensorType{DType::float32, s, Device::cpu(), to}});
    g.outputs = g.nodes[node].outputs;
    g.verify();
    const ir::Task task = lower_node(g, g.nodes[node], "to_layout_0");
    std::string src = codegen::generate_kernel(task, "layout_test_kernel", {});
    BuildRequest req;
    req.name = "layout-test";
    req.sources = codegen::make_translation_units({src}, 1);
    req.isa = isa_from_env();
    auto module = get_or_build(req);
    const int64_t out_n = ir::eval_int(to.physical_numel(s), {});
    EXPECT_EQ(static_cast<int64_t>(in.size()), ir::eval_int(from.physical_numel(s), {}));
    std::vector<float> out(out_n, std::nanf(""));
    ThreadPool pool(2);
    ember_rt::LaunchContext ctx = pool.context();
    void* args[] = {const_cast<float*>(in.data()), out.data()};
    module->symbol("layout_test_kernel")(args, nullptr, &ctx);
    return out;
  }
};

// x[n, c, rest] = 1000 n + 10 c + rest + 1 (never 0), by flat spatial index.
float value_at(int64_t n, int64_t c, int64_t rest) {
  return static_cast<float>(1000 * n + 10 * c + rest + 1);
}

TEST_F(LayoutKernel, BlockedAndChannelsLastRoundTrips) {
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 3, 3, 5},  {1, 17, 2, 3},    {1, 64, 2, 2}, {2, 17, 7},    {1, 3, 4},
      {2, 33, 5, 7}, {1, 20, 3, 2, 5}, {1, 40, 37},   {2, 8, 16, 16}};
  for (const std::vector<int64_t>& shape : shapes) {
    const int64_t N = shape[0], C = shape[1];
    int64_t S = 1;
    for (size_t d = 2; d < shape.size(); ++d) S *= shape[d];
    std::vector<float> plain(N * C * S);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < S; ++r) plain[(n * C + c) * S + r] = value_at(n, c, r);
    for (const Layout& l : {Layout::blocked(8), Layout::blocked(16), Layout::channels_last()}) {
      SCOPED_TRACE(l.name(shape.size()) + " of " + shape_str(concrete_shape(shape)));
      const std::vector<float> mem = convert(shape, Layout::plain(), l, plain);
      if (l.kind == LayoutKind::Blocked) {
        const int64_t b = l.block, CB = (C + b - 1) / b;
        ASSERT_EQ(static_cast<int64_t>(mem.size()), N * CB * S * b);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t cb = 0; cb < CB; ++cb)
            for (int64_t r = 0; r < S; ++r)
              for (int64_t i = 0; i < b; ++i) {
                const int64_t c = cb * b + i;
                const float got = mem[((n * CB + cb) * S + r) * b + i];
                // The padding lanes (c >= C) hold zeros.
                ASSERT_EQ(got, c < C ? value_at(n, c, r) : 0.0f) << "n " << n << " c " << c;
              }
      } else {
        ASSERT_EQ(static_cast<int64_t>(mem.size()), N * C * S);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t r = 0; r < S; ++r)
            for (int64_t c = 0; c < C; ++c) ASSERT_EQ(mem[(n * S + r) * C + c], value_at(n, c, r));
      }
      // Back to plain: the user's tensor.
      EXPECT_EQ(convert(shape, l, Layout::plain(), mem), plain);
    }
  }
}

// x -> to_layout(blocked) -> relu -> add(per-channel bias [C, 1, 1]) -> mul -> to_layout(plain)
// as one traced graph; y is read twice, so it is a blocked value between two kernels.
struct Chain {
  FlowGraph graph;
  Tensor bias;
};

Chain blocked_chain(const Shape& shape, const Layout& layout) {
  Tensor x = Tensor::symbol(shape, DType::float32, Device::cpu(), "x");
  Tensor y = ops::to_layout(x, layout);
  Shape bias_shape(shape.size() - 1, ir::Expr(1));  // [C, 1, ...]: per channel
  bias_shape[0] = shape[1];
  Tensor bias = seq(bias_shape, -2.0, 0.25);
  Tensor a = ops::add(ops::relu(y), bias);
  Tensor out = ops::to_layout(ops::mul(a, y), Layout::plain());
  return {trace_from({out}, {x}), bias};
}

TEST(LayoutGraph, ChainMatchesAReferenceAndPrintsTheLayouts) {
  for (int64_t C : {3, 17, 64}) {
    const Shape shape = concrete_shape({2, C, 3, 5});
    SCOPED_TRACE("C = " + std::to_string(C));
    Chain chain = blocked_chain(shape, Layout::blocked(16));
    const std::string text = chain.graph.str();
    EXPECT_NE(text.find("{nChw16c}"), std::string::npos) << text;
    Tensor x = seq(shape, -7.0, 0.125);
    // As traced (a kernel per operator, blocked values between them) and optimized (fused:
    // y, read twice, is the one blocked value between two kernels).
    const FlowGraph optimized = optimize(chain.graph);
    EXPECT_NE(optimized.str().find("{nChw16c}"), std::string::npos) << optimized.str();
    for (const FlowGraph* g : std::vector<const FlowGraph*>{&chain.graph, &optimized}) {
      Tensor got = (*g)({x}).at(0);
      EXPECT_EQ(got.type().str(), "float32" + shape_str(shape));
      const int64_t S = 15;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = (i / S) % C;
        const double xv = element_as_double(x, i);
        const double want = (std::max(xv, 0.0) + element_as_double(chain.bias, c)) * xv;
        ASSERT_NEAR(element_as_double(got, i), want, 1e-5 * (1 + std::abs(want))) << i;
      }
    }
  }
}

TEST(LayoutGraph, ABlockedValueTakesItsPhysicalSize) {
  // C = 17 in blocks of 16: 32 channels of memory, not 17.
  const Shape shape = concrete_shape({1, 17, 4, 4});
  Chain chain = blocked_chain(shape, Layout::blocked(16));
  auto compiled = chain.graph.build();
  int blocked = 0;
  for (const TensorType& t : compiled->plan().values) blocked += t.layout == Layout::blocked(16);
  ASSERT_EQ(blocked, 4);
  Tensor x = seq(shape, -3.0, 0.5);
  Tensor got = compiled->run({x}).at(0);
  // Unoptimized, every operator is a kernel: to_layout, relu, add and mul each write a blocked
  // value of 1 * 2 * 4 * 4 * 16 floats (17 * 16 floats would be 1088 bytes).
  const int64_t physical_bytes = 1 * 2 * 4 * 4 * 16 * 4;
  EXPECT_EQ(compiled->memory_stats().unshared_bytes, 4 * physical_bytes);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xv = element_as_double(x, i);
    const double want = (std::max(xv, 0.0) + element_as_double(chain.bias, (i / 16) % 17)) * xv;
    ASSERT_NEAR(element_as_double(got, i), want, 1e-5 * (1 + std::abs(want))) << i;
  }
}

TEST(LayoutGraph, ChannelsLastChain3d) {
  const Shape shape = concrete_shape({2, 5, 9});
  Chain chain = blocked_chain(shape, Layout::channels_last());
  EXPECT_NE(chain.graph.str().find("{nwc}"), std::string::npos) << chain.graph.str();
  Tensor x = seq(shape, -4.0, 0.1);
  Tensor got = chain.graph({x}).at(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xv = element_as_double(x, i);
    const double want = (std::max(xv, 0.0) + element_as_double(chain.bias, (i / 9) % 5)) * xv;
    ASSERT_NEAR(element_as_double(got, i), want, 1e-5 * (1 + std::abs(want))) << i;
  }
}

// What the first error of `f` says.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LayoutGraph, OperatorsThatReadPlainTensorsRefuseOthers) {
  Tensor x = Tensor::symbol(concrete_shape({1, 8, 4, 4}), DType::float32, Device::cpu(), "x");
  Tensor y = ops::to_layout(x, Layout::blocked(8));
  std::string e = error_of([&] { ops::softmax(y, 1); });
  EXPECT_NE(e.find("softmax: input 0"), std::string::npos) << e;
  EXPECT_NE(e.find("nChw8c"), std::string::npos) << e;
  EXPECT_NE(e.find("plain"), std::string::npos) << e;
  e = error_of([&] { ops::cumsum(y, 1); });
  EXPECT_NE(e.find("reads plain"), std::string::npos) << e;
  // A reduction keeps a layout only where its result keeps the channel dimension.
  e = error_of([&] { ops::sum(y, {1}); });
  EXPECT_NE(e.find("keepdim and dimension 1 (the channel) not reduced"), std::string::npos) << e;
  // Two layouts in one elementwise operator.
  e = error_of([&] { ops::add(y, ops::to_layout(x, Layout::channels_last())); });
  EXPECT_NE(e.find("different layouts"), std::string::npos) << e;
  // A blocked operand broadcast to a higher rank would lose its channel axis.
  Tensor z = Tensor::symbol(concrete_shape({8, 4, 4}), DType::float32, Device::cpu(), "z");
  e = error_of([&] {
    ops::add(ops::to_layout(z, Layout::blocked(8)),
             Tensor::symbol(concrete_shape({2, 8, 4, 4}), DType::float32));
  });
  EXPECT_NE(e.find("output's rank"), std::string::npos) << e;
  // A graph's outputs are plain.
  e = error_of([&] { trace_from({ops::relu(y)}, {x}).build(); });
  EXPECT_NE(e.find("inputs and outputs are plain"), std::string::npos) << e;
  // A tensor with memory is plain.
  e = error_of([&] { ops::to_layout(seq(concrete_shape({1, 8, 2, 2})), Layout::blocked(8)); });
  EXPECT_NE(e.find("always plain"), std::string::npos) << e;
}

TEST(LayoutGraph, SavingAGraphWithABlockedValueRecordsItsLayout) {
  // The file records the blocked value between two kernels (format version 5): loaded, it is
  // sized and read as blocked, and gives the same bits.
  const Shape shape = concrete_shape({1, 17, 2, 3});
  Chain chain = blocked_chain(shape, Layout::blocked(16));
  CompiledModel model(chain.graph.build());
  const std::string path = ::testing::TempDir() + "/layout_saved.ember";
  model.save(path);
  auto loaded = load(path);
  Tensor x = seq(shape, -3.0, 0.5);
  const Tensor a = model.run({x}).at(0), b = loaded->run({x}).at(0);
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())), 0);
  int blocked = 0;
  for (const TensorType& t : loaded->graph()->plan().values)
    blocked += t.layout == Layout::blocked(16) ? 1 : 0;
  EXPECT_GE(blocked, 1);
}

// The kernel of relu -> exp on a blocked value (as between two blocked convolutions): one
// fused kernel that loops over the memory, the block's lanes innermost.
std::string blocked_chain_plan(const Shape& shape) {
  FlowGraph g;
  TensorType bt{DType::float32, shape, Device::cpu(), Layout::blocked(16)};
  int y = g.add_value(bt, "y");
  g.inputs = {y};
  int n1 = g.add_node(&op_def("relu"), NoAttrs{}, {y}, {bt});
  int n2 = g.add_node(&op_def("exp"), NoAttrs{}, {g.nodes[n1].outputs[0]}, {bt});
  g.outputs = g.nodes[n2].outputs;
  g.verify();
  FlowGraph fused = passes::fuse_operators(g);
  EXPECT_EQ(fused.nodes.size(), 1u) << fused.str();
  return codegen::plan_kernel(lower_node(fused, fused.nodes[0], "chain")).str();
}

TEST(LayoutGraph, AFusedChainOnABlockedValueIsVectorized) {
  // 32 channels in blocks of 16: no padding, one flat contiguous loop over the memory.
  std::string plan = blocked_chain_plan(concrete_shape({1, 32, 4, 4}));
  EXPECT_NE(plan.find("flattened: yes"), std::string::npos) << plan;
  EXPECT_NE(plan.find("vector: __flat"), std::string::npos) << plan;
  EXPECT_NE(plan.find(": contiguous along"), std::string::npos) << plan;
  // 17 channels: vectors along the block's lanes, the padding lanes masked (they get zeros).
  plan = blocked_chain_plan(concrete_shape({1, 17, 4, 4}));
  EXPECT_NE(plan.find("vector: __p0_4"), std::string::npos) << plan;
  EXPECT_NE(plan.find("masked to the lane range"), std::string::npos) << plan;
  EXPECT_NE(plan.find("layout b0 (y): float32[1, 17, 4, 4]{nChw16c}, memory [1, 2, 4, 4, 16]"),
            std::string::npos)
      << plan;
}

// A to_layout kernel that only copies float32 between plain and blocked or channels-last memory
// is the library routine that transposes tiles in registers (ember_rt/layout_convert.h).
TEST(LayoutGraph, AConversionIsATiledTransposeRoutine) {
  const Shape s = concrete_shape({1, 17, 5, 6});
  const std::vector<std::pair<Layout, Layout>> cases = {{Layout::plain(), Layout::blocked(16)},
                                                        {Layout::blocked(8), Layout::plain()},
                                                        {Layout::plain(), Layout::channels_last()},
                                                        {Layout::channels_last(), Layout::plain()}};
  const char* routines[] = {"layout_plain_to_blocked", "layout_blocked_to_plain",
                            "layout_plain_to_channels_last", "layout_channels_last_to_plain"};
  for (size_t i = 0; i < cases.size(); ++i) {
    FlowGraph g;
    int x = g.add_value(TensorType{DType::float32, s, Device::cpu(), cases[i].first}, "x");
    g.inputs = {x};
    int node = g.add_node(&op_def("to_layout"), LayoutAttrs{cases[i].second}, {x},
                          {TensorType{DType::float32, s, Device::cpu(), cases[i].second}});
    g.outputs = g.nodes[node].outputs;
    const std::string plan = codegen::plan_kernel(lower_node(g, g.nodes[node], "conv")).str();
    EXPECT_NE(plan.find(routines[i]), std::string::npos) << plan;
  }
}

// A max pool between blocked convolutions: its kernel reads and writes the blocked memory,
// the window's values a vector along the block's lanes (one output channel per lane).
TEST(LayoutGraph, AMaxPoolOnABlockedValueIsVectorizedAlongTheLanes) {
  for (int64_t C : {32, 17}) {
    Tensor x = Tensor::symbol(concrete_shape({1, C, 9, 8}), DType::float32, Device::cpu(), "x");
    Tensor y = ops::to_layout(x, Layout::blocked(16));
    Tensor p = ops::max_pool2d(y, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false);
    EXPECT_EQ(p.type().layout, Layout::blocked(16));
    FlowGraph g = trace_from({ops::to_layout(p, Layout::plain())}, {x});
    const Node* pool = nullptr;
    for (const Node& n : g.nodes)
      if (n.op == &op_def("max_pool2d")) pool = &n;
    ASSERT_NE(pool, nullptr);
    const std::string plan = codegen::plan_kernel(lower_node(g, *pool, "pool")).str();
    EXPECT_NE(plan.find("reduce, vectors along the output"), std::string::npos) << plan;
    EXPECT_NE(plan.find(": contiguous along __p0_4"), std::string::npos) << plan;
    // Optimized, the conversion from the plain input is the pool's prologue: still along the
    // lanes (a gather across the channel planes), not along the 3-element window row, which
    // would never fill a vector.
    const FlowGraph opt = optimize(g);
    const Node* fused = nullptr;
    for (const Node& n : opt.nodes)
      if (opt.values[static_cast<size_t>(n.outputs[0])].layout == Layout::blocked(16)) fused = &n;
    ASSERT_NE(fused, nullptr) << opt.str();
    const std::string fused_plan = codegen::plan_kernel(lower_node(opt, *fused, "pool")).str();
    EXPECT_NE(fused_plan.find("reduce, vectors along the output"), std::string::npos) << fused_plan;
    // Reference: the pool of the plain input, run as a graph; the same values.
    Tensor v = seq(concrete_shape({1, C, 9, 8}), -3.0, 0.37);
    CompiledModel blocked(g.build());
    CompiledModel plain(
        trace_from({ops::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false)}, {x}).build());
    const Tensor a = blocked.run({v}).at(0), b = plain.run({v}).at(0);
    ASSERT_EQ(a.nbytes(), b.nbytes());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.nbytes())), 0);
  }
}

}  // namespace
}  // namespace ember
