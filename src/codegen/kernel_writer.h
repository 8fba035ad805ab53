// The kernel writer shared by the files of src/codegen that emit stages: kernel_emitter.cpp
// (the kernel, compute and matmul stages) and kernel_reduce.cpp (reductions).
#pragma once

#include <string>
#include <vector>

#include "ember/codegen/codegen.h"
#include "ember/codegen/kernel_plan.h"
#include "expr_emitter.h"
#include "writer.h"

namespace ember::codegen {

// A rough cost of computing e once, in simple operations (decides threading).
double expr_cost(const ir::Expr& e);
bool is_low_precision(DType t);
// The value to store, without the final narrowing to a low-precision output (the vector
// store narrows by itself).
ir::Expr strip_output_cast(const ir::Expr& v, DType out);
// The statement storing `value` at the stage's axes into its output, and its further stores
// (ir::Stage::stores): every value is computed before any is stored (a GEMM's epilogue
// rewrites the output its stores read too). `vector`: em is in vector form, and each store
// narrows to a low-precision buffer by itself.
std::string store_stage(const ir::Task& task, const ExprEmitter& em, const ir::Stage& s,
                        const ir::Expr& value, bool vector);

class KernelWriter {
 public:
  KernelWriter(const ir::Task& task, const std::vector<std::string>& symbols,
               const KernelConfig& config)
      : task_(task), symbols_(symbols), config_(config) {}

  // Prints the kernel as plan_kernel(task) plans it.
  std::string run(const std::string& fn_name);

 private:
  // "  // text" after a line, when the config asks for name comments; else nothing.
  std::string comment(const std::string& text) const {
    return config_.name_comments ? "  // " + text : "";
  }
  void declare_buffers();
  void unravel(const std::vector<ir::Expr>& axes, const Shape& shape, size_t count,
               const std::string& flat, NameScope& names);
  std::vector<std::string> extents(const Shape& shape, const std::string& prefix);
  void compute_stage(const StagePlan& p);
  void reduce_stage(const StagePlan& p);
  void reduce_outer_vector(const StagePlan& p, const std::vector<std::string>& ext);
  void reduce_outer_block(const ir::Stage& s, const NameScope& names, const std::string& v,
                          int unroll, const std::string& partial);
  void reduce_inner_vector(const ir::Stage& s, const NameScope& names, const std::string& acc_t);
  void reduce_scalar_body(const ir::Stage& s, NameScope names, const std::string& acc_t);
  void matmul_stage(const StagePlan& p);
  void call_stage(const StagePlan& p);
  void row_epilogue(const StagePlan& p);
  void channel_affine(const ChannelAffinePlan& a);
  void vector_loop(const ir::Task& task, const NameScope& names, const ir::Stage& s,
                   const ir::Expr& value, const std::string& lo, const std::string& hi,
                   bool vectorize, const ir::Expr& acc = {});
  void phase_loop(const StagePlan& p, const NameScope& names);

  const ir::Task& task_;
  const std::vector<std::string>& symbols_;
  const KernelConfig& config_;
  Writer w_;
  NameScope base_;
  int counter_ = 0;
};

}  // namespace ember::codegen
