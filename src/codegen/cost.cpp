// Floating-point operations and bytes moved by a task (ember/codegen/cost.h).
#include "ember/codegen/cost.h"

#include <map>

#include "ember/ir/shape.h"

namespace ember::codegen {

namespace {

using ir::Expr;
using ir::ExprKind;

// How many times each buffer is loaded by one evaluation of `e` (indices included: an
// embedding's index buffer is loaded inside the table's index).
void count_loads(const Expr& e, std::map<int, int64_t>* loads) {
  if (!e.defined()) return;
  if (e.kind() == ExprKind::Load) ++(*loads)[e->buffer];
  for (const Expr& a : e->args) count_loads(a, loads);
}

}  // namespace

int64_t arithmetic_ops(const Expr& e) {
  if (!e.defined()) return 0;
  switch (e.kind()) {
    case ExprKind::Const:
    case ExprKind::Var:
    case ExprKind::Acc:
    case ExprKind::Load:  // its indices are address arithmetic
      return 0;
    case ExprKind::Cast: return arithmetic_ops(e->args[0]);
    case ExprKind::Random: return 1;  // integer rounds, and one conversion to float
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Select: {
      int64_t n = 0;
      bool floating = is_float(e.dtype());
      for (const Expr& a : e->args) {
        n += arithmetic_ops(a);
        floating = floating || (e.kind() != ExprKind::Select && is_float(a.dtype()));
      }
      return n + (floating ? 1 : 0);
    }
  }
  return 0;
}

TaskCost task_cost(const ir::Task& task) {
  Expr flops = Expr(0);
  bool flops_known = true;
  // Elements loaded per input buffer; a buffer read whole (by the GEMM or a routine) is
  // marked in `whole`.
  std::map<int, Expr> loaded;
  std::map<int, bool> whole;
  auto add_loads = [&](const Expr& e, const Expr& times) {
    std::map<int, int64_t> counts;
    count_loads(e, &counts);
    for (const auto& [b, n] : counts) {
      auto it = loaded.find(b);
      Expr add = times * Expr(n);
      if (it == loaded.end()) {
        loaded.emplace(b, add);
      } else {
        it->second = it->second + add;
      }
    }
  };
  for (const ir::Stage& s : task.stages) {
    const Expr elements = shape_numel_expr(task.buffers[s.out].shape);
    // A fused group's further stores: their values are parts of the stage's value (the
    // generated code computes them once), so only their loads count.
    for (const ir::Stage::Store& st : s.stores) add_loads(st.value, elements);
    switch (s.kind) {
      case ir::StageKind::Compute:
        flops = flops + elements * Expr(arithmetic_ops(s.value));
        add_loads(s.value, elements);
        break;
      case ir::StageKind::Reduce: {
        Expr extent = Expr(1);
        for (const Expr& r : s.rextents) extent = extent * r;
        flops = flops + elements * extent * Expr(arithmetic_ops(s.value) + 1) +
                elements * Expr(arithmetic_ops(s.epilogue));
        add_loads(s.value, elements * extent);
        add_loads(s.epilogue, elements);
        break;
      }
      case ir::StageKind::Matmul: {
        flops = flops + Expr(2) * elements * ir::matmul_depth(task, s) +
                elements * Expr(arithmetic_ops(s.epilogue));
        whole[s.a] = whole[s.b] = true;
        add_loads(s.epilogue, elements);
        break;
      }
      case ir::StageKind::Call:
        if (s.flops.defined()) {
          flops = flops + s.flops + elements * Expr(arithmetic_ops(s.epilogue));
        } else {
          flops_known = false;
        }
        add_loads(s.epilogue, elements);
        for (int b : s.call_inputs) whole[b] = true;
        break;
    }
  }
  Expr bytes = Expr(0);
  for (size_t b = 0; b < task.buffers.size(); ++b) {
    const ir::Buffer& buf = task.buffers[b];
    const Expr size = buf.layout.physical_numel(buf.shape);  // padding lanes included
    const Expr elem = Expr(static_cast<int64_t>(dtype_size(buf.dtype)));
    const int i = static_cast<int>(b);
    if (buf.role == ir::BufferRole::Output) {
      bytes = bytes + size * elem;
    } else if (buf.role == ir::BufferRole::Input) {
      if (whole.count(i)) {
        bytes = bytes + size * elem;
      } else if (auto it = loaded.find(i); it != loaded.end()) {
        bytes = bytes + ir::min(size, it->second) * elem;
      }
    }
  }
  TaskCost c;
  if (flops_known) c.flops = flops;
  c.bytes = bytes;
  return c;
}

}  // namespace ember::codegen
