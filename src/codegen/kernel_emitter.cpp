// Task -> one C++ kernel function: loop nests for Compute, Reduce and Matmul stages, and
// calls of library routines for Call stages.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "ember/codegen/codegen.h"
#include "ember/support/error.h"
#include "expr_emitter.h"
#include "gemm_config.h"
#include "kernel_writer.h"
#include "physical.h"
#include "row_split.h"
#include "writer.h"

namespace ember::codegen {

using ir::Expr;
using ir::ExprKind;
using ir::ReduceOp;
using ir::Stage;
using ir::Task;

// The cost of one node, its operands not counted: the scalar operator tables say what an
// operator costs; anything else costs 1.
double op_cost(const Expr& x) {
  auto weight = [](ir::OpCost c) {
    switch (c) {
      case ir::OpCost::Cheap: return 1.0;
      case ir::OpCost::Math: return 10.0;
      case ir::OpCost::Lanewise: return 40.0;
    }
    return 1.0;
  };
  if (x.kind() == ExprKind::Unary) return weight(ir::info(static_cast<ir::UnaryOp>(x->op)).cost);
  if (x.kind() == ExprKind::Binary) return weight(ir::info(static_cast<ir::BinaryOp>(x->op)).cost);
  if (x.kind() == ExprKind::Random) return weight(ir::OpCost::Math);  // ten integer rounds
  return 1.0;
}

double expr_cost(const Expr& e) {
  double c = 0;
  ir::visit(e, [&](const Expr& x) { c += op_cost(x); });
  return c;
}

bool is_low_precision(DType t) { return t == DType::float16 || t == DType::bfloat16; }

Expr strip_output_cast(const Expr& v, DType out) {
  if (is_low_precision(out) && v.kind() == ExprKind::Cast && v.dtype() == out &&
      v->args[0].dtype() == DType::float32)
    return v->args[0];
  return v;
}

std::string store_stage(const Task& task, const ExprEmitter& em, const Stage& s, const Expr& value,
                        bool vector) {
  if (s.stores.empty()) return em.store(s.out, s.axes, em.emit(value));
  std::string text = "{ const auto w0 = " + em.emit(value) + ";";
  for (size_t k = 0; k < s.stores.size(); ++k) {
    const Stage::Store& st = s.stores[k];
    Expr v = vector ? strip_output_cast(st.value, task.buffers[st.buffer].dtype) : st.value;
    text += " const auto w" + std::to_string(k + 1) + " = " + em.emit(v) + ";";
  }
  text += " " + em.store(s.out, s.axes, "w0");
  for (size_t k = 0; k < s.stores.size(); ++k)
    text += " " + em.store(s.stores[k].buffer, s.axes, "w" + std::to_string(k + 1));
  return text + " }";
}

std::string KernelWriter::run(const std::string& fn_name) {
  for (const auto& b : task_.buffers) (void)b;
  w_.open("extern \"C\" void " + fn_name +
          "(void* const* args, const int64_t* syms, const ember_rt::LaunchContext* ctx) {");
  w_.line("(void)args; (void)syms; (void)ctx;");
  for (size_t i = 0; i < symbols_.size(); ++i) {
    std::string n = "s" + std::to_string(i);
    base_.vars[symbols_[i]] = n;
    w_.line("[[maybe_unused]] const int64_t " + n + " = syms[" + std::to_string(i) + "];" +
            comment(symbols_[i]));
  }
  declare_buffers();
  const KernelPlan plan = plan_kernel(task_);
  for (const StagePlan& p : plan.stages) {
    const Stage& s = task_.stages[p.index];
    if (config_.name_comments)
      w_.line("// b" + std::to_string(s.out) + " (" + task_.buffers[s.out].name + ")");
    switch (s.kind) {
      case ir::StageKind::Compute: compute_stage(p); break;
      case ir::StageKind::Reduce: reduce_stage(p); break;
      case ir::StageKind::Matmul: matmul_stage(p); break;
      case ir::StageKind::Call: call_stage(p); break;
    }
  }
  w_.close("}");
  return w_.str();
}

void KernelWriter::declare_buffers() {
  bool seen_out = false;
  for (size_t i = 0; i < task_.buffers.size(); ++i) {
    const auto& b = task_.buffers[i];
    bool input = b.role == ir::BufferRole::Input;
    EMBER_ASSERT(!(input && seen_out), "task " << task_.name << ": inputs must come first");
    seen_out |= !input;
    std::string T = (input ? "const " : "") + storage_type(b.dtype);
    w_.line("[[maybe_unused]] " + T + "* __restrict b" + std::to_string(i) + " = static_cast<" + T +
            "*>(args[" + std::to_string(i) + "]);" +
            comment(b.name + " " + dtype_name(b.dtype) + shape_str(b.shape)));
  }
}

std::vector<std::string> KernelWriter::extents(const Shape& shape, const std::string& prefix) {
  ExprEmitter em(task_, base_);
  std::vector<std::string> names;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string n = prefix + std::to_string(d);
    w_.line("const int64_t " + n + " = " + em.emit_index(shape[d]) + ";");
    names.push_back(n);
  }
  return names;
}

