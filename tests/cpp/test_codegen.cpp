// Code generation: what the generated source looks like, and that it runs correctly in
// vector and scalar form.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/codegen/codegen.h"
#include "ember/graph/build.h"
#include "ember/ops/ops.h"

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
  EXPECT_NE(src.find("store_partial"), std::string::npos) << src;    // masked tail
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
}

TEST(Codegen, InputsMustComeFirst) {
  Task t = bias_task();
  std::swap(t.buffers[0], t.buffers[2]);
  EXPECT_THROW(generate_kernel(t, "k", {"n"}), InternalError);
}

TEST(Codegen, TranslationUnitsDefineTheAbiOnce) {
  auto units = make_translation_units({"// a", "// b", "// c"}, 2);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_NE(units[0].find("ember_module_abi"), std::string::npos);
  EXPECT_EQ(units[1].find("ember_module_abi"), std::string::npos);
  EXPECT_NE(units[0].find("// c"), std::string::npos);
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
