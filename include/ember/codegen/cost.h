// What a kernel does, counted from its task: floating-point operations and bytes moved.
//
// The profile (CompiledGraph::profile) divides these by a launch's time to give GFLOP/s and
// GB/s, and compares them with the machine's peaks (ember/tune/peak.h). The counts are
// expressions of the graph's symbols, evaluated with each run's sizes.
//
//   flops   Matmul: 2 * batch * M * N * K, plus the epilogue's operations per element;
//           Reduce: elements * reduction extent * (operations of the reduced value + 1),
//           plus the epilogue's; Compute: elements * operations of the value. An operation
//           is a unary, binary or select node computing on floating-point values (an exp
//           counts as one, index arithmetic as none). Call: the count the operator states
//           for its routine (ir::Stage::flops: the fused attention's two products, the
//           depthwise convolution's 2 * N * C * OH * OW * KH * KW, the Winograd transforms,
//           a sort's comparisons, ...), plus the epilogue's operations per element; a
//           routine whose work depends on the data leaves the task's count unknown (an
//           undefined Expr).
//   bytes   each input buffer once, at most at its size (a gather that reads a few rows of a
//           table counts the elements it loads), plus each output buffer at its size; scratch
//           buffers are not counted (they stay in cache or are written and read once).
#pragma once

#include "ember/ir/expr.h"
#include "ember/ir/task.h"

namespace ember::codegen {

struct TaskCost {
  ir::Expr flops;  // undefined: the task has a stage whose work it cannot state
  ir::Expr bytes;
};

TaskCost task_cost(const ir::Task& task);

// Floating-point operations of one evaluation of `e` (loads and index arithmetic are free).
int64_t arithmetic_ops(const ir::Expr& e);

}  // namespace ember::codegen