// Declares the first `count` axes from a flat row-major index over shape[0..count).
void KernelWriter::unravel(const std::vector<Expr>& axes, const Shape& shape, size_t count,
                           const std::string& flat, NameScope& names) {
  ExprEmitter em(task_, base_);
  std::string rest = flat;
  for (size_t d = count; d-- > 0;) {
    std::string v = "v" + std::to_string(counter_++);
    names.vars[axes[d]->name] = v;
    if (d == 0) {
      w_.line("const int64_t " + v + " = " + rest + ";");
    } else {
      std::string ext = em.emit_index(shape[d]);
      w_.line("const int64_t " + v + " = " + rest + " % " + ext + ";");
      std::string nrest = "q" + std::to_string(counter_++);
      w_.line("const int64_t " + nrest + " = " + rest + " / " + ext + ";");
      rest = nrest;
    }
  }
}

// Stores value at the stage's axes for the last axis running over [lo, hi): in vectors of
// ember_rt::vf::width (with a masked tail) when `vectorize`, else one element at a time.
void KernelWriter::vector_loop(const Task& task, const NameScope& names, const Stage& s,
                               const Expr& value, const std::string& lo, const std::string& hi,
                               bool vectorize, const Expr& acc) {
  const std::string& lane = s.axes.back()->name;
  std::string v = "v" + std::to_string(counter_++);
  NameScope inner = names;
  inner.vars[lane] = v;
  ExprEmitter em(task, inner);
  em.set_acc_value(acc);
  DType out_t = task.buffers[s.out].dtype;
  w_.line("int64_t " + v + " = " + lo + ";");
  if (vectorize) {
    Expr vv = strip_output_cast(value, out_t);
    em.set_vector(lane);
    w_.open("for (; " + v + " + ember_rt::vf::width <= " + hi + "; " + v +
            " += ember_rt::vf::width) {");
    w_.line(store_stage(task, em, s, vv, true));
    w_.close("}");
    w_.open("if (" + v + " < " + hi + ") {");
    w_.line("const int rem = static_cast<int>(" + hi + " - " + v + ");");
    em.set_vector(lane, "rem");
    w_.line(store_stage(task, em, s, vv, true));
    w_.close("}");
  } else {
    w_.open("for (; " + v + " < " + hi + "; ++" + v + ") {");
    w_.line(store_stage(task, em, s, value, false));
    w_.close("}");
  }
}

// The last axis of a phase-split stage (StagePlan::phases) over [lo, hi) in vectors of
// phase values: every output's vectors of the phases stored interleaved (2 * width values).
void KernelWriter::phase_loop(const StagePlan& p, const NameScope& names) {
  EMBER_ASSERT(p.phases == 2 && p.phase_stages.size() == 2, "interleaved stores of two phases");
  const Stage& s = p.stage;
  const std::string& lane = s.axes.back()->name;
  std::string v = "v" + std::to_string(counter_++);
  NameScope inner = names;
  inner.vars[lane] = v;
  ExprEmitter em(*p.task, inner);
  std::vector<Expr> first = s.axes;  // the index of phase 0's lane 0 in every output
  first.back() = first.back() * Expr(p.phases);
  std::vector<int> outputs = {s.out};
  for (const Stage::Store& st : s.stores) outputs.push_back(st.buffer);
  auto body = [&](const std::string& store, const std::string& count) {
    std::string text = "{";
    for (size_t r = 0; r < p.phase_stages.size(); ++r) {
      const Stage& ps = p.phase_stages[r];
      for (size_t k = 0; k < outputs.size(); ++k) {
        const Expr& value = k == 0 ? ps.value : ps.stores[k - 1].value;
        text += " const auto w" + std::to_string(k) + "_" + std::to_string(r) + " = " +
                em.emit(value) + ";";
      }
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::string at =
          "b" + std::to_string(outputs[k]) + " + " + em.emit_index(em.offset(outputs[k], first));
      const std::string w = "w" + std::to_string(k) + "_";
      text += " ember_rt::" + store + "(" + at + count + ", " + w + "0, " + w + "1);";
    }
    return text + " }";
  };
  w_.line("int64_t " + v + " = lo;");
  em.set_vector(lane);
  w_.open("for (; " + v + " + ember_rt::vf::width <= hi; " + v + " += ember_rt::vf::width) {");
  w_.line(body("store_interleaved", ""));
  w_.close("}");
  w_.open("if (" + v + " < hi) {");
  w_.line("const int rem = static_cast<int>(hi - " + v + ");");
  em.set_vector(lane, "rem");
  w_.line(body("store_interleaved_partial", ", rem"));
  w_.close("}");
}

