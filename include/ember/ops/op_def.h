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
//
// Passes never test an operator's name: they ask its traits (OpDef::traits()), and compare
// operators by identity (the address of the registered OpDef).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ember/ir/task.h"
#include "ember/ops/attrs.h"
#include "ember/runtime/compiled_graph.h"

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
  // Instead of finalize, for a value that also depends on the output index idx (max pooling's
  // indices: the input position of the window element the arg-reduction chose).
  std::function<ir::Expr(const ir::Expr& acc, const std::vector<ir::Expr>& idx)> finalize_at;
};

// Which elementwise consumers an anchor takes as its epilogue (docs/architecture.md, fusion).
// Every rule also requires the consumer's output to have the anchor's output shape.
enum class EpilogueRule : uint8_t {
  None,     // none
  Any,      // any: a reduction applies it to its finalized accumulator
  Float32,  // float32 in and out, and the anchor has one output: its last stage applies it
  Gemm,     // a float32 product of two float32 matrices (rank >= 2): the GEMM's row epilogue
};

// How an operator treats layouts; OpDef::infer_types applies the rule, so a graph that breaks
// it is an ember::Error where it is traced and where a pass's result is verified.
enum class LayoutRule : uint8_t {
  Plain,  // reads plain inputs only (an input of another layout is an error); plain outputs
  // Elementwise: its inputs may have one non-plain layout (each such input of the output's
  // rank, a plain one broadcast as usual, e.g. a per-channel bias [C, 1, 1]); the outputs
  // take it. It indexes every input logically, so the layout changes only the addressing.
  // The pools and the reductions that keep dimension 1 declare it too (their infer refuses
  // the layouts they cannot keep).
  Keep,
  Own,  // any inputs; infer gives the output layouts (to_layout, a fused group)
};

// What passes ask about an operator. Each kind has defaults (default_traits); an operator
// that differs from its kind declares its own (OpDef::declared_traits).
struct OpTraits {
  // Starts a fusion group and is its one anchor; nodes that are not anchors are inlined
  // into their consumers through `compute`.
  bool anchor = false;
  // Its inputs' producers may be inlined into its loads (a reduction's prologue). Matmul
  // and composite operators read materialized buffers.
  bool takes_prologue = false;
  // May join an anchor's group as its epilogue (elementwise: it reads the anchor's output
  // at the index it writes).
  bool fusable_epilogue = false;
  // As an anchor, which epilogues it takes.
  EpilogueRule epilogue = EpilogueRule::None;
  // Only reinterprets the shape of one contiguous input: on concrete inputs it returns a
  // view of the same memory instead of running a kernel.
  bool is_view = false;
  // Matmul: its first operand is stored [..., K, M] and the product reads it transposed in
  // place: a[..., m, k] is a_stored[..., k, m] (a weight gradient, x^T dy).
  bool a_transposed = false;
  // Matmul: its second operand is stored [..., N, K] (as a Linear layer stores its weight)
  // and the product reads it transposed in place: b[..., k, n] is b_stored[..., n, k].
  bool b_transposed = false;
  // An input (by position) whose memory its one output may take where that input dies at
  // it (KernelLaunch::in_place): its kernel reads each element of that input before it
  // writes the output's same element, or copies the input first, and works when both are
  // one buffer. -1: none.
  int in_place_input = -1;
  // Which layouts (ember/ir/layout.h) its inputs may have, and its outputs' (LayoutRule).
  LayoutRule layouts = LayoutRule::Plain;
  // Not declared yet, and no pass asks: its gradient. It belongs here when a pass needs it.
};

// The traits of an operator of this kind that declares none:
//   Elementwise: takes a prologue, may be an epilogue, keeps its inputs' layout;
//   Injective:   takes a prologue;
//   Reduce:      anchor, takes a prologue, any epilogue;
//   Matmul:      anchor, GEMM epilogue;
//   Composite:   anchor, float32 epilogue.
OpTraits default_traits(OpKind kind);

using InferFn =
    std::function<std::vector<TensorType>(const std::vector<TensorType>&, const OpAttrs&)>;

struct OpDef;

