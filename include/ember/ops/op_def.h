// OpDef: everything ember knows about one operator, defined in one place
// (docs/principles.md, principle 3): its name, its shape and dtype rule, and its compute
// definition.
//
// The compute definition depends on the operator's kind:
//   Elementwise, Injective : compute(args) gives the output value at args.idx, loading its
//                            inputs through args.load, so producers can be inlined
//                            (fused) into consumers by composing loads;
//   Reduce                 : reduce(args) describes the reduction of one output element;
//   Matmul                 : lowered by the fusion lowering itself (a Matmul stage);
//   Composite              : lower(...) gives a whole Task (several stages).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/ir/task.h"
#include "ember/ops/attrs.h"

namespace ember {

enum class OpKind : uint8_t { Elementwise, Injective, Reduce, Matmul, Composite };

using Loader = std::function<ir::Expr(int input, const std::vector<ir::Expr>& idx)>;

struct ComputeArgs {
  const std::vector<TensorType>& inputs;
  const TensorType& output;
  const OpAttrs& attrs;
  const std::vector<ir::Expr>& idx;  // the output element's index, one Expr per dim
  const Loader& load;
};

struct ReduceDef {
  ir::ReduceOp op = ir::ReduceOp::Sum;
  DType acc_dtype = DType::float32;
  std::vector<ir::Expr> rextents;
  // The value reduced at output index idx and reduction index ridx.
  std::function<ir::Expr(const std::vector<ir::Expr>& idx, const std::vector<ir::Expr>& ridx,
                         const Loader& load)>
      value;
  // The output value from the accumulator (mean divides; a cast); null means acc itself.
  std::function<ir::Expr(const ir::Expr& acc)> finalize;
};

using InferFn =
    std::function<std::vector<TensorType>(const std::vector<TensorType>&, const OpAttrs&)>;

struct OpDef {
  std::string name;   // "add": the key of the registry and the name in ember.ops
  std::string title;  // "Add": as printed in graphs
  OpKind kind = OpKind::Elementwise;
  int num_inputs = 1;  // -1: any number
  InferFn infer;       // validates the inputs (ember::Error) and gives the output types
  std::function<ir::Expr(const ComputeArgs&)> compute;
  std::function<ReduceDef(const std::vector<TensorType>& in, const TensorType& out,
                          const OpAttrs& attrs)>
      reduce;
  std::function<ir::Task(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                         const OpAttrs& attrs)>
      lower;
};

// The registry of operator definitions. Ops register themselves at static-init time
// through EMBER_REGISTER_OP in their family's file under src/ops/.
const OpDef& op_def(const std::string& name);
const OpDef* find_op_def(const std::string& name);
std::vector<std::string> op_names();
bool register_op_def(OpDef def);

}  // namespace ember

#define EMBER_OP_CONCAT2(a, b) a##b
#define EMBER_OP_CONCAT(a, b) EMBER_OP_CONCAT2(a, b)
// Registers the OpDef returned by the following block:
//   EMBER_REGISTER_OP { OpDef d; d.name = "relu"; ...; return d; }
#define EMBER_REGISTER_OP                                                         \
  static ::ember::OpDef EMBER_OP_CONCAT(ember_op_def_, __LINE__)();               \
  [[maybe_unused]] static const bool EMBER_OP_CONCAT(ember_op_reg_, __LINE__) =   \
      ::ember::register_op_def(EMBER_OP_CONCAT(ember_op_def_, __LINE__)());       \
  static ::ember::OpDef EMBER_OP_CONCAT(ember_op_def_, __LINE__)()