void KernelWriter::compute_stage(const StagePlan& p) {
  const Task* task = p.task.get();
  const Stage* s = &p.stage;
  // The flat axis once took a number here: kept so that the text of kernels, and so their
  // names and cached builds, stay as they were.
  if (p.flatten != Flatten::No) ++counter_;
  Shape shape = task->buffers[s->out].shape;
  if (p.phases) shape.back() = Expr(*shape.back().as_int() / p.phases);  // the last axis: j
  w_.open("{");
  if (shape.empty()) {
    ExprEmitter em(*task, base_);
    w_.line(store_stage(*task, em, *s, s->value, false));
    w_.close("}");
    return;
  }
  const bool vec = p.vector.ok;
  std::vector<std::string> ext = extents(shape, "e");
  std::string outer = "1";
  for (size_t d = 0; d + 1 < ext.size(); ++d) outer += " * " + ext[d];
  w_.line("const int64_t outer = " + outer + ";");
  w_.line("const int64_t inner = " + ext.back() + ";");
  w_.line("const int64_t blk = inner <= " + std::to_string(p.whole_up_to) +
          " ? (inner > 0 ? inner : 1) : " + std::to_string(p.block) + ";");
  w_.line("const int64_t nblk = (inner + blk - 1) / blk;");
  std::ostringstream work;
  work << "static_cast<double>(outer) * static_cast<double>(inner) * " << p.cost;
  w_.open("ember_rt::parallel_for(ctx, outer * nblk, " + work.str() +
          ", [&](int64_t begin, int64_t end) {");
  w_.open("for (int64_t t = begin; t < end; ++t) {");
  w_.line("const int64_t o = t / nblk;");
  w_.line("const int64_t lo = (t % nblk) * blk;");
  w_.line("const int64_t hi = lo + blk < inner ? lo + blk : inner;");
  NameScope names = base_;
  unravel(s->axes, shape, shape.size() - 1, "o", names);
  if (p.phases)
    phase_loop(p, names);
  else
    vector_loop(*task, names, *s, s->value, "lo", "hi", vec);
  w_.close("}");
  w_.close("});");
  w_.close("}");
}

