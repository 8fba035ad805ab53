// Scalar IR: folding, structural equality, printing, affine analysis, evaluation.
#include <gtest/gtest.h>

#include "ember/ir/expr.h"
#include "ember/ir/simplify.h"
#include "ember/ir/task.h"
#include "ember/support/error.h"

using namespace ember;
using namespace ember::ir;

TEST(Expr, IntegerConstantsFold) {
  Expr e = Expr(2) * Expr(3) + Expr(4);
  ASSERT_TRUE(e.as_int().has_value());
  EXPECT_EQ(*e.as_int(), 10);
  EXPECT_EQ(*floordiv(Expr(-7), Expr(2)).as_int(), -4);  // floor, like Python
  EXPECT_EQ(*mod(Expr(-7), Expr(2)).as_int(), 1);
}

TEST(Expr, IdentitiesKeepIndexArithmeticSmall) {
  Expr n = var("n");
  EXPECT_TRUE(equal(n * 1 + 0, n));
  EXPECT_TRUE(equal(n * 0, Expr(0)));
  EXPECT_TRUE(equal(floordiv(n, 1), n));
  EXPECT_TRUE(equal(n - n, Expr(0)));
}

TEST(Expr, StructuralEqualityAndHash) {
  Expr a = load(0, DType::float32, {var("i"), var("j") + 1});
  Expr b = load(0, DType::float32, {var("i"), var("j") + 1});
  Expr c = load(1, DType::float32, {var("i"), var("j") + 1});
  EXPECT_TRUE(equal(a, b));
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_FALSE(equal(a, c));
}

TEST(Expr, Printing) {
  Expr x = load(0, DType::float32, {var("i")});
  EXPECT_EQ(to_string(binary(BinaryOp::Add, x, const_float(1.0))), "(b0[i] + 1.0)");
  EXPECT_EQ(to_string(unary(UnaryOp::Exp, x)), "exp(b0[i])");
  EXPECT_EQ(to_string(var("n") * 4), "(n * 4)");
  EXPECT_EQ(to_string(cast(x, DType::bfloat16)), "bfloat16(b0[i])");
}

TEST(Expr, LinearCoefficient) {
  Expr i = var("i"), j = var("j"), n = var("n");
  EXPECT_EQ(linear_coefficient(i * 8 + j, "j"), 1);
  EXPECT_EQ(linear_coefficient(i * 8 + j, "i"), 8);
  EXPECT_EQ(linear_coefficient(i * n + j, "j"), 1);
  EXPECT_EQ(linear_coefficient(i * n + j, "i"), std::nullopt);  // symbolic stride
  EXPECT_EQ(linear_coefficient(mod(j, Expr(4)), "j"), std::nullopt);
  EXPECT_EQ(linear_coefficient(i * 3, "j"), 0);
}

TEST(Expr, EvalInt) {
  Expr e = var("n") * 4 + floordiv(var("m"), Expr(2));
  EXPECT_EQ(eval_int(e, {{"n", 3}, {"m", 9}}), 16);
  try {
    eval_int(e, {{"n", 3}});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(), "the value of symbol 'm' is not known");
  }
}

TEST(Expr, SubstituteAndFreeVars) {
  Expr e = var("i") * 2 + var("j");
  Expr s = substitute(e, {{"i", Expr(3)}});
  EXPECT_EQ(to_string(s), "(6 + j)");
  EXPECT_EQ(free_vars(e), (std::vector<std::string>{"i", "j"}));
}

