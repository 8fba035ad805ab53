// Symbolic sizes in operators: size expressions read from text (ir::parse_int_expr), their
// canonical form (two spellings of one size are one dimension), slices with expression
// bounds (exact, unclamped), arange with symbolic bounds, full of a symbolic shape, and
// reshape to sizes with floor divisions.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ember/ops/attrs.h"
#include "ember/ops/nn.h"
#include "ember/ops/op_def.h"
#include "ember/ops/ops.h"
#include "ember/support/error.h"
#include "error_text.h"

namespace ember {
namespace {

using ir::Expr;

const Expr n = ir::var("n");
const Expr m = ir::var("m");

TensorType f32(Shape s) { return TensorType{DType::float32, std::move(s), Device::cpu()}; }

std::string infer1(const std::string& op, std::vector<TensorType> in, OpAttrs a) {
  return op_def(op).infer(in, a).at(0).str();
}

std::string compute_str(const std::string& op, const std::vector<TensorType>& in, OpAttrs a) {
  const TensorType out = op_def(op).infer(in, a).at(0);
  std::vector<Expr> idx;
  for (size_t i = 0; i < out.shape.size(); ++i) idx.push_back(ir::var("i" + std::to_string(i)));
  Loader load = [&](int i, const std::vector<Expr>& ix) { return ir::load(i, in.at(i).dtype, ix); };
  return ir::to_string(op_def(op).compute(ComputeArgs{in, out, a, idx, load}));
}

TEST(SymbolicSizes, ParseReadsWhatToStringPrints) {
  for (const Expr& e : {n * Expr(2) - Expr(1), ir::floordiv(n, Expr(4)), ir::mod(n + m, Expr(3)),
                        ir::min(n, Expr(64)), ir::max(n - Expr(2), Expr(0)), Expr(-3)}) {
    EXPECT_TRUE(ir::equal(ir::parse_int_expr(ir::to_string(e)), e)) << ir::to_string(e);
  }
  EXPECT_EQ(ir::to_string(ir::parse_int_expr("s0 * 2 - -1")), "((s0 * 2) - -1)");
  EXPECT_EQ(ir::eval_int(ir::parse_int_expr("(s0 + 3) // 2 % 5"), {{"s0", 11}}), 2);
  EXPECT_EQ(error_of([] { ir::parse_int_expr("n +* 1"); }),
            "cannot read the size expression 'n +* 1': unexpected '*'; sizes are integers, symbol "
            "names, + - * // %, min(a, b) and max(a, b)");
  EXPECT_EQ(error_of([] { ir::parse_int_expr("min(n)"); }),
            "cannot read the size expression 'min(n)': min and max take two arguments; sizes are "
            "integers, symbol names, + - * // %, min(a, b) and max(a, b)");
}

TEST(SymbolicSizes, SpellingsOfOneSizeBroadcastTogether) {
  // (m * n) from one op and (n * m) from another, (n + 1) - 1 and n: the same dimension.
  EXPECT_EQ(infer1("add", {f32({m * n, 3}), f32({n * m, 3})}, NoAttrs{}), "float32[(m * n), 3]");
  EXPECT_EQ(infer1("add", {f32({(n + Expr(1)) - Expr(1)}), f32({n})}, NoAttrs{}),
            "float32[((n + 1) - 1)]");
  EXPECT_EQ(infer1("concat", {f32({n - Expr(1), 2}), f32({Expr(1), 2})}, AxisAttrs{0}),
            "float32[n, 2]");
  EXPECT_NE(error_of([] {
              op_def("add").infer({f32({n}), f32({ir::min(n, Expr(8))})}, NoAttrs{});
            }),
            "<no error>");  // min(n, 8) is not n
}

TEST(SymbolicSizes, ShapesCompareTheirSizesNotTheirSpelling) {
  // torch spells a conv's output length "(s0 + -2)", ember's inference "(s0 - 2)".
  Shape a = {n, ir::parse_int_expr("(n + -2)")}, b = {n, ir::parse_int_expr("(n - 2)")};
  EXPECT_FALSE(ir::equal(a[1], b[1]));
  EXPECT_TRUE(shape_equal(a, b));
  EXPECT_TRUE(shape_equal({ir::parse_int_expr("(((n + -1) // 2) + 1)")},
                          {ir::parse_int_expr("((n - 1) // 2 + 1)")}));
  EXPECT_FALSE(
      shape_equal({ir::parse_int_expr("((n + 1) // 2)")}, {ir::parse_int_expr("((n - 1) // 2)")}));
  EXPECT_FALSE(shape_equal({n - Expr(2)}, {n - Expr(1)}));
  EXPECT_FALSE(shape_equal({n}, {ir::min(n, Expr(8))}));
  EXPECT_FALSE(shape_equal({n, Expr(2)}, {n}));
}

TEST(SymbolicSizes, ExactSlices) {
  auto exact = [](TensorType x, std::vector<int64_t> axes, Shape starts, Shape stops,
                  std::vector<int64_t> steps) {
    return infer1("slice", {x}, SliceAttrs{axes, starts, stops, steps, false});
  };
  const Expr end(int64_t{1} << 62);
  EXPECT_EQ(exact(f32({2, n}), {1}, {0}, {n}, {1}), "float32[2, n]");
  EXPECT_EQ(exact(f32({64, 64}), {0, 1}, {0, 0}, {n, n}, {1, 1}), "float32[n, n]");
  EXPECT_EQ(exact(f32({2, n}), {1}, {1}, {n - Expr(1)}, {1}), "float32[2, (n - 2)]");
  EXPECT_EQ(exact(f32({2, n}), {1}, {-2}, {end}, {1}), "float32[2, 2]");
  EXPECT_EQ(exact(f32({2, n}), {1}, {1}, {n - Expr(1)}, {2}), "float32[2, ((n - 1) // 2)]");
  EXPECT_EQ(compute_str("slice", {f32({2, n})}, SliceAttrs{{1}, {-2}, {end}, {1}, false}),
            "b0[i0, (i1 + (n - 2))]");
  // Clamped (Python) slicing of a symbolic bound keeps its run-time clamp.
  EXPECT_EQ(infer1("slice", {f32({64})}, SliceAttrs{{0}, {0}, {n}, {1}}),
            "float32[max(min(n, 64), 0)]");
  EXPECT_EQ(attr_fields(SliceAttrs{{1}, {0}, {n}, {1}, false}).back().first, "clamp");
}

TEST(SymbolicSizes, ArangeFullAndReshape) {
  ArangeAttrs a{0, 0, 1, DType::int64};
  a.sym_stop = n;
  EXPECT_EQ(infer1("arange", {}, a), "int64[n]");
  a.start = 1;
  a.step = 2;
  EXPECT_EQ(infer1("arange", {}, a), "int64[(n // 2)]");
  ArangeAttrs b{0, 0, 1, DType::float32};
  b.sym_start = n - Expr(1);
  b.stop = 0;
  b.sym_stop = n + Expr(3);
  EXPECT_EQ(infer1("arange", {}, b), "float32[4]");
  EXPECT_EQ(compute_str("arange", {}, b), "float32(((n - 1) + i0))");
  EXPECT_EQ(attr_fields(b).at(0).second, "(n - 1)");
  ArangeAttrs c = b;
  c.step = 0.5;
  EXPECT_EQ(error_of([&] { op_def("arange").infer({}, c); }),
            "arange: with bounds known only at run time the step must be a non-zero integer, got "
            "0.5");
  EXPECT_EQ(infer1("full", {}, FullAttrs{{n * Expr(2), 3}, 1, DType::float32}),
            "float32[(2 * n), 3]");
  // [m, n] -> [m, 2, n // 2] holds the same elements only for an even n: an error, never an
  // assumption (the torch backend reshapes such a view as torch recorded it, under Dynamo's
  // guards). Both ways, and with -1.
  EXPECT_EQ(error_of([] {
              op_def("reshape").infer({f32({m, n})}, ShapeAttrs{{m, 2, ir::floordiv(n, Expr(2))}});
            }),
            "reshape: cannot reshape float32[m, n] ((m * n) elements) into [m, 2, (n // 2)] "
            "(((m * 2) * (n // 2)) elements); the number of elements must stay the same");
  EXPECT_NE(error_of([] {
              op_def("reshape").infer({f32({m, 2, ir::floordiv(n, Expr(2))})}, ShapeAttrs{{-1, n}});
            }).find("is not a multiple of"),
            std::string::npos);
  // A floor division that divides every coefficient is exact: (2 * n + 4) // 2 = n + 2.
  EXPECT_EQ(infer1("reshape", {f32({m, ir::floordiv(Expr(2) * n + Expr(4), Expr(2)), 2})},
                   ShapeAttrs{{-1, n + Expr(2)}}),
            "float32[(2 * m), (n + 2)]");
  EXPECT_EQ(error_of([] {
              op_def("reshape").infer({f32({n, 3})}, ShapeAttrs{{-1, 2}});
            }),
            "reshape: cannot reshape float32[n, 3] ((n * 3) elements) into [-1, 2]: (n * 3) is not "
            "a multiple of 2; the number of elements must stay the same");
}

TEST(SymbolicSizes, FactoriesWithSymbolsAreTraced) {
  // No symbolic input, but a symbolic shape or bound: the op is recorded, not run.
  EXPECT_TRUE(ops::full({n, 2}, 1.0).is_symbolic());
  const Tensor r = ops::arange(n - Expr(1), n + Expr(1));
  EXPECT_TRUE(r.is_symbolic());
  EXPECT_EQ(r.type().str(), "int64[2]");
  EXPECT_FALSE(ops::arange(Expr(0), Expr(3)).is_symbolic());
}

}  // namespace
}  // namespace ember