void KernelWriter::matmul_stage(const StagePlan& p) {
  const Stage& s = p.stage;
  const auto& A = task_.buffers[s.a];
  const auto& B = task_.buffers[s.b];
  const auto& C = task_.buffers[s.out];
  EMBER_ASSERT(A.dtype == DType::float32 && B.dtype == DType::float32 && C.dtype == DType::float32,
               "the GEMM template takes float32");
  size_t rank = C.shape.size();
  EMBER_ASSERT(rank >= 2 && A.shape.size() >= 2 && B.shape.size() >= 2, "matmul ranks");
  ExprEmitter em(task_, base_);
  w_.open("{");
  w_.line("ember_rt::GemmShape g;");
  w_.line("g.M = " + em.emit_index(C.shape[rank - 2]) + ";");
  w_.line("g.N = " + em.emit_index(C.shape[rank - 1]) + ";");
  const Expr& depth = ir::matmul_depth(task_, s);
  w_.line("g.K = " + em.emit_index(depth) + ";");
  Shape cb(C.shape.begin(), C.shape.end() - 2);
  Shape ab(A.shape.begin(), A.shape.end() - 2), bb(B.shape.begin(), B.shape.end() - 2);
  auto batch_stride = [&](const Shape& batch, const std::string& mat) {
    // Either the same batch as the output (consecutive matrices) or none (broadcast).
    Expr n = shape_numel_expr(batch);
    if (auto v = n.as_int(); v && *v == 1) return std::string("0");
    EMBER_ASSERT(ir::equal(n, shape_numel_expr(cb)), "matmul batch must match or broadcast");
    return mat;
  };
  w_.line("g.batch = " + em.emit_index(shape_numel_expr(cb)) + ";");
  w_.line("g.A = b" + std::to_string(s.a) +
          (s.a_transposed ? "; g.a_m = 1; g.a_k = g.M;" : "; g.a_m = g.K; g.a_k = 1;"));
  w_.line("g.a_batch = " + batch_stride(ab, "g.M * g.K") + ";");
  if (s.b_row_offset.defined()) {
    // B is a view of b<s.b> (ir::Stage::b_row_offset): its leading dimensions are the batch,
    // and a table gives where each row starts in a batch's part.
    EMBER_ASSERT(!s.b_transposed && B.shape.size() >= rank - 2, "matmul row view");
    const Shape part(B.shape.begin() + static_cast<std::ptrdiff_t>(rank - 2), B.shape.end());
    const Shape lead(B.shape.begin(), B.shape.begin() + static_cast<std::ptrdiff_t>(rank - 2));
    NameScope names = base_;
    names.vars[s.b_row_var->name] = "k";
    w_.line("std::vector<int64_t> b_rows(static_cast<size_t>(g.K));");
    w_.line("for (int64_t k = 0; k < g.K; ++k) b_rows[static_cast<size_t>(k)] = " +
            ExprEmitter(task_, names).emit_index(s.b_row_offset) + ";");
    w_.line("g.B = b" + std::to_string(s.b) + "; g.b_rows = b_rows.data(); g.b_k = 0; g.b_n = " +
            std::to_string(s.b_col_stride) + ";");
    w_.line("g.b_batch = " + batch_stride(lead, em.emit_index(shape_numel_expr(part))) + ";");
  } else {
    w_.line("g.B = b" + std::to_string(s.b) +
            (s.b_transposed ? "; g.b_k = 1; g.b_n = g.K;" : "; g.b_k = g.N; g.b_n = 1;"));
    w_.line("g.b_batch = " + batch_stride(bb, "g.K * g.N") + ";");
  }
  w_.line("g.C = b" + std::to_string(s.out) + "; g.c_m = g.N; g.c_batch = g.M * g.N;");
  const std::string tune = gemm_tuning_argument(config_);
  const auto& prepared = config_.prepared_b;
  const bool is_prepared = std::find(prepared.begin(), prepared.end(), s.b) != prepared.end();
  if (is_prepared) {
    // b<s.b> holds B's prepared panels, in the layout this blocking gives.
    const std::string t = tune.empty() ? "ember_rt::GemmTuning{}" : tune.substr(2);
    const bool shared = batch_stride(bb, "x") == "0";
    w_.line("g.prepared = ember_rt::prepared_b_layout(b" + std::to_string(s.b) + ", g.K, g.N, 0, " +
            t + ");");
    if (!shared)
      w_.line("g.prepared.batch_stride = ember_rt::prepared_b_floats(g.K, g.N, g.prepared.nr);");
    w_.line("g.B = nullptr;");
  }
  // With static sizes and a fixed tuning, the path is chosen when the kernel is compiled
  // (ember_rt::gemm_choice), and the module compiles only the paths its calls take.
  std::string how = tune;
  const auto batch = shape_numel_expr(cb).as_int();
  const auto M = C.shape[rank - 2].as_int(), N = C.shape[rank - 1].as_int();
  const auto K = depth.as_int();
  if (!config_.gemm_from_global && batch && M && N && K) {
    const GemmConfig& c = config_.gemm;
    const bool rows = s.b_row_offset.defined();
    const int64_t b_k = rows ? 0 : s.b_transposed ? 1 : *N;
    const int64_t b_n = rows ? s.b_col_stride : s.b_transposed ? *K : 1;
    std::ostringstream site;
    site << ", ember_rt::gemm_choice(" << kGemmSite << *batch << ", " << *M << ", " << *N << ", "
         << *K << ", " << (s.a_transposed ? 1 : *K) << ", " << (s.a_transposed ? *M : 1) << ", "
         << b_k << ", " << b_n << ", " << *N << ", " << rows << ", " << is_prepared
         << ", ember_rt::GemmTuning{" << c.mc << ", " << c.nc << ", " << c.kc << ", " << c.kernel
         << ", " << c.split_k << "}})";
    how = site.str();
  }
  if (!p.value.defined()) {
    w_.line(std::string(kGemmCall) + "g, ctx, ember_rt::NoEpilogue{}" + how + ");");
    w_.close("}");
    return;
  }
  row_epilogue(p);
  w_.line(std::string(kGemmCall) + "g, ctx, epilogue" + how + ");");
  w_.close("}");
}

