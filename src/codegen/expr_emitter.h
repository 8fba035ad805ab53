// Turns scalar IR expressions into C++ expressions, in scalar or in vector (ember_rt::vf) form.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ember/ir/task.h"

namespace ember::codegen {

// What a variable of the IR is called in the generated code.
struct NameScope {
  std::map<std::string, std::string> vars;  // IR var name -> C++ name
  std::string name(const std::string& var) const;
};

// The C++ type of values of `t` in arithmetic (float for float16 and bfloat16).
std::string compute_type(DType t);
// The C++ storage type of `t`.
std::string storage_type(DType t);
// A literal of v: hexadecimal, float (suffix f) when `single`, NaN and infinities as builtins.
std::string float_literal(double v, bool single);

class ExprEmitter {
 public:
  ExprEmitter(const ir::Task& task, const NameScope& names) : task_(task), names_(names) {}

  // Vector mode: the innermost loop variable (IR name) runs over ember_rt::vf::width lanes
  // starting at its current value; with `partial_count` non-empty, only that many lanes are
  // valid (loads and stores are masked).
  void set_vector(const std::string& lane_var, const std::string& partial_count = "") {
    lane_var_ = lane_var;
    partial_ = partial_count;
  }
  void set_scalar() { lane_var_.clear(), partial_.clear(); }
  // How Acc is spelled (an accumulator variable, or a loaded epilogue value).
  void set_acc(const std::string& acc) { acc_ = acc; }
  // What a row epilogue reads in Acc's place (StagePlan::acc), treated as Acc: Acc * s + t
  // is printed as one fma either way.
  void set_acc_value(const ir::Expr& acc) { acc_value_ = acc; }

  // What vector mode can print is decided by plan_vector (ember/codegen/kernel_plan.h).
  std::string emit(const ir::Expr& e) const;
  // Integer index arithmetic.
  std::string emit_index(const ir::Expr& e) const;
  // The flat offset of `indices` into buffer `b`, as its layout addresses it
  // (Layout::offset; row-major for a plain buffer).
  ir::Expr offset(int b, const std::vector<ir::Expr>& indices) const;
  // A statement storing `value` (already emitted) at `indices` of buffer `b`.
  std::string store(int b, const std::vector<ir::Expr>& indices, const std::string& value) const;

 private:
  std::string emit_const(const ir::Expr& e) const;
  std::string emit_load(const ir::Expr& e) const;
  // The offset text of a load whose indices read data, each such index range-checked.
  std::string checked_offset(int b, const std::vector<ir::Expr>& indices) const;
  std::string emit_unary(const ir::Expr& e) const;
  std::string emit_binary(const ir::Expr& e) const;
  std::string emit_cast(const ir::Expr& e) const;
  std::string emit_random(const ir::Expr& e) const;
  bool vector_mode() const { return !lane_var_.empty(); }
  // The number of lanes computed: all, or the partial count.
  std::string lane_limit() const { return partial_.empty() ? "ember_rt::vf::width" : partial_; }
  // Appends a lane range (is_lane_range) as LaneRange::ge calls to *chain.
  void range_chain(const ir::Expr& cond, std::string* chain) const;

  const ir::Task& task_;
  const NameScope& names_;
  std::string lane_var_, partial_, acc_ = "acc";
  ir::Expr acc_value_;
  std::string guard_;  // the LaneRange expression of the enclosing index condition, if any
};

}  // namespace ember::codegen
