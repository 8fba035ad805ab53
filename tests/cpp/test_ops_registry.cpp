// The operator registry: every scalar-table row registered, names, kinds, titles, traits, and
// the messages of unknown and duplicate operators.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "ember/ops/op_def.h"
#include "ember/ops/ops.h"
#include "ember/support/error.h"
#include "error_text.h"

namespace ember {
namespace {

// Every row of the scalar operator tables is a registered elementwise operator.
TEST(OpsRegistry, RegistersEveryScalarOperator) {
  for (auto* row = ir::unary_ops_begin(); row != ir::unary_ops_end(); ++row) {
    const OpDef* def = find_op_def(row->fn);
    ASSERT_NE(def, nullptr) << row->fn;
    EXPECT_EQ(def->num_inputs, 1) << row->fn;
    EXPECT_EQ(def->title, row->title) << row->fn;
  }
  for (auto* row = ir::binary_ops_begin(); row != ir::binary_ops_end(); ++row) {
    const OpDef* def = find_op_def(row->fn);
    ASSERT_NE(def, nullptr) << row->fn;
    EXPECT_EQ(def->num_inputs, 2) << row->fn;
  }
}

TEST(OpsRegistry, ListsEveryOperator) {
  const std::vector<std::string> names = op_names();
  for (const char* op :
       {"neg",        "abs",    "exp",     "log",         "sqrt",       "rsqrt",     "sigmoid",
        "tanh",       "relu",   "gelu",    "gelu_tanh",   "silu",       "erf",       "logical_not",
        "reciprocal", "floor",  "ceil",    "round",       "add",        "sub",       "mul",
        "div",        "pow",    "maximum", "minimum",     "equal",      "less",      "greater",
        "less_equal", "not_equal", "greater_equal",      "logical_and", "logical_or", "where",     "cast",
        "sum",        "mean",   "max",     "min",         "prod",       "argmax",    "argmin",
        "softmax",    "matmul", "reshape", "permute",     "squeeze",    "unsqueeze", "concat",
        "slice",      "expand"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), op), names.end()) << op;
    ASSERT_NE(find_op_def(op), nullptr) << op;
    EXPECT_EQ(find_op_def(op)->name, op);
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(OpsRegistry, KindsAndTitles) {
  EXPECT_EQ(op_def("add").kind, OpKind::Elementwise);
  EXPECT_EQ(op_def("add").title, "Add");
  EXPECT_EQ(op_def("reshape").kind, OpKind::Injective);
  EXPECT_EQ(op_def("sum").kind, OpKind::Reduce);
  EXPECT_EQ(op_def("matmul").kind, OpKind::Matmul);
  EXPECT_EQ(op_def("softmax").kind, OpKind::Composite);
  EXPECT_EQ(op_def("concat").num_inputs, -1);
  EXPECT_EQ(op_def("where").num_inputs, 3);
  EXPECT_TRUE(op_def("matmul").reduce != nullptr);
  EXPECT_TRUE(op_def("softmax").lower != nullptr);
}

TEST(OpsRegistry, TraitsFollowTheKindUnlessDeclared) {
  const OpTraits add = op_def("add").traits();
  EXPECT_FALSE(add.anchor);
  EXPECT_TRUE(add.takes_prologue);
  EXPECT_TRUE(add.fusable_epilogue);
  EXPECT_FALSE(add.is_view);
  const OpTraits sum = op_def("sum").traits();
  EXPECT_TRUE(sum.anchor);
  EXPECT_TRUE(sum.takes_prologue);
  EXPECT_FALSE(sum.fusable_epilogue);
  EXPECT_EQ(sum.epilogue, EpilogueRule::Any);
  EXPECT_TRUE(op_def("matmul").traits().anchor);
  EXPECT_FALSE(op_def("matmul").traits().takes_prologue);
  EXPECT_EQ(op_def("matmul").traits().epilogue, EpilogueRule::Gemm);
  EXPECT_EQ(op_def("softmax").traits().epilogue, EpilogueRule::Float32);
  EXPECT_EQ(op_def("conv2d").traits().epilogue, EpilogueRule::Float32);
  // Injective operators are inlined; only those that reinterpret a shape are views.
  for (const char* op : {"reshape", "squeeze", "unsqueeze"}) {
    EXPECT_TRUE(op_def(op).traits().is_view) << op;
    EXPECT_EQ(op_def(op).kind, OpKind::Injective) << op;
  }
  for (const char* op : {"permute", "expand", "slice", "concat", "exp", "sum"})
    EXPECT_FALSE(op_def(op).traits().is_view) << op;
  EXPECT_FALSE(op_def("permute").traits().anchor);
  EXPECT_FALSE(op_def("permute").traits().fusable_epilogue);
  EXPECT_TRUE(op_def("permute").traits().takes_prologue);
}

TEST(OpsRegistry, UnknownOperatorListsTheKnownOnes) {
  EXPECT_EQ(find_op_def("frobnicate"), nullptr);
  const std::string msg = error_of([] { op_def("frobnicate"); });
  EXPECT_EQ(msg.rfind("unknown operator 'frobnicate'; the known operators are: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("are: abs, "), std::string::npos) << msg;  // sorted
  EXPECT_NE(msg.find(", add, "), std::string::npos) << msg;
  EXPECT_NE(msg.find(", matmul, "), std::string::npos) << msg;
}

TEST(OpsRegistry, DuplicateRegistrationIsAnInternalError) {
  OpDef d = op_def("relu");
  EXPECT_THROW(register_op_def(d), InternalError);
}

}  // namespace
}  // namespace ember
