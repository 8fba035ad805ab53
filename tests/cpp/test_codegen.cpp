// Code generation: what the generated source looks like, and that it runs correctly in
// vector and scalar form.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "ember/codegen/codegen.h"
#include "ember/codegen/kernel_plan.h"
#include "ember/compile/build.h"
#include "ember/graph/flow_graph.h"
#include "ember/ops/ops.h"
#include "ember_rt/pieces_include.h"
#include "error_text.h"

using namespace ember;
using namespace ember::ir;
using namespace ember::codegen;

namespace {

// out[i, j] = x[i, j] * 2 + b[j] + c[i]   (contiguous loads, and c broadcast along j)
Task bias_task(BufferRole in_role = BufferRole::Input) {
  Task t;
  t.name = "bias";
  int x = t.add_buffer("x", DType::float32, {var("n"), Expr(37)}, in_role);
  int b = t.add_buffer("b", DType::float32, {Expr(37)}, BufferRole::Input);
  int c = t.add_buffer("c", DType::float32, {var("n")}, BufferRole::Input);
  int o = t.add_buffer("y", DType::float32, {var("n"), Expr(37)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = load(x, DType::float32, s.axes) * const_float(2.0) +
            load(b, DType::float32, {var("j")}) + load(c, DType::float32, {var("i")});
  t.stages.push_back(s);
  return t;
}

}  // namespace

TEST(Codegen, ContiguousAndBroadcastLoadsAreVectorized) {
  std::string src = generate_kernel(bias_task(), "k", {"n"});
  EXPECT_NE(src.find("ember_rt::vf::load(b0 + "), std::string::npos) << src;
  EXPECT_NE(src.find("ember_rt::vf::load(b1 + "), std::string::npos) << src;
  EXPECT_NE(src.find("ember_rt::vf(b2["), std::string::npos) << src;  // broadcast
  EXPECT_NE(src.find("store_partial"), std::string::npos) << src;     // masked tail
  EXPECT_NE(src.find("const int64_t s0 = syms[0];  // n"), std::string::npos) << src;
}

TEST(Codegen, TransposedLoadsFallBackToScalar) {
  Task t;
  int x = t.add_buffer("x", DType::float32, {Expr(8), Expr(16)}, BufferRole::Input);
  int o = t.add_buffer("y", DType::float32, {Expr(16), Expr(8)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = load(x, DType::float32, {var("j"), var("i")});
  t.stages.push_back(s);
  std::string src = generate_kernel(t, "k", {});
  EXPECT_EQ(src.find("ember_rt::vf::load"), std::string::npos) << src;
  // The plan says why: along j, x is read 16 elements apart.
  std::string plan = plan_kernel(t).str();
  EXPECT_NE(plan.find("load b0 (x)[j, i]: strided (stride 16) along j"), std::string::npos) << plan;
  EXPECT_NE(plan.find("vector: none (the load of b0 (x)[j, i] is strided (stride 16) along j)"),
            std::string::npos)
      << plan;
}

// out[i, j] = x[i, j] + y[i, j] on [n, 64]: one flat loop in vectors, no tail.
TEST(KernelPlan, ElementwiseAddIsFlattenedAndVectorized) {
  Task t;
  t.name = "add";
  int x = t.add_buffer("x", DType::float32, {var("n"), Expr(64)}, BufferRole::Input);
  int y = t.add_buffer("y", DType::float32, {var("n"), Expr(64)}, BufferRole::Input);
  int o = t.add_buffer("out", DType::float32, {var("n"), Expr(64)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = load(x, DType::float32, s.axes) + load(y, DType::float32, s.axes);
  t.stages.push_back(s);
  KernelPlan plan = plan_kernel(t);
  ASSERT_EQ(plan.stages.size(), 1u);
  const StagePlan& p = plan.stages[0];
  EXPECT_EQ(p.schedule, Schedule::Elementwise);
  EXPECT_EQ(p.flatten, Flatten::Yes);
  EXPECT_TRUE(p.vector.ok);
  EXPECT_TRUE(p.tail_known_empty);  // n * 64 elements
  ASSERT_EQ(p.vector.loads.size(), 2u);
  for (const LoadPlan& l : p.vector.loads) EXPECT_EQ(l.access, Access::Contiguous);
  const std::string text = plan.str();
  for (const char* line : {"stage 0: b2 (out) float32[(n * 64)], elementwise",
                           "flattened: yes, one axis over every element",
                           "loops: __flat0 < (n * 64) (blocks, vector);",
                           "vector: __flat0, ember_rt::vf::width lanes; tail: none",
                           "load b0 (x)[__flat0]: contiguous along __flat0",
                           "load b1 (y)[__flat0]: contiguous along __flat0"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  // The code prints what the plan says.
  std::string src = generate_kernel(t, "k", {"n"});
  EXPECT_NE(src.find("ember_rt::vf::load(b0 + v1)"), std::string::npos) << src;
}

// An embedding reads whole rows picked by data: contiguous along the row, its index checked;
// a gather along the last axis picks every element by data.
TEST(KernelPlan, DataIndexedLoads) {
  Task t;
  t.name = "embedding";
  int w = t.add_buffer("weight", DType::float32, {Expr(100), Expr(64)}, BufferRole::Input);
  int ids = t.add_buffer("ids", DType::int64, {var("n")}, BufferRole::Input);
  int o = t.add_buffer("out", DType::float32, {var("n"), Expr(64)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = load(w, DType::float32, {load(ids, DType::int64, {var("i")}), var("j")});
  t.stages.push_back(s);
  std::string text = plan_kernel(t).str();
  EXPECT_NE(text.find("load b0 (weight)[b1[i], j]: contiguous along j, index read from data"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("load b1 (ids)[i]: broadcast along j"), std::string::npos) << text;

  Task g;
  g.name = "gather";
  int x = g.add_buffer("x", DType::float32, {var("n"), Expr(64)}, BufferRole::Input);
  int idx = g.add_buffer("idx", DType::int64, {var("n"), Expr(8)}, BufferRole::Input);
  int go = g.add_buffer("out", DType::float32, {var("n"), Expr(8)}, BufferRole::Output);
  Stage gs;
  gs.out = go;
  gs.axes = {var("i"), var("j")};
  gs.value = load(x, DType::float32, {var("i"), load(idx, DType::int64, gs.axes)});
  g.stages.push_back(gs);
  KernelPlan gp = plan_kernel(g);
  text = gp.str();
  EXPECT_FALSE(gp.stages[0].vector.ok);
  EXPECT_EQ(gp.stages[0].vector.loads[0].access, Access::Gathered);
  EXPECT_NE(text.find("load b0 (x)[i, b1[i, j]]: gathered along j, index read from data"),
            std::string::npos)
      << text;
}

TEST(KernelPlan, WrittenBesideTheCodeWithDumpDir) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ember_plan_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Tensor a = Tensor::symbol({ir::var("n"), 64}, DType::float32, Device::cpu(), "a");
  Tensor b = Tensor::symbol({ir::var("n"), 64}, DType::float32, Device::cpu(), "b");
  FlowGraph graph = trace_from({ops::add(a, b)}, {a, b});
  BuildOptions o;
  o.dump_dir = dir.string();
  auto built = build_graph(graph, o);
  std::ifstream in(dir / "kernels" / "kernel_0.plan.txt");
  ASSERT_TRUE(in) << "no kernel_0.plan.txt";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("// ember_k_"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find(" in unit_0.cpp"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("flattened: yes"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find(": contiguous along "), std::string::npos) << text.str();
  std::vector<double> va(2 * 64), vb(2 * 64);
  for (size_t i = 0; i < va.size(); ++i)
    va[i] = 0.5 * static_cast<double>(i), vb[i] = 3.0 - static_cast<double>(i);
  Tensor sum = built->run(
      {from_values(va, {2, 64}, DType::float32), from_values(vb, {2, 64}, DType::float32)})[0];
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(element_as_double(sum, i), va[i] + vb[i]) << i;
  fs::remove_all(dir);
}

TEST(Codegen, InputsMustComeFirst) {
  Task t = bias_task();
  std::swap(t.buffers[0], t.buffers[2]);
  EXPECT_THROW(generate_kernel(t, "k", {"n"}), InternalError);
}

// physical_task (src/codegen/physical.cpp) refuses what it cannot lay out: reachable through
// generate_kernel on a hand-made Task.
TEST(Codegen, AFusedStoreOfAnotherLayoutIsAnError) {
  Task t;
  t.name = "mixed";
  const Shape s = {Expr(1), Expr(16), Expr(2), Expr(2)};
  int x = t.add_buffer("x", DType::float32, s, BufferRole::Input, Layout::blocked(8));
  int o = t.add_buffer("y", DType::float32, s, BufferRole::Output, Layout::blocked(8));
  int p = t.add_buffer("z", DType::float32, s, BufferRole::Output);  // plain
  Stage st;
  st.out = o;
  st.axes = {var("n"), var("c"), var("h"), var("w")};
  Expr v = load(x, DType::float32, st.axes);
  st.value = v * const_float(2.0);
  st.stores.push_back({p, v});
  t.stages.push_back(st);
  const std::string msg = error_of([&] { generate_kernel(t, "k", {}); });
  EXPECT_TRUE(Contains(msg, "kernel mixed: a stage writing 'y'")) << msg;
  EXPECT_TRUE(Contains(msg, "also stores 'z'")) << msg;
  EXPECT_TRUE(Contains(msg, "which has another layout")) << msg;
  // The same store in the output's layout is accepted.
  t.buffers[p].layout = Layout::blocked(8);
  EXPECT_NO_THROW(generate_kernel(t, "k", {}));
}

TEST(Codegen, ABlockedCallWithFurtherStoresIsAnError) {
  // A routine that addresses the blocked layout itself (call_takes_layouts), with a per-pixel
  // epilogue and, in addition, an intermediate stored: there is no loop to store it from.
  Task t;
  t.name = "blocked_call";
  const Shape s = {Expr(1), Expr(16), Expr(3), Expr(3)};
  int x = t.add_buffer("x", DType::float32, s, BufferRole::Input, Layout::blocked(8));
  int o = t.add_buffer("y", DType::float32, s, BufferRole::Output, Layout::blocked(8));
  int q = t.add_buffer("saved", DType::float32, s, BufferRole::Output, Layout::blocked(8));
  Stage st;
  st.kind = StageKind::Call;
  st.routine = "conv2d_blocked";
  st.call_takes_layouts = true;
  st.call_inputs = {x};
  st.call_outputs = {o};
  st.out = o;
  st.axes = {var("n"), var("c"), var("h"), var("w")};
  st.epilogue = max(acc(DType::float32), const_float(0.0));
  st.stores.push_back({q, acc(DType::float32)});
  t.stages.push_back(st);
  const std::string msg = error_of([&] { generate_kernel(t, "k", {}); });
  EXPECT_TRUE(Contains(msg, "kernel blocked_call: a library routine writing the blocked 'y'"))
      << msg;
  EXPECT_TRUE(Contains(msg, "cannot also store its epilogue's intermediates")) << msg;
}

// A routine that applies a per-channel scale, shift, a residual and bounds in registers
// (call_channel_affine) is passed an ember_rt::ChannelAffine when the epilogue has that form,
// and the per-segment lambda otherwise.
TEST(Codegen, ChannelAffineEpilogueIsMatchedOnItsFormOnly) {
  auto task = [](const std::function<Expr(int, int, int, const std::vector<Expr>&)>& epi) {
    Task t;
    t.name = "affine";
    const Shape s = {Expr(1), Expr(20), Expr(3), Expr(3)};  // 20 channels: a partial block
    int x = t.add_buffer("x", DType::float32, s, BufferRole::Input, Layout::blocked(8));
    int sc = t.add_buffer("scale", DType::float32, {Expr(20)}, BufferRole::Input);
    int sh = t.add_buffer("shift", DType::float32, {Expr(1), Expr(20), Expr(1)}, BufferRole::Input);
    int o = t.add_buffer("y", DType::float32, s, BufferRole::Output, Layout::blocked(8));
    Stage st;
    st.kind = StageKind::Call;
    st.routine = "conv2d_blocked_layout";
    st.call_takes_layouts = true;
    st.call_channel_affine = true;
    st.call_inputs = {x};
    st.call_outputs = {o};
    st.out = o;
    st.axes = {var("n"), var("c"), var("h"), var("w")};
    st.epilogue = epi(x, sc, sh, st.axes);
    t.stages.push_back(st);
    return t;
  };
  const Expr a = acc(DType::float32);
  auto at_c = [](int b, const std::vector<Expr>& ax) { return load(b, DType::float32, {ax[1]}); };
  auto shift_at = [](int b, const std::vector<Expr>& ax) {
    return load(b, DType::float32, {Expr(0), ax[1], Expr(0)});
  };
  // bn + relu6, the shift a [1, 20, 1] buffer (its flat offset is the channel).
  Task relu6 = task([&](int, int sc, int sh, const std::vector<Expr>& ax) {
    return min(max(a * at_c(sc, ax) + shift_at(sh, ax), const_float(0.0)), const_float(6.0));
  });
  std::string plan = plan_kernel(relu6).str();
  EXPECT_TRUE(Contains(plan,
                       "epilogue: in the routine's registers, fma(acc, b1 (scale)[channel], "
                       "b2 (shift)[channel]), then max 0x0p+0f, then min 0x1.8p+2f, 0 from "
                       "channel 20"))
      << plan;
  std::string code = generate_kernel(relu6, "k", {});
  EXPECT_TRUE(Contains(code, "ember_rt::ChannelAffine epilogue;")) << code;
  EXPECT_TRUE(Contains(code, "epilogue.channels = 20;")) << code;
  EXPECT_FALSE(Contains(code, "auto epilogue = [=]")) << code;
  // Operands in either order, constants, a bound on the left: still the form.
  Task consts = task([&](int, int sc, int, const std::vector<Expr>&) {
    (void)sc;
    return min(const_float(0.5), const_float(0.25) + const_float(2.0) * a);
  });
  plan = plan_kernel(consts).str();
  EXPECT_TRUE(Contains(plan, "fma(acc, 0x1p+1f, 0x1p-2f), then min 0x1p-1f")) << plan;
  // relu is a lower bound of 0.
  Task relu = task([&](int, int, int sh, const std::vector<Expr>& ax) {
    return unary(UnaryOp::Relu, shift_at(sh, ax) + a);
  });
  plan = plan_kernel(relu).str();
  EXPECT_TRUE(Contains(plan, "fma(acc, 0x1p+0f, b2 (shift)[channel]), then max 0x0p+0f")) << plan;
  // A residual: a buffer laid out as the output, read at the output's element.
  Task residual = task([&](int x, int sc, int sh, const std::vector<Expr>& ax) {
    return max(load(x, DType::float32, ax) + (a * at_c(sc, ax) + shift_at(sh, ax)),
               const_float(0.0));
  });
  plan = plan_kernel(residual).str();
  EXPECT_TRUE(Contains(plan,
                       "fma(acc, b1 (scale)[channel], b2 (shift)[channel]) + b0 (x)[output], "
                       "then max 0x0p+0f, 0 from channel 20"))
      << plan;
  EXPECT_TRUE(Contains(generate_kernel(residual, "k", {}), "epilogue.residual = b0;"));
  // min then max with lo < hi: the same values as max then min.
  plan = plan_kernel(task([&](int, int, int, const std::vector<Expr>&) {
           return max(min(a, const_float(6.0)), const_float(0.0));
         })).str();
  EXPECT_TRUE(Contains(plan, "fma(acc, 0x1p+0f, -0x0p+0f), then max 0x0p+0f, then min 0x1.8p+2f"))
      << plan;
  // Not the form: a tensor multiplied in, a residual read at another element, Acc * Acc, a NaN
  // bound, three bounds, min then max with lo >= hi, a scale read at another index.
  const std::vector<std::function<Expr(int, int, int, const std::vector<Expr>&)>> others = {
      [&](int x, int, int, const std::vector<Expr>& ax) {  // a product with a tensor
        return max(a * load(x, DType::float32, ax), const_float(0.0));
      },
      [&](int x, int, int, const std::vector<Expr>& ax) {  // a residual read transposed
        return a + load(x, DType::float32, {ax[0], ax[1], ax[3], ax[2]});
      },
      [&](int, int, int, const std::vector<Expr>&) { return a * a; },
      [&](int, int, int, const std::vector<Expr>&) { return max(a, const_float(std::nan(""))); },
      [&](int, int, int, const std::vector<Expr>&) {
        return max(min(max(a, const_float(0.0)), const_float(6.0)), const_float(1.0));
      },
      // min then max with lo >= hi: the order decides (hi, then lo wins)
      [&](int, int, int, const std::vector<Expr>&) {
        return max(min(a, const_float(-1.0)), const_float(1.0));
      },
      [&](int, int sc, int, const std::vector<Expr>& ax) {
        return a * load(sc, DType::float32, {ax[2]});
      },
  };
  for (const auto& epi : others) {
    Task t = task(epi);
    EXPECT_FALSE(Contains(plan_kernel(t).str(), "in the routine's registers"))
        << plan_kernel(t).str();
    EXPECT_TRUE(Contains(generate_kernel(t, "k", {}), "auto epilogue = [=]"));
  }
  // Without call_channel_affine the routine gets the lambda. It computes the map as the
  // routine does, one fma: kernels are compiled with -ffp-contract=off, so a * s + t written
  // out would round twice.
  relu6.stages[0].call_channel_affine = false;
  EXPECT_FALSE(Contains(plan_kernel(relu6).str(), "in the routine's registers"));
  code = generate_kernel(relu6, "k", {});
  EXPECT_TRUE(Contains(code, "auto epilogue = [=]")) << code;
  EXPECT_TRUE(Contains(code, "ember_rt::max_c(ember_rt::fma(ember_rt::load_range(b4 ")) << code;
}

TEST(Codegen, TranslationUnitsDefineTheAbiOnce) {
  auto units = make_translation_units({"// a", "// b", "// c"}, 2);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_NE(units[0].find("ember_module_abi"), std::string::npos);
  EXPECT_EQ(units[1].find("ember_module_abi"), std::string::npos);
  EXPECT_NE(units[0].find("// c"), std::string::npos);
}

// The GEMM machinery is defined by the first unit only, and only when a kernel calls it.
TEST(Codegen, TranslationUnitsDefineTheGemmOnce) {
  const std::string gemm = "ember_rt::gemm(g, ctx, ember_rt::NoEpilogue{});";
  const std::string definition = "#include \"ember_rt/gemm_erased.h\"";
  auto count = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  auto units = make_translation_units({"// a", "// b " + gemm, "// c " + gemm}, 3);
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(count(units[0], definition), 1);
  EXPECT_EQ(count(units[1], definition), 0);
  EXPECT_EQ(count(units[2], definition), 0);
  for (const std::string& u : make_translation_units({"// a", "// b"}, 2))
    EXPECT_EQ(count(u, definition), 0);
  // Units written before (no definition anywhere) get it once; again changes nothing.
  std::vector<std::string> old = {"// a", "// b " + gemm};
  define_gemm_once(&old);
  EXPECT_EQ(count(old[0], definition), 1);
  EXPECT_EQ(count(old[1], definition), 0);
  const std::vector<std::string> once = old;
  define_gemm_once(&old);
  EXPECT_EQ(old, once);
}

// Every module's first unit includes the pieces of the runtime's routines (the JIT links
// them prebuilt, or that unit defines them), once, whatever its kernels call.
TEST(Codegen, FirstUnitIncludesThePiecesOnce) {
  const std::string pieces = ember_rt::kPiecesInclude;
  for (const auto& kernels :
       {std::vector<std::string>{"// a"}, std::vector<std::string>{"// a", "// b", "// c"}}) {
    auto units = make_translation_units(kernels, 3);
    for (size_t u = 0; u < units.size(); ++u)
      EXPECT_EQ(units[u].find(pieces) != std::string::npos, u == 0) << u;
    const std::vector<std::string> once = units;
    define_pieces_once(&units);
    EXPECT_EQ(units, once);
  }
  std::vector<std::string> old = {"// a", "// b"};  // saved before the pieces existed
  define_pieces_once(&old);
  EXPECT_NE(old[0].find(pieces), std::string::npos);
  EXPECT_EQ(old[1].find(pieces), std::string::npos);
}

// Calls whose path is chosen when compiled (static sizes) are listed for the definition,
// each distinct one once, so that it compiles only their paths.
TEST(Codegen, TranslationUnitsListTheGemmChoices) {
  const std::string a =
      "ember_rt::gemm_choice(ember_rt::GemmSite{1, 64, 1030, 56, 56, 1, 0, 1, "
      "1030, 1, 0, ember_rt::GemmTuning{0, 0, 0, -1, 0}})";
  const std::string b =
      "ember_rt::gemm_choice(ember_rt::GemmSite{1, 1, 10, 128, 128, 1, 1, 128, "
      "10, 0, 1, ember_rt::GemmTuning{0, 0, 0, -1, 0}})";
  auto call = [](const std::string& choice) {
    return "ember_rt::gemm(g, ctx, ember_rt::NoEpilogue{}, " + choice + ");";
  };
  auto units = make_translation_units({call(a), call(b), call(a)}, 2);
  ASSERT_EQ(units.size(), 2u);
  const std::string list = "#define EMBER_RT_GEMM_CHOICES ";
  const size_t at = units[0].find(list);
  ASSERT_NE(at, std::string::npos) << units[0];
  const size_t end = units[0].find('\n', at);
  const std::string line = units[0].substr(at, end - at);
  EXPECT_TRUE(line == list + a + ", " + b || line == list + b + ", " + a) << line;
  EXPECT_LT(at, units[0].find("#include \"ember_rt/gemm_erased.h\"")) << units[0];
  EXPECT_EQ(units[1].find(list), std::string::npos);
  // Only calls chosen at run time: no list (the definition compiles every path).
  for (const std::string& u : make_translation_units({"ember_rt::gemm(g, ctx, e);"}, 1))
    EXPECT_EQ(u.find(list), std::string::npos) << u;
}

TEST(Codegen, IntegerAndLowPrecisionKernelsRun) {
  // int32 arithmetic wraps like C++ / torch, bfloat16 rounds to nearest even.
  Tensor a = from_values({1, -7, 100, 2147483647.0}, {4}, DType::int32);
  Tensor b = from_values({2, 2, -3, 1}, {4}, DType::int32);
  Tensor s = ops::add(a, b);
  EXPECT_EQ(element_as_double(s, 0), 3);
  EXPECT_EQ(element_as_double(s, 3), -2147483648.0);
  Tensor h = from_values({1.0, 1.00390625, -2.5}, {3}, DType::bfloat16);
  Tensor m = ops::mul(h, h);
  EXPECT_EQ(element_as_double(m, 0), 1.0);
  EXPECT_EQ(element_as_double(m, 2), 6.25);
}

// A concatenation along an outer axis: the condition is the same for every lane of a vector
// along j, so the vector form computes the taken branch whole (both branches load).
TEST(KernelPlan, ConcatenationAlongAnOuterAxisIsVectorized) {
  Task t;
  t.name = "concat";
  int a = t.add_buffer("a", DType::float32, {Expr(3), Expr(40)}, BufferRole::Input);
  int b = t.add_buffer("b", DType::float32, {Expr(5), Expr(40)}, BufferRole::Input);
  int o = t.add_buffer("out", DType::float32, {Expr(8), Expr(40)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = select(binary(BinaryOp::Lt, var("i"), Expr(3)), load(a, DType::float32, s.axes),
                   load(b, DType::float32, {var("i") - Expr(3), var("j")}));
  t.stages.push_back(s);
  KernelPlan plan = plan_kernel(t);
  EXPECT_TRUE(plan.stages[0].vector.ok) << plan.str();
  const std::string src = generate_kernel(t, "k", {});
  EXPECT_NE(src.find(" ? ember_rt::vf::load(b0 + "), std::string::npos) << src;
  // A condition on the lane itself stays a lane range, which a loading branch rules out.
  s.value = select(binary(BinaryOp::Lt, var("j"), Expr(3)), load(a, DType::float32, s.axes),
                   load(b, DType::float32, s.axes));
  t.stages[0] = s;
  EXPECT_FALSE(plan_kernel(t).stages[0].vector.ok);
}

// x[i, j // 2] (a nearest 2x upsampling): splitting j into rows of 2 would vectorize along
// an axis of 2, so it is not split into rows; it runs as two phases instead (out[i, 2 q] and
// out[i, 2 q + 1], both x[i, q]), in vectors along q, stored interleaved.
TEST(KernelPlan, RowsShorterThanAVectorAreNotSplit) {
  Task t;
  t.name = "nearest";
  int x = t.add_buffer("x", DType::float32, {Expr(4), Expr(32)}, BufferRole::Input);
  int o = t.add_buffer("out", DType::float32, {Expr(4), Expr(64)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = load(x, DType::float32, {var("i"), floordiv(var("j"), Expr(2))});
  t.stages.push_back(s);
  const KernelPlan plan = plan_kernel(t);
  const StagePlan& p = plan.stages[0];
  EXPECT_EQ(p.row_split, 0);
  EXPECT_EQ(p.phases, 2);
  EXPECT_TRUE(p.vector.ok) << plan.str();
  EXPECT_NE(plan.str().find("phases: the last axis as 2 interleaved phases"), std::string::npos)
      << plan.str();
  const std::string src = generate_kernel(t, "k", {});
  EXPECT_NE(src.find("ember_rt::store_interleaved("), std::string::npos) << src;
  EXPECT_NE(src.find("ember_rt::store_interleaved_partial("), std::string::npos) << src;
}

// A Call stage with an epilogue (the depthwise convolution): the routine gets a lambda that
// reads its row of values through `row` and writes the output.
TEST(KernelPlan, CallStageWithARowEpilogue) {
  Task t;
  t.name = "dw";
  int x =
      t.add_buffer("x", DType::float32, {Expr(1), Expr(4), Expr(9), Expr(9)}, BufferRole::Input);
  int w = t.add_buffer("w", DType::float32, {Expr(4), Expr(9)}, BufferRole::Input);
  int r =
      t.add_buffer("r", DType::float32, {Expr(1), Expr(4), Expr(9), Expr(9)}, BufferRole::Input);
  int o =
      t.add_buffer("out", DType::float32, {Expr(1), Expr(4), Expr(9), Expr(9)}, BufferRole::Output);
  Stage s;
  s.kind = StageKind::Call;
  s.routine = "depthwise_conv2d";
  s.call_inputs = {x, w};
  s.call_outputs = {o};
  s.out = o;
  s.axes = {var("n"), var("c"), var("h"), var("w")};
  s.params = {Expr(1), Expr(4), Expr(9), Expr(9), Expr(4), Expr(9), Expr(9), Expr(3),
              Expr(3), Expr(1), Expr(1), Expr(1), Expr(1), Expr(1), Expr(1)};
  s.epilogue = unary(UnaryOp::Relu, acc(DType::float32)) + load(r, DType::float32, s.axes);
  t.stages.push_back(s);
  const std::string text = plan_kernel(t).str();
  EXPECT_NE(text.find("load b4 (segment)[(w - __n0)]: contiguous along w"), std::string::npos)
      << text;
  const std::string src = generate_kernel(t, "k", {});
  EXPECT_NE(src.find("const float* __restrict b4 = row;"), std::string::npos) << src;
  EXPECT_NE(src.find("ember_rt::lib::depthwise_conv2d(ctx, b0, b1, b3, "), std::string::npos)
      << src;
  EXPECT_NE(src.find(", epilogue);"), std::string::npos) << src;
}
