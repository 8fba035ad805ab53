// A Task: the compute definition of one kernel.
//
// A task has buffers (its inputs, outputs and scratch memory, in that order in the kernel's
// argument list) and an ordered list of stages. Each stage writes one buffer:
//   Compute : out[axes] = value                       (value may load any earlier buffer)
//   Reduce  : out[axes] = epilogue(reduce_op over raxes of value)
//   Matmul  : out[..., m, n] = epilogue(sum_k a[..., m, k] * b[..., k, n]); b may instead
//             be a view whose rows start at offsets computed from k (Stage::b_row_offset)
//   Call    : routine(inputs..., outputs..., params..., scalars...), a templated routine of
//             the runtime library (ember_rt::lib: scans, sorts, scatters, the depthwise
//             convolution, bilinear resizing) that reads whole materialized buffers and
//             writes one or more (`out` is the first); a routine that takes an epilogue
//             computes out[axes] = epilogue(its value) row by row.
// In an epilogue, Acc stands for the reduced (matmul, routine's) value at the stage's axes.
// A stage of a fused group with several outputs also writes further buffers of its output's
// shape at the same index (Stage::stores): the intermediates a fused kernel stores too.
// A buffer's shape is logical (it may use the graph's symbols); its layout (ember/ir/layout.h)
// says where each element lies: plain (row-major, contiguous) unless the graph chose another.
// Stages index buffers logically; the code generator addresses them through the layout.
#pragma once

#include <string>
#include <vector>

#include "ember/ir/dtype.h"
#include "ember/ir/expr.h"
#include "ember/ir/layout.h"
#include "ember/ir/shape.h"

namespace ember::ir {

enum class BufferRole : uint8_t { Input, Output, Scratch };

struct Buffer {
  std::string name;
  DType dtype;
  Shape shape;
  BufferRole role;
  Layout layout = {};
};

enum class StageKind : uint8_t { Compute, Reduce, Matmul, Call };
enum class ReduceOp : uint8_t { Sum, Max, Min, Prod, ArgMax, ArgMin };
const char* reduce_op_name(ReduceOp op);

struct Stage {
  StageKind kind = StageKind::Compute;
  int out = -1;            // the buffer this stage writes
  std::vector<Expr> axes;  // one Var per dimension of the output buffer
  Expr value;              // Compute: the output value; Reduce: the value reduced
  // Reduce:
  ReduceOp reduce_op = ReduceOp::Sum;
  std::vector<Expr> raxes;           // reduction Vars
  std::vector<Expr> rextents;        // their extents
  DType acc_dtype = DType::float32;  // the accumulator's type (the input's for ArgMax/Min)
  // Matmul: a[..., M, K] and b[..., K, N] with batch dims broadcast to the output's; with
  // a_transposed, a is [..., K, M] and with b_transposed, b is [..., N, K] (a Linear layer's
  // weight), each read transposed in place. matmul_depth gives K.
  int a = -1, b = -1;
  bool a_transposed = false;
  bool b_transposed = false;
  // Matmul, optional: b read as a view instead (an implicit GEMM, a convolution reading its
  // padded input in place): b's leading dimensions are the output's batch dimensions (or
  // none), and row k of a batch's B starts at element b_row_offset (an integer expression of
  // the Var b_row_var, standing for k) of that batch's part of b, its N columns b_col_stride
  // apart. Every element of the view must lie inside that part.
  Expr b_row_var, b_row_offset;
  int64_t b_col_stride = 1;
  // Reduce, Matmul and Call: the output value from Acc and the axes; undefined means Acc
  // itself. (A Call stage with one needs axes over its output.)
  Expr epilogue;
  // Further outputs written by the same loop (a fused group's intermediates that are also
  // read outside it: activations saved for the backward): buffer[axes] = value, the buffer of
  // the output's declared shape, the value over Acc and the axes as the epilogue is (a
  // Compute stage's over the axes). Every value is computed before any is stored.
  struct Store {
    int buffer = -1;
    Expr value;
  };
  std::vector<Store> stores;
  // Call: ember_rt::lib::<routine>(ctx, inputs..., outputs..., params..., scalars...).
  // params are integer size expressions (they may use the graph's symbols); scalars are
  // passed as double. outputs[0] == out.
  std::string routine;
  std::vector<int> call_inputs, call_outputs;
  std::vector<Expr> params;
  std::vector<double> scalars;
  // Call: the routine addresses its buffers' memory in their layouts itself (the direct
  // convolution on the channel-blocked layout); otherwise every buffer it reads or writes
  // must be plain.
  bool call_takes_layouts = false;
  // Call: the routine can apply an epilogue of the form clamp(fma(Acc, scale, shift)) per
  // output channel to its accumulators, in registers (ember_rt::ChannelAffine); codegen
  // passes one instead of the per-segment epilogue where the epilogue has that form
  // (codegen::match_channel_affine). The routine's output is blocked, channels on axis 1.
  bool call_channel_affine = false;
  // Call: the routine's floating-point operations, a size expression set by the operator
  // that calls it (the profile's count, codegen/cost.h; a comparison of floating-point
  // values counts as one, as a max does; the epilogue's are counted apart). Undefined: the
  // work depends on the data (an iterative eigensolver), and the count is unknown.
  Expr flops;
};

struct Task {
  std::string name;
  std::vector<Buffer> buffers;
  std::vector<Stage> stages;

  int add_buffer(const std::string& name, DType dtype, const Shape& shape, BufferRole role,
                 Layout layout = {});
  std::vector<int> buffers_with(BufferRole role) const;
  // Text form for tests and dumps.
  std::string str() const;
};

// K of a Matmul stage: the last dimension of its a operand, or the second to last when a is
// read transposed.
const Expr& matmul_depth(const Task& task, const Stage& s);

}  // namespace ember::ir
