// Shape and dtype rules of the operator library, and every user-facing message they give.
// Nothing here compiles a kernel: the rules are called directly (op_def(name).infer), and
// the compute definitions are only built as expressions.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "ember/ops/matmul.h"
#include "ember/ops/op_def.h"
#include "ember/ops/ops.h"
#include "ember/support/cpu.h"
#include "ember/support/error.h"
#include "error_text.h"

namespace ember {
namespace {

using ir::Expr;

const Expr n = ir::var("n");
const Expr m = ir::var("m");

TensorType tt(DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; }
TensorType f32(Shape s) { return tt(DType::float32, std::move(s)); }

TensorType infer1(const std::string& op, std::vector<TensorType> in, OpAttrs a = NoAttrs{}) {
  std::vector<TensorType> out = op_def(op).infer(in, a);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

std::string infer_error(const std::string& op, std::vector<TensorType> in, OpAttrs a = NoAttrs{}) {
  return error_of([&] { op_def(op).infer(in, a); });
}

std::string str(const TensorType& t) { return t.str(); }

// ---- elementwise ----

TEST(OpsElementwise, BroadcastShapes) {
  EXPECT_EQ(str(infer1("add", {f32({2, 3}), f32({3})})), "float32[2, 3]");
  EXPECT_EQ(str(infer1("add", {f32({4, 1, 3}), f32({2, 1})})), "float32[4, 2, 3]");
  EXPECT_EQ(str(infer1("mul", {f32({}), f32({5})})), "float32[5]");
  EXPECT_EQ(str(infer1("add", {f32({n, 3}), f32({1, 3})})), "float32[n, 3]");
  EXPECT_EQ(str(infer1("add", {f32({1, 3}), f32({n, 1})})), "float32[n, 3]");
  EXPECT_EQ(str(infer1("add", {f32({n, 3}), f32({n, 3})})), "float32[n, 3]");
  EXPECT_EQ(str(infer1("add", {f32({0, 3}), f32({1, 3})})), "float32[0, 3]");
}

TEST(OpsElementwise, BroadcastErrors) {
  EXPECT_EQ(infer_error("add", {f32({2, 3}), f32({4})}),
            "add: cannot broadcast shapes [2, 3] and [4]: dimension -1 is 3 vs 4; sizes must be "
            "equal or 1");
  EXPECT_EQ(infer_error("sub", {f32({2, 3}), f32({5, 3})}),
            "sub: cannot broadcast shapes [2, 3] and [5, 3]: dimension -2 is 2 vs 5; sizes must "
            "be equal or 1");
  EXPECT_EQ(infer_error("mul", {f32({n}), f32({m})}),
            "mul: cannot broadcast shapes [n] and [m]: dimension -1 is n vs m; sizes must be "
            "equal or 1");
}

TEST(OpsElementwise, DtypeRules) {
  EXPECT_EQ(infer_error("add", {f32({2}), tt(DType::int32, {2})}),
            "add: dtypes differ: float32 vs int32; cast one operand with ember.ops.cast (both "
            "operands must have the same dtype)");
  EXPECT_EQ(infer_error("add", {tt(DType::boolean, {2}), tt(DType::boolean, {2})}),
            "add: bool tensors are not supported; cast to an integer or floating-point dtype "
            "first with ember.ops.cast");
  EXPECT_EQ(infer_error("exp", {tt(DType::int64, {2})}),
            "exp: expected a floating-point tensor (float16, bfloat16, float32 or float64), got "
            "int64; cast it first with ember.ops.cast(x, ember.float32)");
  EXPECT_EQ(infer_error("neg", {tt(DType::boolean, {2})}),
            "neg: bool tensors are not supported; cast to an integer or floating-point dtype "
            "first with ember.ops.cast");
  EXPECT_EQ(infer1("relu", {tt(DType::int32, {2})}).dtype, DType::int32);
  EXPECT_EQ(infer1("floor", {tt(DType::int8, {2})}).dtype, DType::int8);
  EXPECT_EQ(infer1("gelu", {tt(DType::bfloat16, {2})}).dtype, DType::bfloat16);
  EXPECT_EQ(infer1("logical_not", {f32({2})}).dtype, DType::boolean);
  EXPECT_EQ(infer1("div", {tt(DType::int64, {2}), tt(DType::int64, {2})}).dtype, DType::float32);
  EXPECT_EQ(infer1("div", {tt(DType::float16, {2}), tt(DType::float16, {})}).dtype, DType::float16);
  EXPECT_EQ(infer1("less", {f32({2, 1}), f32({3})}).dtype, DType::boolean);
  EXPECT_EQ(str(infer1("equal", {f32({2, 1}), f32({3})})), "bool[2, 3]");
  EXPECT_EQ(infer1("logical_and", {f32({2}), tt(DType::int32, {2})}).dtype, DType::boolean);
  EXPECT_EQ(infer1("pow", {tt(DType::int32, {2}), tt(DType::int32, {2})}).dtype, DType::int32);
}

TEST(OpsElementwise, ArityAndDevices) {
  EXPECT_EQ(infer_error("add", {f32({2})}), "add: expected 2 inputs, got 1");
  EXPECT_EQ(infer_error("relu", {f32({2}), f32({2})}), "relu: expected 1 input, got 2");
  const TensorType gpu{DType::float32, {2}, Device{DeviceKind::cuda, 0}};
  EXPECT_EQ(infer_error("add", {f32({2}), gpu}),
            "add: inputs are on different devices: cpu vs cuda:0; move them to one device first");
}

TEST(OpsElementwise, Where) {
  const TensorType c = tt(DType::boolean, {2, 1, 1});
  EXPECT_EQ(str(infer1("where", {c, f32({1, 3, 1}), f32({4})})), "float32[2, 3, 4]");
  EXPECT_EQ(infer_error("where", {f32({2}), f32({2}), f32({2})}),
            "where: the condition must be a bool tensor, got float32; compare first (e.g. x > 0) "
            "or cast it with ember.ops.cast");
  EXPECT_EQ(infer_error("where", {c, f32({2}), tt(DType::float64, {2})}),
            "where: dtypes differ: float32 vs float64; cast one operand with ember.ops.cast "
            "(both operands must have the same dtype)");
  EXPECT_EQ(infer_error("where", {tt(DType::boolean, {2}), f32({3}), f32({3})}),
            "where: cannot broadcast shapes [2] and [3]: dimension -1 is 2 vs 3; sizes must be "
            "equal or 1");
}

TEST(OpsElementwise, Cast) {
  EXPECT_EQ(str(infer1("cast", {f32({2, n})}, CastAttrs{DType::int8})), "int8[2, n]");
  EXPECT_THROW(op_def("cast").infer({f32({2})}, NoAttrs{}), InternalError);
}

// The compute definitions, with every input read straight from its buffer.
std::string compute_str(const std::string& op, const std::vector<TensorType>& in,
                        OpAttrs attrs = NoAttrs{}) {
  const TensorType out = infer1(op, in, attrs);
  std::vector<Expr> idx;
  for (size_t i = 0; i < out.shape.size(); ++i) idx.push_back(ir::var("i" + std::to_string(i)));
  Loader load = [&](int i, const std::vector<Expr>& ix) { return ir::load(i, in.at(i).dtype, ix); };
  return ir::to_string(op_def(op).compute(ComputeArgs{in, out, attrs, idx, load}));
}

TEST(OpsElementwise, ComputeDefinitions) {
  EXPECT_EQ(compute_str("add", {f32({2, 3}), f32({3})}), "(b0[i0, i1] + b1[i1])");
  EXPECT_EQ(compute_str("add", {f32({2, 3}), f32({2, 1})}), "(b0[i0, i1] + b1[i0, 0])");
  EXPECT_EQ(compute_str("exp", {tt(DType::float16, {4})}), "float16(exp(float32(b0[i0])))");
  EXPECT_EQ(compute_str("div", {tt(DType::int32, {4}), tt(DType::int32, {4})}),
            "(float32(b0[i0]) / float32(b1[i0]))");
  EXPECT_EQ(compute_str("relu", {tt(DType::int32, {4})}), "max(b0[i0], 0:int32)");
  EXPECT_EQ(compute_str("cast", {f32({4})}, CastAttrs{DType::boolean}), "(b0[i0] != 0.0)");
  EXPECT_EQ(compute_str("cast", {tt(DType::bfloat16, {4})}, CastAttrs{DType::int32}),
            "int32(float32(b0[i0]))");
  EXPECT_EQ(compute_str("where", {tt(DType::boolean, {4}), f32({4}), f32({})}),
            "select(b0[i0], b1[i0], b2[])");
}

// ---- reductions ----

TEST(OpsReduce, Shapes) {
  const TensorType x = f32({2, 3, 4});
  EXPECT_EQ(str(infer1("sum", {x}, ReduceAttrs{{1}, false})), "float32[2, 4]");
  EXPECT_EQ(str(infer1("sum", {x}, ReduceAttrs{{1}, true})), "float32[2, 1, 4]");
  EXPECT_EQ(str(infer1("mean", {x}, ReduceAttrs{{}, false})), "float32[]");
  EXPECT_EQ(str(infer1("max", {x}, ReduceAttrs{{}, true})), "float32[1, 1, 1]");
  EXPECT_EQ(str(infer1("min", {x}, ReduceAttrs{{-1, 0}, false})), "float32[3]");
  EXPECT_EQ(str(infer1("argmax", {x}, ReduceAttrs{{2}, false})), "int64[2, 3]");
  EXPECT_EQ(str(infer1("argmin", {f32({n, 5})}, ReduceAttrs{{1}, true})), "int64[n, 1]");
  EXPECT_EQ(str(infer1("sum", {f32({})}, ReduceAttrs{{0}, false})), "float32[]");
}

TEST(OpsReduce, Dtypes) {
  EXPECT_EQ(infer1("sum", {tt(DType::int32, {4})}, ReduceAttrs{}).dtype, DType::int64);
  EXPECT_EQ(infer1("sum", {tt(DType::boolean, {4})}, ReduceAttrs{}).dtype, DType::int64);
  EXPECT_EQ(infer1("prod", {tt(DType::int8, {4})}, ReduceAttrs{}).dtype, DType::int64);
  EXPECT_EQ(infer1("sum", {tt(DType::float16, {4})}, ReduceAttrs{}).dtype, DType::float16);
  EXPECT_EQ(infer1("max", {tt(DType::int32, {4})}, ReduceAttrs{}).dtype, DType::int32);
  EXPECT_EQ(infer_error("mean", {tt(DType::int32, {4})}, ReduceAttrs{}),
            "mean: expected a floating-point tensor (float16, bfloat16, float32 or float64), got "
            "int32; cast it first with ember.ops.cast(x, ember.float32)");
}

TEST(OpsReduce, Errors) {
  EXPECT_EQ(infer_error("sum", {f32({2, 3, 4})}, ReduceAttrs{{3}, false}),
            "sum: dimension 3 is out of range for a tensor of rank 3 (expected a dimension in "
            "[-3, 2])");
  EXPECT_EQ(infer_error("sum", {f32({2, 3, 4})}, ReduceAttrs{{1, -2}, false}),
            "sum: dimension 1 appears more than once; give each dimension once");
  EXPECT_EQ(infer_error("argmax", {f32({2, 3})}, ReduceAttrs{{0, 1}, false}),
            "argmax: expected exactly one dimension, got 2; flatten the tensor first to reduce "
            "several dimensions at once");
  EXPECT_EQ(infer_error("max", {f32({2, 0})}, ReduceAttrs{{1}, false}),
            "max: cannot reduce over a zero-size dimension (dimension 1 of float32[2, 0]): max of "
            "no elements is undefined; only sum, mean and prod accept it");
  EXPECT_EQ(infer_error("argmin", {f32({0})}, ReduceAttrs{{0}, false}),
            "argmin: cannot reduce over a zero-size dimension (dimension 0 of float32[0]): argmin "
            "of no elements is undefined; only sum, mean and prod accept it");
  EXPECT_EQ(str(infer1("max", {f32({0, 3})}, ReduceAttrs{{1}, false})), "float32[0]");
  EXPECT_EQ(str(infer1("sum", {f32({2, 0})}, ReduceAttrs{{1}, false})), "float32[2]");
  EXPECT_EQ(infer_error("argmax", {tt(DType::boolean, {3})}, ReduceAttrs{{0}, false}),
            "argmax: bool tensors are not supported; cast to an integer or floating-point dtype "
            "first with ember.ops.cast");
}

TEST(OpsReduce, ReduceDefinitions) {
  const std::vector<TensorType> in = {tt(DType::float16, {2, 3, 4})};
  const ReduceAttrs attrs{{1}, true};
  const TensorType out = infer1("mean", in, attrs);
  const ReduceDef r = op_def("mean").reduce(in, out, attrs);
  EXPECT_EQ(r.op, ir::ReduceOp::Sum);
  EXPECT_EQ(r.acc_dtype, DType::float32);
  ASSERT_EQ(r.rextents.size(), 1u);
  EXPECT_EQ(ir::to_string(r.rextents[0]), "3");
  Loader load = [&](int i, const std::vector<Expr>& ix) { return ir::load(i, in[0].dtype, ix); };
  const std::vector<Expr> idx = {ir::var("i0"), ir::var("i1"), ir::var("i2")};
  EXPECT_EQ(ir::to_string(r.value(idx, {ir::var("r0")}, load)), "float32(b0[i0, r0, i2])");
  ASSERT_TRUE(r.finalize != nullptr);
  EXPECT_EQ(ir::to_string(r.finalize(ir::acc(DType::float32))), "float16((acc / 3.0))");

  const std::vector<TensorType> ints = {tt(DType::boolean, {5})};
  const ReduceDef s = op_def("sum").reduce(ints, infer1("sum", ints, ReduceAttrs{}), ReduceAttrs{});
  EXPECT_EQ(s.acc_dtype, DType::int64);
  Loader load_bool = [](int i, const std::vector<Expr>& ix) {
    return ir::load(i, DType::boolean, ix);
  };
  EXPECT_EQ(ir::to_string(s.value({}, {ir::var("r0")}, load_bool)), "int64(b0[r0])");

  const std::vector<TensorType> f = {f32({2, 3})};
  const ReduceAttrs a1{{1}, false};
  const ReduceDef am = op_def("argmax").reduce(f, infer1("argmax", f, a1), a1);
  EXPECT_EQ(am.op, ir::ReduceOp::ArgMax);
  EXPECT_EQ(am.acc_dtype, DType::float32);
  EXPECT_TRUE(am.finalize == nullptr);
}

TEST(OpsReduce, Softmax) {
  EXPECT_EQ(str(infer1("softmax", {f32({2, n})}, AxisAttrs{-1})), "float32[2, n]");
  EXPECT_EQ(infer_error("softmax", {tt(DType::int32, {2})}, AxisAttrs{0}),
            "softmax: expected a floating-point tensor (float16, bfloat16, float32 or float64), "
            "got int32; cast it first with ember.ops.cast(x, ember.float32)");
  EXPECT_EQ(infer_error("softmax", {f32({2, 3})}, AxisAttrs{2}),
            "softmax: dimension 2 is out of range for a tensor of rank 2 (expected a dimension in "
            "[-2, 1])");
  EXPECT_EQ(infer_error("softmax", {f32({})}, AxisAttrs{0}),
            "softmax: expected a tensor with at least one dimension, got a 0-d tensor; unsqueeze "
            "it first");

  const std::vector<TensorType> in = {tt(DType::bfloat16, {4, 8})};
  const ir::Task t = op_def("softmax").lower(in, in, AxisAttrs{1});
  ASSERT_EQ(t.buffers.size(), 4u);
  EXPECT_EQ(t.buffers[0].role, ir::BufferRole::Input);
  EXPECT_EQ(t.buffers[1].role, ir::BufferRole::Output);
  EXPECT_EQ(t.buffers[2].role, ir::BufferRole::Scratch);
  EXPECT_EQ(t.buffers[2].dtype, DType::float32);
  EXPECT_EQ(shape_str(t.buffers[2].shape), "[4]");
  ASSERT_EQ(t.stages.size(), 3u);
  EXPECT_EQ(t.stages[0].kind, ir::StageKind::Reduce);
  EXPECT_EQ(t.stages[0].reduce_op, ir::ReduceOp::Max);
  EXPECT_EQ(ir::to_string(t.stages[0].value), "float32(b0[__i0, __k])");
  EXPECT_EQ(t.stages[1].reduce_op, ir::ReduceOp::Sum);
  EXPECT_EQ(ir::to_string(t.stages[1].value), "exp((float32(b0[__i0, __k]) - b2[__i0]))");
  EXPECT_EQ(t.stages[2].kind, ir::StageKind::Compute);
  EXPECT_EQ(t.stages[2].out, 1);
  EXPECT_EQ(ir::to_string(t.stages[2].value),
            "bfloat16((exp((float32(b0[__i0, __i1]) - b2[__i0])) / b3[__i0]))");
}

// ---- matmul ----

TEST(OpsMatmul, Shapes) {
  EXPECT_EQ(str(infer1("matmul", {f32({2, 3}), f32({3, 4})})), "float32[2, 4]");
  EXPECT_EQ(str(infer1("matmul", {f32({3}), f32({3, 4})})), "float32[4]");
  EXPECT_EQ(str(infer1("matmul", {f32({2, 3}), f32({3})})), "float32[2]");
  EXPECT_EQ(str(infer1("matmul", {f32({3}), f32({3})})), "float32[]");
  EXPECT_EQ(str(infer1("matmul", {f32({5, 1, 2, 3}), f32({4, 3, 6})})), "float32[5, 4, 2, 6]");
  EXPECT_EQ(str(infer1("matmul", {f32({n, 3}), f32({3, m})})), "float32[n, m]");
  EXPECT_EQ(str(infer1("matmul", {f32({7, 2, 3}), f32({3})})), "float32[7, 2]");
  const MatmulDims d = matmul_dims(f32({3}), f32({2, 3, 4}));
  EXPECT_TRUE(d.a_vector);
  EXPECT_FALSE(d.b_vector);
  EXPECT_EQ(shape_str(d.batch), "[2]");
  EXPECT_EQ(ir::to_string(d.m), "1");
  EXPECT_EQ(ir::to_string(d.n), "4");
  EXPECT_EQ(ir::to_string(d.k), "3");
}

TEST(OpsMatmul, Errors) {
  EXPECT_EQ(infer_error("matmul", {f32({2, 3}), f32({4, 5})}),
            "matmul: shapes [2, 3] and [4, 5] are not aligned: a has 3 columns but b has 4 rows; "
            "a's last dimension must equal b's second-to-last dimension");
  EXPECT_EQ(infer_error("matmul", {f32({2, 3}), f32({4})}),
            "matmul: shapes [2, 3] and [4] are not aligned: a has 3 columns but b has 4 rows; "
            "a's last dimension must equal b's only dimension");
  EXPECT_EQ(infer_error("matmul", {f32({2, 2, 3}), f32({5, 3, 4})}),
            "matmul: cannot broadcast shapes [2] and [5]: dimension -1 is 2 vs 5; sizes must be "
            "equal or 1 (the batch dimensions of [2, 2, 3] and [5, 3, 4])");
  EXPECT_EQ(infer_error("matmul", {f32({}), f32({3})}),
            "matmul: both operands need at least one dimension, got float32[] and float32[3]; "
            "multiply by a 0-d tensor with mul");
  EXPECT_EQ(infer_error("matmul", {f32({2, 3}), tt(DType::float16, {3, 4})}),
            "matmul: dtypes differ: float32 vs float16; cast one operand with ember.ops.cast "
            "(both operands must have the same dtype)");
  EXPECT_EQ(infer_error("matmul", {tt(DType::boolean, {2, 3}), tt(DType::boolean, {3, 4})}),
            "matmul: bool tensors are not supported; cast to an integer or floating-point dtype "
            "first with ember.ops.cast");
}

TEST(OpsMatmul, ReduceFallback) {
  const std::vector<TensorType> in = {tt(DType::bfloat16, {3, 2, 5}), tt(DType::bfloat16, {5})};
  const TensorType out = infer1("matmul", in);
  EXPECT_EQ(str(out), "bfloat16[3, 2]");
  const ReduceDef r = op_def("matmul").reduce(in, out, NoAttrs{});
  EXPECT_EQ(r.acc_dtype, DType::float32);
  Loader load = [&](int i, const std::vector<Expr>& ix) { return ir::load(i, in[i].dtype, ix); };
  EXPECT_EQ(ir::to_string(r.value({ir::var("i0"), ir::var("i1")}, {ir::var("k")}, load)),
            "(float32(b0[i0, i1, k]) * float32(b1[k]))");
  EXPECT_EQ(ir::to_string(r.finalize(ir::acc(DType::float32))), "bfloat16(acc)");
}

// ---- transforms ----

TEST(OpsTransform, Reshape) {
  auto reshape = [](TensorType x, Shape s) { return str(infer1("reshape", {x}, ShapeAttrs{s})); };
  EXPECT_EQ(reshape(f32({2, 3}), {3, 2}), "float32[3, 2]");
  EXPECT_EQ(reshape(f32({2, 3}), {-1}), "float32[6]");
  EXPECT_EQ(reshape(f32({2, 3, 4}), {2, -1, 1}), "float32[2, 12, 1]");
  EXPECT_EQ(reshape(f32({}), {1, 1}), "float32[1, 1]");
  EXPECT_EQ(reshape(f32({n, 4, 3}), {n, 12}), "float32[n, 12]");
  EXPECT_EQ(reshape(f32({n, 4, 3}), {-1, 12}), "float32[n, 12]");
  EXPECT_EQ(reshape(f32({n, 12}), {-1, 4}), "float32[(3 * n), 4]");
  EXPECT_EQ(reshape(f32({2, n, m}), {m, -1}), "float32[m, (2 * n)]");
  EXPECT_EQ(reshape(f32({0, 3}), {3, 0}), "float32[3, 0]");
}

TEST(OpsTransform, ReshapeErrors) {
  auto err = [](TensorType x, Shape s) { return infer_error("reshape", {x}, ShapeAttrs{s}); };
  EXPECT_EQ(err(f32({2, 3}), {4, 2}),
            "reshape: cannot reshape float32[2, 3] (6 elements) into [4, 2] (8 elements); the "
            "number of elements must stay the same");
  EXPECT_EQ(err(f32({2, 3}), {-1, 4}),
            "reshape: cannot reshape float32[2, 3] (6 elements) into [-1, 4]: 6 is not a multiple "
            "of 4; the number of elements must stay the same");
  EXPECT_EQ(err(f32({2, 3}), {-1, -1}), "reshape: only one dimension can be -1, got [-1, -1]");
  EXPECT_EQ(err(f32({2, 3}), {-2, 3}),
            "reshape: invalid size -2 in [-2, 3]; sizes must be >= 0, or -1 (once) to infer one "
            "from the others");
  EXPECT_EQ(err(f32({0, 3}), {-1, 0}),
            "reshape: cannot infer the -1 in [-1, 0] for float32[0, 3]: the other sizes multiply "
            "to 0, so any size would do");
  EXPECT_EQ(err(f32({n, 4}), {m, 4}),
            "reshape: cannot reshape float32[n, 4] ((n * 4) elements) into [m, 4] ((m * 4) "
            "elements); the number of elements must stay the same");
  EXPECT_EQ(err(f32({n, 4}), {-1, m}),
            "reshape: cannot reshape float32[n, 4] ((n * 4) elements) into [-1, m]: (n * 4) is "
            "not a multiple of m; the number of elements must stay the same");
}

TEST(OpsTransform, ReshapeCompute) {
  EXPECT_EQ(compute_str("reshape", {f32({2, 3, 4})}, ShapeAttrs{{6, 4}}),
            "b0[(i0 // 3), (i0 % 3), i1]");
  EXPECT_EQ(compute_str("reshape", {f32({n, 768})}, ShapeAttrs{{n, 12, 64}}),
            "b0[i0, ((i1 * 64) + i2)]");
  EXPECT_EQ(compute_str("reshape", {f32({n, 1, 8})}, ShapeAttrs{{n, 8}}), "b0[i0, 0, i1]");
}

TEST(OpsTransform, Permute) {
  EXPECT_EQ(str(infer1("permute", {f32({2, 3, 4})}, DimsAttrs{{2, 0, 1}})), "float32[4, 2, 3]");
  EXPECT_EQ(str(infer1("permute", {f32({2, n})}, DimsAttrs{{-1, 0}})), "float32[n, 2]");
  EXPECT_EQ(infer_error("permute", {f32({2, 3, 4})}, DimsAttrs{{0, 1}}),
            "permute: the permutation [0, 1] has 2 dimensions but float32[2, 3, 4] has 3; list "
            "every dimension once");
  EXPECT_EQ(infer_error("permute", {f32({2, 3})}, DimsAttrs{{1, 1}}),
            "permute: dimension 1 appears more than once; give each dimension once");
  EXPECT_EQ(compute_str("permute", {f32({2, 3, 4})}, DimsAttrs{{2, 0, 1}}), "b0[i1, i2, i0]");
}

TEST(OpsTransform, SqueezeUnsqueeze) {
  EXPECT_EQ(str(infer1("squeeze", {f32({1, 3, 1})}, DimsAttrs{})), "float32[3]");
  EXPECT_EQ(str(infer1("squeeze", {f32({1, 3, 1})}, DimsAttrs{{0}})), "float32[3, 1]");
  EXPECT_EQ(str(infer1("squeeze", {f32({1, 3, 1})}, DimsAttrs{{1}})), "float32[1, 3, 1]");
  EXPECT_EQ(str(infer1("squeeze", {f32({n, 1})}, DimsAttrs{})), "float32[n]");
  EXPECT_EQ(infer_error("squeeze", {f32({1, 3})}, DimsAttrs{{2}}),
            "squeeze: dimension 2 is out of range for a tensor of rank 2 (expected a dimension in "
            "[-2, 1])");
  EXPECT_EQ(compute_str("squeeze", {f32({1, 3, 1})}, DimsAttrs{}), "b0[0, i0, 0]");
  EXPECT_EQ(str(infer1("unsqueeze", {f32({2, 3})}, DimsAttrs{{0, -1}})), "float32[1, 2, 3, 1]");
  EXPECT_EQ(str(infer1("unsqueeze", {f32({})}, DimsAttrs{{0}})), "float32[1]");
  EXPECT_EQ(infer_error("unsqueeze", {f32({2})}, DimsAttrs{{3}}),
            "unsqueeze: dimension 3 is out of range for a tensor of rank 2 (expected a dimension "
            "in [-2, 1])");
  EXPECT_EQ(compute_str("unsqueeze", {f32({2, 3})}, DimsAttrs{{1}}), "b0[i0, i2]");
}

TEST(OpsTransform, Concat) {
  EXPECT_EQ(str(infer1("concat", {f32({2, 3}), f32({4, 3})}, AxisAttrs{0})), "float32[6, 3]");
  EXPECT_EQ(str(infer1("concat", {f32({n, 3}), f32({m, 3})}, AxisAttrs{0})), "float32[(m + n), 3]");
  EXPECT_EQ(str(infer1("concat", {f32({2, 3})}, AxisAttrs{-1})), "float32[2, 3]");
  EXPECT_EQ(infer_error("concat", {f32({2, 3}), f32({2, 4})}, AxisAttrs{0}),
            "concat: input 1 has shape [2, 4] but input 0 has shape [2, 3]; sizes must match in "
            "every dimension except the concat axis 0");
  EXPECT_EQ(infer_error("concat", {f32({2, 3}), f32({3})}, AxisAttrs{0}),
            "concat: input 1 has rank 1 but input 0 has rank 2; every input needs the same rank");
  EXPECT_EQ(infer_error("concat", {f32({2}), tt(DType::int32, {2})}, AxisAttrs{0}),
            "concat: dtypes differ: float32 vs int32; cast one operand with ember.ops.cast (both "
            "operands must have the same dtype)");
  EXPECT_EQ(infer_error("concat", {}, AxisAttrs{0}),
            "concat: expected at least one input, got none");
  EXPECT_EQ(infer_error("concat", {f32({}), f32({})}, AxisAttrs{0}),
            "concat: cannot concatenate 0-d tensors; unsqueeze them first");
  EXPECT_EQ(compute_str("concat", {f32({2, 3}), f32({2, 1}), f32({2, 2})}, AxisAttrs{1}),
            "select((i1 < 3), b0[i0, i1], select((i1 < 4), b1[i0, (i1 - 3)], b2[i0, (i1 - 4)]))");
}

TEST(OpsTransform, Slice) {
  auto slice = [](TensorType x, SliceAttrs a) { return str(infer1("slice", {x}, a)); };
  EXPECT_EQ(slice(f32({10}), {{0}, {2}, {8}, {2}}), "float32[3]");
  EXPECT_EQ(slice(f32({10, 4}), {{0}, {-3}, {100}, {}}), "float32[3, 4]");
  EXPECT_EQ(slice(f32({10, 4}), {{-1}, {1}, {-1}, {1}}), "float32[10, 2]");
  EXPECT_EQ(slice(f32({10}), {{0}, {7}, {3}, {1}}), "float32[0]");
  EXPECT_EQ(slice(f32({10}), {{0}, {-20}, {20}, {3}}), "float32[4]");
  const int64_t end = INT64_MAX;
  // Symbolic bounds are clamped into [0, n] when the graph runs, as Python slicing does.
  EXPECT_EQ(slice(f32({n}), {{0}, {1}, {end}, {1}}), "float32[max((n - min(1, n)), 0)]");
  EXPECT_EQ(slice(f32({n}), {{0}, {-2}, {end}, {1}}), "float32[max((n - max((n + -2), 0)), 0)]");
  EXPECT_EQ(slice(f32({n}), {{0}, {0}, {-1}, {1}}), "float32[max(max((n + -1), 0), 0)]");
  EXPECT_EQ(slice(f32({n}), {{0}, {2}, {6}, {2}}),
            "float32[((max((min(6, n) - min(2, n)), 0) + 1) // 2)]");
  EXPECT_EQ(compute_str("slice", {f32({10, 4})}, SliceAttrs{{0}, {2}, {8}, {2}}),
            "b0[((i0 * 2) + 2), i1]");
  EXPECT_EQ(compute_str("slice", {f32({n})}, SliceAttrs{{0}, {-3}, {end}, {1}}),
            "b0[(i0 + max((n + -3), 0))]");
}

TEST(OpsTransform, SliceErrors) {
  auto err = [](TensorType x, SliceAttrs a) { return infer_error("slice", {x}, a); };
  EXPECT_EQ(err(f32({10}), {{0}, {0}, {5}, {0}}),
            "slice: step must be >= 1, got 0 for axis 0; reversed (negative-step) slices are not "
            "supported");
  EXPECT_EQ(err(f32({10}), {{0}, {0, 1}, {5}, {}}),
            "slice: axes, starts, stops and steps must have the same length, got 1, 2, 1 and 0");
  EXPECT_EQ(err(f32({10, 3}), {{0, -2}, {0, 0}, {5, 5}, {}}),
            "slice: axis 0 is sliced twice; give each axis once");
  EXPECT_EQ(err(f32({10}), {{1}, {0}, {5}, {}}),
            "slice: dimension 1 is out of range for a tensor of rank 1 (expected a dimension in "
            "[-1, 0])");
}

TEST(OpsTransform, Expand) {
  auto expand = [](TensorType x, Shape s) { return str(infer1("expand", {x}, ShapeAttrs{s})); };
  EXPECT_EQ(expand(f32({1, 3}), {4, 3}), "float32[4, 3]");
  EXPECT_EQ(expand(f32({3}), {2, 3}), "float32[2, 3]");
  EXPECT_EQ(expand(f32({1, 3}), {n, -1}), "float32[n, 3]");
  EXPECT_EQ(expand(f32({n, 1}), {-1, 5}), "float32[n, 5]");
  auto err = [](TensorType x, Shape s) { return infer_error("expand", {x}, ShapeAttrs{s}); };
  EXPECT_EQ(err(f32({2, 3}), {4, 3}),
            "expand: cannot expand float32[2, 3] to [4, 3]: dimension 0 has size 2; only size-1 "
            "dimensions can be expanded");
  EXPECT_EQ(err(f32({3}), {-1, 3}),
            "expand: -1 is not allowed for the new leading dimension 0 of [-1, 3]; give its size");
  EXPECT_EQ(err(f32({2, 3}), {3}),
            "expand: the target shape [3] has fewer dimensions than float32[2, 3]; expand cannot "
            "remove dimensions");
  EXPECT_EQ(err(f32({1}), {-3}),
            "expand: invalid size -3 in [-3]; sizes must be >= 0, or -1 to keep a dimension");
  EXPECT_EQ(compute_str("expand", {f32({1, 3})}, ShapeAttrs{{2, 4, 3}}), "b0[0, i2]");
}

// ---- the tensor API without compiling: traces and views ----

TEST(OpsApi, SymbolicInputsRecordATrace) {
  const Tensor x = Tensor::symbol({n, 3}, DType::float32, Device::cpu(), "x");
  const Tensor w = zeros({3, 4});
  const Tensor y = ops::add(ops::matmul(x, w), ops::scalar(1.0, DType::float32));
  EXPECT_TRUE(y.is_symbolic());
  ASSERT_TRUE(y.trace() != nullptr);
  EXPECT_EQ(y.trace()->op->name, "add");
  EXPECT_EQ(y.type().str(), "float32[n, 4]");
  EXPECT_EQ(y.trace()->inputs.at(0).trace()->op->name, "matmul");
  EXPECT_EQ(y.trace_index(), 0);
}

TEST(OpsApi, ErrorsComeFromTheShapeRule) {
  const Tensor x = Tensor::symbol({2, 3}, DType::float32);
  EXPECT_EQ(error_of([&] { ops::add(x, Tensor::symbol({4}, DType::float32)); }),
            "add: cannot broadcast shapes [2, 3] and [4]: dimension -1 is 3 vs 4; sizes must be "
            "equal or 1");
  EXPECT_EQ(error_of([&] { ops::apply("add", {x}); }), "add: expected 2 inputs, got 1");
  EXPECT_EQ(error_of([&] { ops::sum(x, {2}); }),
            "sum: dimension 2 is out of range for a tensor of rank 2 (expected a dimension in "
            "[-2, 1])");
  EXPECT_EQ(error_of([&] { ops::flatten(x, 1, 0); }),
            "flatten: start_dim 1 comes after end_dim 0 in a tensor of rank 2");
  EXPECT_EQ(error_of([&] { ops::concat({}); }), "concat: expected at least one tensor, got none");
}

TEST(OpsApi, AttributesAreNormalized) {
  const Tensor x = Tensor::symbol({2, 3, 4}, DType::float32);
  EXPECT_EQ(attrs_as<ReduceAttrs>(ops::sum(x, {-1, 0}).trace()->attrs).dims,
            (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(attrs_as<DimsAttrs>(ops::transpose(x, 0, -1).trace()->attrs).dims,
            (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(ops::flatten(x, 1).type().str(), "float32[2, 12]");
  EXPECT_EQ(ops::flatten(x).type().str(), "float32[24]");
  const SliceAttrs s = attrs_as<SliceAttrs>(ops::slice(x, {-1}, {-3}, {100}).trace()->attrs);
  EXPECT_EQ(s.axes, (std::vector<int64_t>{2}));
  EXPECT_EQ(shape_str(s.starts), "[1]");
  EXPECT_EQ(shape_str(s.stops), "[4]");
  EXPECT_EQ(s.steps, (std::vector<int64_t>{1}));
  EXPECT_EQ(ops::gelu(x, true).trace()->op->name, "gelu_tanh");
  EXPECT_EQ(ops::cast(x, DType::float32).impl(), x.impl());
}

TEST(OpsApi, ShapeOpsOnConcreteTensorsAreViews) {
  const Tensor x = from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::float32);
  const Tensor r = ops::reshape(x, {3, -1});
  EXPECT_FALSE(r.is_symbolic());
  EXPECT_EQ(r.type().str(), "float32[3, 2]");
  EXPECT_EQ(r.data(), x.data());
  const Tensor u = ops::unsqueeze(ops::flatten(x), {0});
  EXPECT_EQ(u.type().str(), "float32[1, 6]");
  EXPECT_EQ(u.data(), x.data());
  const Tensor s = ops::squeeze(u);
  EXPECT_EQ(s.type().str(), "float32[6]");
  EXPECT_EQ(element_as_double(s, 4), 5.0);
}

// conv2d_blocked reads x blocked with its prepared weight's block, or plain (a graph's
// few-channel image); its output is blocked either way. Another block is refused. conv1d's
// [N, C, L] runs as a height of 1, on a weight prepared with KH = 1.
TEST(OpsConv, BlockedReadsItsBlockOrPlain) {
  ConvAttrs a;
  a.stride = {1, 1};
  a.padding = {1, 1};
  a.dilation = {1, 1};
  a.algo = "blocked";
  a.out_channels = 20;
  const TensorType wp = f32({2, 1, 3, 3, 16, 16});
  TensorType x = f32({1, 3, 8, 8});
  EXPECT_EQ(str(infer1("conv2d_blocked", {x, wp}, a)), "float32[1, 20, 8, 8]{nChw16c}");
  x.layout = Layout::blocked(16);
  EXPECT_EQ(str(infer1("conv2d_blocked", {x, wp}, a)), "float32[1, 20, 8, 8]{nChw16c}");
  x.layout = Layout::blocked(8);
  const std::string rule =
      "conv2d_blocked: takes an input [N, C, H, W] (or [N, C, L]) in the channel-blocked layout "
      "of the weight's block (nChw<b>c, nCw<b>c) or plain, the weight prepared by "
      "conv_blocked_filter [ceil(O / b), ceil(C / b), KH, KW, b, b] (KH = 1 for [N, C, L]), "
      "algo 'blocked' and out_channels O; got ";
  EXPECT_EQ(infer_error("conv2d_blocked", {x, wp}, a),
            rule +
                "float32[1, 3, 8, 8]{nChw8c}, float32[2, 1, 3, 3, 16, 16], algo 'blocked', "
                "out_channels 20");
  ConvAttrs a1 = a;
  a1.stride = {2};
  a1.padding = {1};
  a1.dilation = {1};
  TensorType x1 = f32({2, 3, 9});
  const TensorType wp1 = f32({2, 1, 1, 3, 16, 16});
  EXPECT_EQ(str(infer1("conv2d_blocked", {x1, wp1}, a1)), "float32[2, 20, 5]{nCw16c}");
  x1.layout = Layout::blocked(16);
  EXPECT_EQ(str(infer1("conv2d_blocked", {x1, wp1}, a1)), "float32[2, 20, 5]{nCw16c}");
  EXPECT_EQ(infer_error("conv2d_blocked", {x1, wp}, a1),
            rule +
                "float32[2, 3, 9]{nCw16c}, float32[2, 1, 3, 3, 16, 16], algo 'blocked', "
                "out_channels 20");
  const int64_t b = isa_float_lanes(isa_from_env());  // the block conv_blocked_filter makes
  EXPECT_EQ(str(infer1("conv_blocked_filter", {f32({20, 3, 5})}, NoAttrs{})),
            "float32[" + std::to_string((20 + b - 1) / b) + ", 1, 1, 5, " + std::to_string(b) +
                ", " + std::to_string(b) + "]");
  EXPECT_EQ(infer_error("conv_blocked_filter", {f32({20, 3})}, NoAttrs{}),
            "conv_blocked_filter: expected a float32 weight [O, C, KH, KW] or [O, C, K] of known "
            "size, got float32[20, 3]");
}

}  // namespace
}  // namespace ember
