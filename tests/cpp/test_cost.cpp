// codegen::task_cost: floating-point operations and bytes of a task, against hand counts.
#include <gtest/gtest.h>

#include "ember/codegen/cost.h"

using namespace ember;
using namespace ember::ir;
using ember::codegen::task_cost;

namespace {

int64_t at(const Expr& e, int64_t n) { return eval_int(e, {{"n", n}}); }

}  // namespace

// out[b, m, n] = sum_k a[b, m, k] * w[k, n] + bias[n], batch 4, M 64, K 32, N 16.
TEST(TaskCost, MatmulWithBiasEpilogue) {
  Task t;
  int a = t.add_buffer("a", DType::float32, {Expr(4), Expr(64), Expr(32)}, BufferRole::Input);
  int w = t.add_buffer("w", DType::float32, {Expr(32), Expr(16)}, BufferRole::Input);
  int bias = t.add_buffer("bias", DType::float32, {Expr(16)}, BufferRole::Input);
  int o = t.add_buffer("out", DType::float32, {Expr(4), Expr(64), Expr(16)}, BufferRole::Output);
  Stage s;
  s.kind = StageKind::Matmul;
  s.out = o;
  s.a = a;
  s.b = w;
  s.axes = {var("i0"), var("i1"), var("i2")};
  s.epilogue = acc(DType::float32) + load(bias, DType::float32, {var("i2")});
  t.stages.push_back(s);
  codegen::TaskCost c = task_cost(t);
  ASSERT_TRUE(c.flops.defined());
  EXPECT_EQ(at(c.flops, 0), 2 * 4 * 64 * 16 * 32 + 4 * 64 * 16);  // GEMM + one add each
  EXPECT_EQ(at(c.bytes, 0), (4 * 64 * 32 + 32 * 16 + 16 + 4 * 64 * 16) * 4);
}

// out[i] = sum_r x[i, r] * x[i, r] over x [n, 37].
TEST(TaskCost, ReduceOfSquares) {
  Task t;
  int x = t.add_buffer("x", DType::float32, {var("n"), Expr(37)}, BufferRole::Input);
  int o = t.add_buffer("out", DType::float32, {var("n")}, BufferRole::Output);
  Stage s;
  s.kind = StageKind::Reduce;
  s.out = o;
  s.axes = {var("i")};
  s.raxes = {var("r")};
  s.rextents = {Expr(37)};
  Expr xi = load(x, DType::float32, {var("i"), var("r")});
  s.value = xi * xi;
  t.stages.push_back(s);
  codegen::TaskCost c = task_cost(t);
  ASSERT_TRUE(c.flops.defined());
  EXPECT_EQ(at(c.flops, 10), 10 * 37 * 2);         // a multiply and an add per element
  EXPECT_EQ(at(c.bytes, 10), (10 * 37 + 10) * 4);  // x once (loaded twice), out
}

// out[i, j] = x[i, j] * 2 + b[j] + c[i]: three operations per element; b and c broadcast.
TEST(TaskCost, ElementwiseWithBroadcasts) {
  Task t;
  int x = t.add_buffer("x", DType::float32, {var("n"), Expr(37)}, BufferRole::Input);
  int b = t.add_buffer("b", DType::float32, {Expr(37)}, BufferRole::Input);
  int cb = t.add_buffer("c", DType::float32, {var("n")}, BufferRole::Input);
  int o = t.add_buffer("y", DType::float32, {var("n"), Expr(37)}, BufferRole::Output);
  t.add_buffer("tmp", DType::float32, {var("n"), Expr(37)}, BufferRole::Scratch);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = load(x, DType::float32, s.axes) * const_float(2.0) +
            load(b, DType::float32, {var("j")}) + load(cb, DType::float32, {var("i")});
  t.stages.push_back(s);
  codegen::TaskCost c = task_cost(t);
  ASSERT_TRUE(c.flops.defined());
  EXPECT_EQ(at(c.flops, 10), 10 * 37 * 3);
  EXPECT_EQ(at(c.bytes, 10), (10 * 37 + 37 + 10 + 10 * 37) * 4);  // scratch not counted
}

// out[i, j] = table[idx[i], j]: the rows gathered, not the whole table; no arithmetic.
TEST(TaskCost, GatherCountsTheRowsItReads) {
  Task t;
  int table = t.add_buffer("table", DType::float32, {Expr(1000), Expr(8)}, BufferRole::Input);
  int idx = t.add_buffer("idx", DType::int64, {var("n")}, BufferRole::Input);
  int o = t.add_buffer("out", DType::float32, {var("n"), Expr(8)}, BufferRole::Output);
  Stage s;
  s.out = o;
  s.axes = {var("i"), var("j")};
  s.value = load(table, DType::float32, {load(idx, DType::int64, {var("i")}), var("j")});
  t.stages.push_back(s);
  codegen::TaskCost c = task_cost(t);
  EXPECT_EQ(at(c.flops, 5), 0);
  EXPECT_EQ(at(c.bytes, 5), 5 * 8 * 4 + 5 * 8 + 5 * 8 * 4);
  EXPECT_EQ(at(c.bytes, 10000), 1000 * 8 * 4 + 10000 * 8 + 10000 * 8 * 4);  // at most the table
}

// A routine whose operator states no count (the work depends on the data) leaves the task's
// count unknown; its bytes are still counted.
TEST(TaskCost, CallWithoutAStatedCountHasNoFlopCount) {
  Task t;
  int x = t.add_buffer("x", DType::float32, {var("n")}, BufferRole::Input);
  int v = t.add_buffer("values", DType::float32, {var("n")}, BufferRole::Output);
  int i = t.add_buffer("indices", DType::int64, {var("n")}, BufferRole::Output);
  Stage s;
  s.kind = StageKind::Call;
  s.out = v;
  s.routine = "sort_ascending";
  s.call_inputs = {x};
  s.call_outputs = {v, i};
  s.params = {Expr(1), var("n"), Expr(1)};
  t.stages.push_back(s);
  codegen::TaskCost c = task_cost(t);
  EXPECT_FALSE(c.flops.defined());
  EXPECT_EQ(at(c.bytes, 100), 100 * 4 + 100 * 4 + 100 * 8);
}

// A Call stage counts what its operator states (ir::Stage::flops) plus its epilogue's
// operations per element, and the buffers the epilogue loads.
TEST(TaskCost, CallCountsItsStatedFlopsAndEpilogue) {
  Task t;
  int x = t.add_buffer("x", DType::float32, {var("n"), Expr(8)}, BufferRole::Input);
  int r = t.add_buffer("r", DType::float32, {var("n"), Expr(8)}, BufferRole::Input);
  int y = t.add_buffer("y", DType::float32, {var("n"), Expr(8)}, BufferRole::Output);
  Stage s;
  s.kind = StageKind::Call;
  s.out = y;
  s.routine = "scan_sum";
  s.call_inputs = {x};
  s.call_outputs = {y};
  s.axes = {var("i"), var("j")};
  s.flops = var("n") * Expr(8);
  s.epilogue = acc(DType::float32) + load(r, DType::float32, {var("i"), var("j")});
  t.stages.push_back(s);
  codegen::TaskCost c = task_cost(t);
  ASSERT_TRUE(c.flops.defined());
  EXPECT_EQ(at(c.flops, 10), 10 * 8 + 10 * 8);
  EXPECT_EQ(at(c.bytes, 10), 3 * 10 * 8 * 4);
}
