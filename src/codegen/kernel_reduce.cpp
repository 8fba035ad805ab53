// Reduction stages: the accumulator's identity and combination, and the three loop shapes
// (vectors along the output's last axis, vectors along the reduced axis, scalar).
#include "ember/support/error.h"
#include "kernel_writer.h"

namespace ember::codegen {

using ir::Expr;
using ir::ExprKind;
using ir::ReduceOp;
using ir::Stage;
using ir::Task;

static std::string init_value(ReduceOp op, DType t) {
  std::string T = compute_type(t);
  bool flt = is_float(t);
  switch (op) {
    case ReduceOp::Sum: return T + "(0)";
    case ReduceOp::Prod: return T + "(1)";
    case ReduceOp::Max:
    case ReduceOp::ArgMax:
      return flt ? "-std::numeric_limits<" + T + ">::infinity()"
                 : "std::numeric_limits<" + T + ">::lowest()";
    case ReduceOp::Min:
    case ReduceOp::ArgMin:
      return flt ? "std::numeric_limits<" + T + ">::infinity()"
                 : "std::numeric_limits<" + T + ">::max()";
  }
  return "";
}

static std::string combine(ReduceOp op, DType t, const std::string& a, const std::string& v) {
  bool flt = is_float(t) || t == DType::float32;
  switch (op) {
    case ReduceOp::Sum: return a + " + " + v;
    case ReduceOp::Prod: return a + " * " + v;
    case ReduceOp::Max:
      return flt ? "ember_rt::max(" + a + ", " + v + ")"
                 : "ember_rt::imax<" + compute_type(t) + ">(" + a + ", " + v + ")";
    case ReduceOp::Min:
      return flt ? "ember_rt::min(" + a + ", " + v + ")"
                 : "ember_rt::imin<" + compute_type(t) + ">(" + a + ", " + v + ")";
    default: break;
  }
  throw InternalError("combine of an arg-reduction");
}

void KernelWriter::reduce_stage(const StagePlan& p) {
  const Stage& s = p.stage;
  const Shape& shape = task_.buffers[s.out].shape;
  std::string acc_t = compute_type(s.acc_dtype);
  w_.open("{");
  std::vector<std::string> ext = extents(shape, "e");
  if (p.schedule == Schedule::ReduceOutputs) {
    reduce_outer_vector(p, ext);
    w_.close("}");
    return;
  }
  std::string outer = "1";
  for (const auto& e : ext) outer += " * " + e;
  w_.line("const int64_t outer = " + outer + ";");
  std::vector<std::string> rext;
  {
    ExprEmitter em(task_, base_);
    for (size_t r = 0; r < s.rextents.size(); ++r) {
      rext.push_back("r" + std::to_string(r));
      w_.line("const int64_t " + rext.back() + " = " + em.emit_index(s.rextents[r]) + ";");
    }
  }
  std::string rtotal = "1";
  for (const auto& r : rext) rtotal += " * " + r;
  std::ostringstream work;
  work << "static_cast<double>(outer) * static_cast<double>(" << rtotal << ") * " << p.cost;
  w_.open("ember_rt::parallel_for(ctx, outer, " + work.str() +
          ", [&](int64_t begin, int64_t end) {");
  w_.open("for (int64_t o = begin; o < end; ++o) {");
  NameScope names = base_;
  unravel(s.axes, shape, shape.size(), "o", names);
  if (p.schedule == Schedule::ReduceAxis) {
    reduce_inner_vector(s, names, acc_t);
  } else {
    reduce_scalar_body(s, names, acc_t);
  }
  w_.close("}");
  w_.close("});");
  w_.close("}");
}

// Opens loops over raxes[0..count) and binds their variables; returns the loop count.
static int open_rloops(Writer& w, const Stage& s, size_t count, NameScope& names, int& counter) {
  for (size_t r = 0; r < count; ++r) {
    std::string v = "v" + std::to_string(counter++);
    names.vars[s.raxes[r]->name] = v;
    w.open("for (int64_t " + v + " = 0; " + v + " < r" + std::to_string(r) + "; ++" + v + ") {");
  }
  return static_cast<int>(count);
}

// Rows of the output (all axes but the last) in parallel, blocks of a long last axis too;
// within a row, 4 vectors at a time (independent accumulators), then 2, 1 and a partial one.
void KernelWriter::reduce_outer_vector(const StagePlan& p, const std::vector<std::string>& ext) {
  const Stage& s = p.stage;
  std::string outer = "1";
  for (size_t d = 0; d + 1 < ext.size(); ++d) outer += " * " + ext[d];
  w_.line("const int64_t outer = " + outer + ";");
  w_.line("const int64_t inner = " + ext.back() + ";");
  w_.line("const int64_t blk = inner <= " + std::to_string(p.whole_up_to) +
          " ? (inner > 0 ? inner : 1) : " + std::to_string(p.block) + ";");
  w_.line("const int64_t nblk = (inner + blk - 1) / blk;");
  std::string rtotal = "1";
  {
    ExprEmitter em(task_, base_);
    for (size_t r = 0; r < s.rextents.size(); ++r) {
      w_.line("const int64_t r" + std::to_string(r) + " = " + em.emit_index(s.rextents[r]) + ";");
      rtotal += " * r" + std::to_string(r);
    }
  }
  std::ostringstream work;
  work << "static_cast<double>(outer) * static_cast<double>(inner) * static_cast<double>(" << rtotal
       << ") * " << p.cost;
  w_.open("ember_rt::parallel_for(ctx, outer * nblk, " + work.str() +
          ", [&](int64_t begin, int64_t end) {");
  w_.open("for (int64_t t = begin; t < end; ++t) {");
  w_.line("const int64_t o = t / nblk;");
  w_.line("const int64_t lo = (t % nblk) * blk;");
  w_.line("const int64_t hi = lo + blk < inner ? lo + blk : inner;");
  NameScope names = base_;
  unravel(s.axes, task_.buffers[s.out].shape, s.axes.size() - 1, "o", names);
  std::string v = "v" + std::to_string(counter_++);
  w_.line("int64_t " + v + " = lo;");
  w_.open("for (; " + v + " + 4 * ember_rt::vf::width <= hi; " + v +
          " += 4 * ember_rt::vf::width) {");
  reduce_outer_block(s, names, v, 4, "");
  w_.close("}");
  w_.open("if (" + v + " + 2 * ember_rt::vf::width <= hi) {");
  reduce_outer_block(s, names, v, 2, "");
  w_.line(v + " += 2 * ember_rt::vf::width;");
  w_.close("}");
  w_.open("if (" + v + " + ember_rt::vf::width <= hi) {");
  reduce_outer_block(s, names, v, 1, "");
  w_.line(v + " += ember_rt::vf::width;");
  w_.close("}");
  w_.open("if (" + v + " < hi) {");
  w_.line("const int rem = static_cast<int>(hi - " + v + ");");
  reduce_outer_block(s, names, v, 1, "rem");
  w_.close("}");
  w_.close("}");
  w_.close("});");
}

// `unroll` vectors of outputs from lane v on: accumulate over the reduction, then store.
void KernelWriter::reduce_outer_block(const Stage& s, const NameScope& names_in,
                                      const std::string& v, int unroll,
                                      const std::string& partial) {
  const std::string& lane = s.axes.back()->name;
  const std::string init = init_value(s.reduce_op, s.acc_dtype);
  std::vector<NameScope> lanes(unroll, names_in);
  for (int u = 0; u < unroll; ++u) {
    std::string uv = v + "_" + std::to_string(u);
    w_.line("const int64_t " + uv + " = " + v + " + " + std::to_string(u) +
            " * ember_rt::vf::width;");
    lanes[u].vars[lane] = uv;
    w_.line("ember_rt::vf a" + std::to_string(u) + "(" + init + ");");
  }
  NameScope loops = names_in;
  int opened = open_rloops(w_, s, s.raxes.size(), loops, counter_);
  for (int u = 0; u < unroll; ++u) {
    for (const Expr& r : s.raxes) lanes[u].vars[r->name] = loops.name(r->name);
    ExprEmitter em(task_, lanes[u]);
    em.set_vector(lane, partial);
    std::string a = "a" + std::to_string(u);
    w_.line(a + " = " + combine(s.reduce_op, s.acc_dtype, a, em.emit(s.value)) + ";");
  }
  for (int i = 0; i < opened; ++i) w_.close("}");
  const DType out_t = task_.buffers[s.out].dtype;
  Expr out = s.epilogue.defined() ? strip_output_cast(s.epilogue, out_t) : ir::acc(s.acc_dtype);
  for (int u = 0; u < unroll; ++u) {
    ExprEmitter em(task_, lanes[u]);
    em.set_vector(lane, partial);
    em.set_acc("a" + std::to_string(u));
    w_.line(store_stage(task_, em, s, out, true));
  }
}

void KernelWriter::reduce_inner_vector(const Stage& s, const NameScope& names_in,
                                       const std::string& acc_t) {
  NameScope names = names_in;
  std::string init = init_value(s.reduce_op, s.acc_dtype);
  const bool sum = s.reduce_op == ReduceOp::Sum;
  w_.line("ember_rt::vf a0(" + init + "), a1(" + init + "), a2(" + init + "), a3(" + init + ");");
  // Sums are blocked: every kBlockSteps steps the float accumulators are added into a double
  // and restart, so a long sum keeps float32's accuracy per block (2^32 ones stay 2^32).
  const std::string flush =
      "if (++steps == kBlockSteps) { total += static_cast<double>(ember_rt::reduce_add((a0 + a1) "
      "+ (a2 + a3))); a0 = a1 = a2 = a3 = ember_rt::vf(0.0f); steps = 0; }";
  if (sum) {
    w_.line("constexpr int kBlockSteps = 64;");
    w_.line("double total = 0.0;");
    w_.line("int steps = 0;");
  }
  int opened = open_rloops(w_, s, s.raxes.size() - 1, names, counter_);
  const std::string& lane = s.raxes.back()->name;
  std::string last = "r" + std::to_string(s.raxes.size() - 1);
  std::string v = "v" + std::to_string(counter_++);
  w_.line("int64_t " + v + " = 0;");
  w_.open("for (; " + v + " + 4 * ember_rt::vf::width <= " + last + "; " + v +
          " += 4 * ember_rt::vf::width) {");
  for (int u = 0; u < 4; ++u) {
    NameScope un = names;
    std::string uv = v + "_" + std::to_string(u);
    un.vars[lane] = uv;
    w_.line("const int64_t " + uv + " = " + v + " + " + std::to_string(u) +
            " * ember_rt::vf::width;");
    ExprEmitter em(task_, un);
    em.set_vector(lane);
    std::string a = "a" + std::to_string(u);
    w_.line(a + " = " + combine(s.reduce_op, s.acc_dtype, a, em.emit(s.value)) + ";");
  }
  if (sum) w_.line(flush);
  w_.close("}");
  {
    NameScope un = names;
    un.vars[lane] = v;
    ExprEmitter em(task_, un);
    em.set_vector(lane);
    w_.open("for (; " + v + " + ember_rt::vf::width <= " + last + "; " + v +
            " += ember_rt::vf::width) {");
    w_.line("a0 = " + combine(s.reduce_op, s.acc_dtype, "a0", em.emit(s.value)) + ";");
    if (sum) w_.line(flush);
    w_.close("}");
    // The last lanes: a partial vector (loads masked to them), the others set to the
    // reduction's identity. A scalar loop had run every row shorter than a vector (a 7x7 or
    // 14x14 plane) element by element.
    w_.open("if (" + v + " < " + last + ") {");
    w_.line("const int64_t rem = " + last + " - " + v + ";");
    em.set_vector(lane, "rem");
    w_.line("a1 = " +
            combine(s.reduce_op, s.acc_dtype, "a1",
                    "ember_rt::guard(ember_rt::LaneRange(rem), " + em.emit(s.value) +
                        ", ember_rt::vf(" + init + "))") +
            ";");
    if (sum) w_.line(flush);
    w_.close("}");
  }
  for (int i = 0; i < opened; ++i) w_.close("}");
  const char* h = s.reduce_op == ReduceOp::Sum   ? "reduce_add"
                  : s.reduce_op == ReduceOp::Max ? "reduce_max"
                                                 : "reduce_min";
  std::string a01 = combine(s.reduce_op, s.acc_dtype, "a0", "a1");
  std::string a23 = combine(s.reduce_op, s.acc_dtype, "a2", "a3");
  std::string all = combine(s.reduce_op, s.acc_dtype, a01, a23);
  if (sum) {
    w_.line("const " + acc_t + " acc = static_cast<" + acc_t + ">(total + static_cast<double>(" +
            "ember_rt::reduce_add(" + all + ")));");
  } else {
    w_.line("const " + acc_t + " acc = ember_rt::" + std::string(h) + "(" + all + ");");
  }
  ExprEmitter em(task_, names_in);
  em.set_acc("acc");
  Expr out = s.epilogue.defined() ? s.epilogue : ir::acc(s.acc_dtype);
  w_.line(store_stage(task_, em, s, out, false));
}

void KernelWriter::reduce_scalar_body(const Stage& s, NameScope names, const std::string& acc_t) {
  bool arg = s.reduce_op == ReduceOp::ArgMax || s.reduce_op == ReduceOp::ArgMin;
  std::string init = init_value(s.reduce_op, s.acc_dtype);
  w_.line(acc_t + " best = " + init + ";");
  if (arg) w_.line("int64_t acc = 0;");
  if (arg && is_float(s.acc_dtype)) w_.line("bool arg_nan = false;");
  // Float sums blocked as in reduce_inner_vector.
  const bool blocked = s.reduce_op == ReduceOp::Sum && s.acc_dtype == DType::float32;
  if (blocked) w_.line("double total = 0.0; int steps = 0;");
  int opened = open_rloops(w_, s, s.raxes.size(), names, counter_);
  ExprEmitter em(task_, names);
  w_.line("const " + acc_t + " x = " + em.emit(s.value) + ";");
  if (arg && s.raxes.empty()) {
    w_.line("(void)x;");  // a 0-d input: its only element is at index 0
  } else if (arg) {
    // The position over several reduction axes is their row-major index (max pooling's
    // window position kh * KW + kw).
    std::string position = names.name(s.raxes[0]->name);
    for (size_t r = 1; r < s.raxes.size(); ++r)
      position =
          "(" + position + " * r" + std::to_string(r) + " + " + names.name(s.raxes[r]->name) + ")";
    // The first extreme wins, and a NaN before any number (torch's argmax). Written without
    // branches (bitwise operators, a mask, max / min): which element wins is data, and
    // mispredicted branches had made max pooling's indices 10x slower than its values.
    const std::string cmp = s.reduce_op == ReduceOp::ArgMax ? "x > best" : "x < best";
    if (is_float(s.acc_dtype)) {
      w_.line("const bool arg_take = ((" + cmp + ") | (x != x)) & !arg_nan;");
      w_.line("arg_nan = arg_nan | (x != x);");
    } else {
      w_.line("const bool arg_take = " + cmp + ";");
    }
    w_.line("const int64_t arg_mask = -static_cast<int64_t>(arg_take);");
    w_.line("acc = (acc & ~arg_mask) | (static_cast<int64_t>(" + position + ") & arg_mask);");
    w_.line("best = " + cmp + " ? x : best;");
  } else {
    w_.line("best = " + combine(s.reduce_op, s.acc_dtype, "best", "x") + ";");
    if (blocked)
      w_.line(
          "if (++steps == 4096) { total += static_cast<double>(best); best = 0.0f; "
          "steps = 0; }");
  }
  for (int i = 0; i < opened; ++i) w_.close("}");
  if (blocked) {
    w_.line("const " + acc_t + " acc = static_cast<" + acc_t +
            ">(total + static_cast<double>(best));");
  } else if (!arg) {
    w_.line("const " + acc_t + " acc = best;");
  }
  ExprEmitter out_em(task_, names);
  out_em.set_acc("acc");
  Expr out = s.epilogue.defined() ? s.epilogue : ir::acc(arg ? DType::int64 : s.acc_dtype);
  w_.line(store_stage(task_, out_em, s, out, false));
}

}  // namespace ember::codegen