// A random draw is a node of its own: printed, compared, and rebuilt when its counter's
// variables are substituted (a fused consumer's index replacing the producer's).
TEST(Expr, PhiloxUniform) {
  const Expr seed = load(1, DType::int64, {Expr(0)});
  const Expr offset = load(1, DType::int64, {Expr(1)});
  const Expr u = philox_uniform(seed, offset, var("i") * 8 + var("j"));
  EXPECT_EQ(u.dtype(), DType::float32);
  EXPECT_EQ(to_string(u), "philox_uniform(b1[0], b1[1], ((i * 8) + j))");
  EXPECT_TRUE(equal(u, philox_uniform(seed, offset, var("i") * 8 + var("j"))));
  EXPECT_FALSE(equal(u, philox_uniform(offset, seed, var("i") * 8 + var("j"))));
  EXPECT_EQ(to_string(substitute(u, {{"j", var("k") + 1}})),
            "philox_uniform(b1[0], b1[1], ((i * 8) + (k + 1)))");
  EXPECT_EQ(linear_coefficient(u->args[2], "i"), 8);
}

TEST(Task, TextForm) {
  Task t;
  t.name = "add";
  int a = t.add_buffer("x", DType::float32, {Expr(4)}, BufferRole::Input);
  int o = t.add_buffer("y", DType::float32, {Expr(4)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i")};
  s.value = binary(BinaryOp::Mul, load(a, DType::float32, {var("i")}), const_float(2.0));
  t.stages.push_back(s);
  EXPECT_EQ(t.str(),
            "task add {\n  b0 input x: float32[4]\n  b1 output y: float32[4]\n"
            "  b1[i] = (b0[i] * 2.0)\n}");
}

TEST(Simplify, DivModPairsCollapse) {
  Expr p = var("p");
  Expr e = (floordiv(p, Expr(7)) + var("n") * 3) * 7 + mod(p, Expr(7));
  EXPECT_EQ(to_string(simplify_index(e)), "((n * 21) + p)");
  EXPECT_EQ(to_string(simplify_index(var("i") * 4 + var("i") * 2 + 1 - 1)), "(i * 6)");
}

TEST(Simplify, SplitLaneTakesWholeBlocksOff) {
  // Channel cb * 16 + lane of a blocked output, read 64 channels further on: block cb - 4.
  Expr cb = var("cb"), lane = var("lane");
  EXPECT_EQ(to_string(split_lane(cb * 16 + lane - 64, "lane", 16)), "(cb + -4)");
  EXPECT_EQ(to_string(split_lane(lane + var("n") * 32, "lane", 16)), "(n * 2)");
  EXPECT_EQ(to_string(split_lane(lane, "lane", 16)), "0");
  // Not of that form: an offset that is not whole blocks, the lane scaled or missing.
  EXPECT_FALSE(split_lane(cb * 16 + lane - 3, "lane", 16).defined());
  EXPECT_FALSE(split_lane(cb * 8 + lane, "lane", 16).defined());
  EXPECT_FALSE(split_lane(cb * 16 + lane * 2, "lane", 16).defined());
  EXPECT_FALSE(split_lane(cb * 16, "lane", 16).defined());
  EXPECT_FALSE(split_lane(cb * 16 + lane + floordiv(lane, Expr(2)) * 16, "lane", 16).defined());
}

TEST(Simplify, ReindexGroupsDimensions) {
  // [N, O, P] viewed as [N, O, 4, 8]: P splits into (p // 8, p % 8).
  auto idx = reindex({var("n"), var("o"), var("p")}, {Expr(2), Expr(3), Expr(32)},
                     {Expr(2), Expr(3), Expr(4), Expr(8)});
  ASSERT_EQ(idx.size(), 4u);
  EXPECT_EQ(to_string(idx[0]), "n");
  EXPECT_EQ(to_string(idx[2]), "(p // 8)");
  EXPECT_EQ(to_string(idx[3]), "(p % 8)");
  // And back: merging gives one affine index.
  auto back = reindex(idx, {Expr(2), Expr(3), Expr(4), Expr(8)}, {Expr(2), Expr(3), Expr(32)});
  EXPECT_EQ(to_string(back[2]), "p");
  // Symbolic leading dimensions pair up by equality.
  auto sym = reindex({var("b"), var("j")}, {var("n"), Expr(12)}, {var("n"), Expr(3), Expr(4)});
  EXPECT_EQ(to_string(sym[0]), "b");
  EXPECT_EQ(to_string(sym[1]), "(j // 4)");
}