// An operator with several algorithms (a convolution: a GEMM, im2col, Winograd, ...) names
// the one a node uses in its attributes; the choose_algorithms pass asks the operator for
// the algorithms that can run the node and rewrites it to one, so the choice is visible in
// the optimized graph.
struct AlgorithmChoice {
  std::string name;           // the algorithm, as the attributes name it ("implicit")
  const OpDef* op = nullptr;  // the operator the node becomes: its own, or another
  OpAttrs attrs;              // its attributes, naming the algorithm
  // Per input: an operator applied to it first (with no attributes), e.g. a filter
  // transform that constant folding then runs once at build time; null: the input as is.
  std::vector<const OpDef*> prepare;
  // Per input: the layout it is converted to first (to_layout; plain: as it is). An output
  // the operator gives in another layout is converted back to plain for the node's readers.
  std::vector<Layout> layouts;
  // Per input: the operator reads it plain as well, and does where it is an input of the
  // graph (plain for certain, so converting it would only add a pass over it): a network's
  // first convolution on its 3-channel image.
  std::vector<bool> reads_plain;
};

// The algorithms that can run a node with these inputs (`constant`: which of them are
// constants of the graph) and attributes, the rules' choice first (what the node becomes
// unless tuning measures them); empty when the attributes already name one.
using ChooseAlgorithmFn = std::function<std::vector<AlgorithmChoice>(
    const std::vector<TensorType>& in, const OpAttrs& attrs, const std::vector<bool>& constant)>;

// What a node becomes when some of its inputs are constants that combine into fewer values
// (OpDef::fold_parameters): batch norm's running statistics, weight and bias become one
// scale and one shift per channel.
struct ParameterFold {
  const OpDef* op = nullptr;  // the operator the node becomes (same output types)
  OpAttrs attrs;
  // Per input of the new node: the index of an input of the old node, or -1 for the new
  // constant at the same position of `constants`.
  std::vector<int> from;
  std::vector<Tensor> constants;
  std::vector<std::string> names;  // per new constant: what it is ("scale"), for its name
};

// Given a node's input types, its constant inputs (an undefined Tensor where an input is not
// a constant) and its attributes: the cheaper form, or nothing to keep the node as it is.
using FoldParametersFn = std::function<std::optional<ParameterFold>(
    const std::vector<TensorType>& in, const std::vector<Tensor>& constants, const OpAttrs& attrs)>;

struct OpDef {
  std::string name;   // "add": the key of the registry and the name in ember.ops
  std::string title;  // "Add": as printed in graphs
  OpKind kind = OpKind::Elementwise;
  // Set only where the operator differs from its kind's default_traits.
  std::optional<OpTraits> declared_traits;
  int num_inputs = 1;  // -1: any number
  InferFn infer;       // validates the inputs (ember::Error) and gives the output types
  std::function<ir::Expr(const ComputeArgs&)> compute;
  std::function<ReduceDef(const std::vector<TensorType>& in, const TensorType& out,
                          const OpAttrs& attrs)>
      reduce;
  std::function<ir::Task(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                         const OpAttrs& attrs)>
      lower;
  // Set by operators with several algorithms (AlgorithmChoice).
  ChooseAlgorithmFn choose_algorithm;
  // Set by an operator that prepares a constant input for the kernels that read it, in a
  // way a saved model can repeat at load (ember::Preparation: the Winograd filter
  // transform). Constant folding leaves such a node on a constant to the build, which
  // records the result as a prepared constant of its input (ExecPlan::prepared), so that
  // a saved model stores whichever form is smaller.
  std::optional<Preparation> constant_preparation;
  // Set by an operator whose parameter inputs, when constants, fold into fewer values that
  // its kernels then read instead of recomputing them for every element (ParameterFold).
  // Constant folding asks it, so the graph shows the folded form.
  FoldParametersFn fold_parameters;

  // What passes ask about this operator: its declared traits, else its kind's defaults.
  OpTraits traits() const { return declared_traits.value_or(default_traits(kind)); }
  // infer with the layout rule of its traits applied: an input layout the operator does not
  // take is an ember::Error, and the outputs get their layouts. Everything that infers an
  // operator's output types calls this, not infer.
  std::vector<TensorType> infer_types(const std::vector<TensorType>& in,
                                      const OpAttrs& attrs) const;
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
#define EMBER_REGISTER_OP                                                       \
  static ::ember::OpDef EMBER_OP_CONCAT(ember_op_def_, __LINE__)();             \
  [[maybe_unused]] static const bool EMBER_OP_CONCAT(ember_op_reg_, __LINE__) = \
      ::ember::register_op_def(EMBER_OP_CONCAT(ember_op_def_, __LINE__)());     \
  static ::ember::OpDef EMBER_OP_CONCAT(ember_op_def_, __LINE__)()