// The lambda a Matmul or Call stage's routine calls on each finished row segment of its
// output (viewed [batch..., M, N]): epilogue(bb, m, n0, len, row) writes elements
// [n0, n0 + len) of row m of batch bb. The GEMM's rewrites them in place (row points at
// them); a Call stage's reads the routine's values from row[0, len) (epilogue_source).
// It captures by value (the buffers' pointers and sizes): a routine that calls it on short
// segments in a loop keeps a copy whose pointers the compiler holds in registers. Captured by
// reference, they were reloaded on every call (a vector store may alias any memory, and the
// kernel's variables are reachable from the routine).
void KernelWriter::row_epilogue(const StagePlan& p) {
  const Stage& s = p.stage;
  const size_t rank = task_.buffers[s.out].shape.size();
  w_.open("auto epilogue = [=](int64_t bb, int64_t m, int64_t n0, int64_t len, float* row) {");
  if (p.epilogue_source >= 0) {
    w_.line("const float* __restrict b" + std::to_string(p.epilogue_source) + " = row;");
  } else {
    w_.line("(void)row;");
  }
  NameScope names = base_;
  names.vars[kSegmentStart] = "n0";
  unravel(s.axes, task_.buffers[s.out].shape, rank - 2, "bb", names);
  names.vars[s.axes[rank - 2]->name] = "m";
  vector_loop(*p.task, names, s, p.value, "n0", "n0 + len", p.vector.ok, p.acc);
  w_.close("};");
}

// ember_rt::lib::<routine>(ctx, inputs..., outputs..., params..., scalars...[, epilogue]):
// the routine is a template over the buffers' element types, which the pointers' types
// select; a stage with an epilogue passes it last (row_epilogue), in a block of its own.
void KernelWriter::call_stage(const StagePlan& p) {
  const Stage& s = p.stage;
  const bool epilogue = p.value.defined();
  if (epilogue) {
    w_.open("{");
    if (p.affine) {
      channel_affine(*p.affine);
    } else {
      row_epilogue(p);
    }
  }
  ExprEmitter em(task_, base_);
  std::string args = "ctx";
  for (int b : s.call_inputs) args += ", b" + std::to_string(b);
  for (int b : s.call_outputs) args += ", b" + std::to_string(b);
  for (const Expr& e : s.params) args += ", static_cast<int64_t>(" + em.emit_index(e) + ")";
  for (double v : s.scalars) {
    std::ostringstream os;
    os.precision(17);
    if (std::isnan(v)) {
      os << "__builtin_nan(\"\")";
    } else if (std::isinf(v)) {
      os << (v > 0 ? "" : "-") << "__builtin_inf()";
    } else {
      os << v;
    }
    args += ", static_cast<double>(" + os.str() + ")";
  }
  if (epilogue) args += ", epilogue";
  w_.line("ember_rt::lib::" + s.routine + "(" + args + ");");
  if (epilogue) w_.close("}");
}

// An epilogue the routine applies in registers (ChannelAffinePlan): an ember_rt::ChannelAffine
// named `epilogue`.
void KernelWriter::channel_affine(const ChannelAffinePlan& a) {
  w_.line("ember_rt::ChannelAffine epilogue;");
  auto operand = [&](const char* field, int b, double k) {
    if (b >= 0) {
      w_.line(std::string("epilogue.") + field + " = b" + std::to_string(b) + ";");
    } else {
      w_.line(std::string("epilogue.") + field + "_k = " + float_literal(k, true) + ";");
    }
  };
  operand("scale", a.scale, a.scale_k);
  operand("shift", a.shift, a.shift_k);
  if (a.residual >= 0) w_.line("epilogue.residual = b" + std::to_string(a.residual) + ";");
  if (a.lo) w_.line("epilogue.lo = " + float_literal(*a.lo, true) + ";");
  if (a.hi) w_.line("epilogue.hi = " + float_literal(*a.hi, true) + ";");
  if (a.channels >= 0) w_.line("epilogue.channels = " + std::to_string(a.channels) + ";");
}

std::string generate_kernel(const Task& task, const std::string& fn_name,
                            const std::vector<std::string>& symbols, const KernelConfig& config) {
  const Task physical = physical_task(task);  // every buffer plain (physical.h)
  KernelWriter kw(physical, symbols, config);
  return kw.run(fn_name);
}

}  // namespace ember::codegen
