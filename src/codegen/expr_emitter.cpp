// IR expression -> C++ expression text.
#include "expr_emitter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "ember/codegen/kernel_plan.h"
#include "ember/ir/simplify.h"
#include "ember/support/error.h"
#include "kernel_writer.h"

namespace ember::codegen {

using ir::BinaryOp;
using ir::Expr;
using ir::ExprKind;
using ir::ExprNode;
using ir::UnaryOp;

std::string NameScope::name(const std::string& var) const {
  auto it = vars.find(var);
  EMBER_ASSERT(it != vars.end(), "code generation met an unbound variable '" << var << "'");
  return it->second;
}

std::string compute_type(DType t) {
  switch (t) {
    case DType::float32:
    case DType::float16:
    case DType::bfloat16: return "float";
    case DType::float64: return "double";
    default: return storage_type(t);
  }
}

std::string storage_type(DType t) {
  switch (t) {
    case DType::float32: return "float";
    case DType::float16: return "ember_rt::f16";
    case DType::bfloat16: return "ember_rt::bf16";
    case DType::float64: return "double";
    case DType::int8: return "int8_t";
    case DType::int16: return "int16_t";
    case DType::int32: return "int32_t";
    case DType::int64: return "int64_t";
    case DType::uint8: return "uint8_t";
    case DType::boolean: return "bool";
  }
  return "void";
}

namespace {

// Whether index arithmetic can use C++'s / and % (floor semantics on non-negative values):
// no subtraction, negative constants or data-dependent values anywhere in it.
bool non_negative_index(const Expr& e) {
  bool ok = true;
  ir::visit(e, [&](const Expr& x) {
    if (x.kind() == ExprKind::Load) ok = false;
    if (x.kind() == ExprKind::Binary && static_cast<BinaryOp>(x->op) == BinaryOp::Sub) ok = false;
    if (auto v = x.as_int(); v && *v < 0) ok = false;
    if (x.kind() == ExprKind::Unary) ok = false;
  });
  return ok;
}

}  // namespace

std::string float_literal(double v, bool single) {
  if (std::isnan(v)) return single ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) {
    std::string inf = single ? "__builtin_inff()" : "__builtin_inf()";
    return v < 0 ? "(-" + inf + ")" : inf;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", single ? static_cast<double>(static_cast<float>(v)) : v);
  std::string s = buf;
  if (single) s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

std::string ExprEmitter::emit_const(const Expr& e) const {
  DType t = e.dtype();
  std::string s;
  if (is_float(t)) {
    s = float_literal(e->fval, t != DType::float64);
  } else if (t == DType::boolean) {
    s = e->ival ? "true" : "false";
  } else if (e->ival == INT64_MIN) {
    s = "INT64_MIN";
  } else {
    s = "static_cast<" + storage_type(t) + ">(" + std::to_string(e->ival) + "LL)";
    if (t == DType::int64 && e->ival >= 0) s = "int64_t{" + std::to_string(e->ival) + "}";
  }
  if (!vector_mode()) return s;
  return t == DType::boolean ? "ember_rt::vm::broadcast(" + s + ")" : "ember_rt::vf(" + s + ")";
}

Expr ExprEmitter::offset(int b, const std::vector<Expr>& indices) const {
  const ir::Buffer& buf = task_.buffers.at(b);
  EMBER_ASSERT(buf.shape.size() == indices.size(), "load of b" << b << " with " << indices.size()
                                                               << " indices for rank "
                                                               << buf.shape.size());
  return buf.layout.offset(buf.shape, indices);
}

std::string ExprEmitter::emit_index(const Expr& e) const {
  const ExprNode& n = *e.get();
  switch (n.kind) {
    case ExprKind::Const: return std::to_string(n.ival);
    case ExprKind::Var: return names_.name(n.name);
    case ExprKind::Binary: {
      std::string a = emit_index(n.args[0]), b = emit_index(n.args[1]);
      switch (static_cast<BinaryOp>(n.op)) {
        case BinaryOp::Add: return "(" + a + " + " + b + ")";
        case BinaryOp::Sub: return "(" + a + " - " + b + ")";
        case BinaryOp::Mul: return "(" + a + " * " + b + ")";
        case BinaryOp::FloorDiv:
          return non_negative_index(e) ? "(" + a + " / " + b + ")"
                                       : "ember_rt::ifloordiv<int64_t>(" + a + ", " + b + ")";
        case BinaryOp::Mod:
          return non_negative_index(e) ? "(" + a + " % " + b + ")"
                                       : "ember_rt::imod<int64_t>(" + a + ", " + b + ")";
        case BinaryOp::Max: return "ember_rt::imax<int64_t>(" + a + ", " + b + ")";
        case BinaryOp::Min: return "ember_rt::imin<int64_t>(" + a + ", " + b + ")";
        default: break;
      }
      break;
    }
    default: break;
  }
  // Anything else (a loaded index, a select): evaluate as a scalar int64 expression.
  ExprEmitter scalar(task_, names_);
  return "static_cast<int64_t>(" + scalar.emit(e) + ")";
}

namespace {

// Whether e reads a buffer: an index that does is data, checked at run time.
bool reads_data(const Expr& e) {
  bool found = false;
  ir::visit(e, [&](const Expr& x) { found |= x.kind() == ExprKind::Load; });
  return found;
}

}  // namespace

std::string ExprEmitter::checked_offset(int b, const std::vector<Expr>& indices) const {
  const ir::Buffer& buf = task_.buffers.at(b);
  // The kernel writer's tasks are physical (physical.h): every buffer is plain.
  EMBER_ASSERT(buf.layout.is_plain(), "a checked load of the non-plain buffer " << buf.name);
  std::string off;
  for (size_t d = 0; d < indices.size(); ++d) {
    const std::string size = emit_index(buf.shape[d]);
    std::string i = emit_index(ir::simplify_index(indices[d]));
    if (reads_data(indices[d])) {
      // What the runtime's message names: "dimension 0 of 'weight' (float32[30522, 768])".
      std::string what = "dimension " + std::to_string(d) + " of '" + buf.name + "' (" +
                         dtype_name(buf.dtype) + shape_str(buf.shape) + ")";
      for (char& c : what)
        c = (c == '"' || c == '\\' || !std::isprint(static_cast<unsigned char>(c))) ? '_' : c;
      i = "ember_rt::checked_index(" + i + ", " + size + ", ctx, \"" + what + "\")";
    }
    off = d == 0 ? i : "(" + off + ") * " + size + " + " + i;
  }
  return "(" + off + ")";
}

std::string ExprEmitter::emit_load(const Expr& e) const {
  int b = e->buffer;
  DType t = task_.buffers.at(b).dtype;
  Expr off = offset(b, e->args);
  std::string ptr = "b" + std::to_string(b);
  // Indices read from data (embedding) are checked so that bad data cannot reach memory
  // outside the buffer; the runtime turns the report into an ember::Error.
  const bool checked = std::any_of(e->args.begin(), e->args.end(), reads_data);
  const std::string off_text = checked ? checked_offset(b, e->args) : emit_index(off);
  if (!vector_mode()) {
    std::string v = ptr + "[" + off_text + "]";
    return is_low_precision(t) ? "static_cast<float>(" + v + ")" : v;
  }
  auto coef = ir::linear_coefficient(off, lane_var_);
  EMBER_ASSERT(coef && *coef >= 0, "vector load that is not affine in the lane");
  const bool mask = t == DType::boolean;  // a lane mask (vm)
  if (*coef == 0) {
    // One element for every lane; under a guard, read only when some lane is in range.
    ExprEmitter scalar(task_, names_);
    const std::string all = mask ? "ember_rt::vm::broadcast(" : "ember_rt::vf(";
    if (!guard_.empty())
      return all + guard_ + ".any() ? " + scalar.emit(e) + (mask ? " : false)" : " : 0.0f)");
    return all + scalar.emit(e) + ")";
  }
  std::string addr = ptr + " + " + off_text;
  if (mask) {
    EMBER_ASSERT(guard_.empty(), "bool vector loads are unguarded");
    if (*coef > 1) {
      const std::string st = std::to_string(*coef);
      if (partial_.empty()) return "ember_rt::load_strided(" + addr + ", " + st + ")";
      return "ember_rt::load_strided_range(" + addr + ", " + st + ", ember_rt::LaneRange(" +
             partial_ + "))";
    }
    if (!partial_.empty()) return "ember_rt::vm::load_partial(" + addr + ", " + partial_ + ")";
    return "ember_rt::vm::load(" + addr + ")";
  }
  if (*coef > 1 || !guard_.empty()) {
    EMBER_ASSERT(t == DType::float32, "guarded or strided vector loads read float32");
    if (*coef == 1) return "ember_rt::load_range(" + addr + ", " + guard_ + ")";
    std::string s = std::to_string(*coef);
    if (guard_.empty() && partial_.empty())
      return "ember_rt::load_strided(" + addr + ", " + s + ")";
    std::string range = guard_.empty() ? "ember_rt::LaneRange(" + partial_ + ")" : guard_;
    return "ember_rt::load_strided_range(" + addr + ", " + s + ", " + range + ")";
  }
  std::string suffix = t == DType::bfloat16 ? "_bf16" : t == DType::float16 ? "_f16" : "";
  if (!partial_.empty())
    return "ember_rt::vf::load_partial" + suffix + "(" + addr + ", " + partial_ + ")";
  return "ember_rt::vf::load" + suffix + "(" + addr + ")";
}

// A lane range (is_lane_range), `cond`, as a chain of LaneRange::ge calls: every comparison
// between integer expressions affine in the lane becomes one.
void ExprEmitter::range_chain(const Expr& cond, std::string* chain) const {
  auto op = static_cast<BinaryOp>(cond->op);
  if (op == BinaryOp::And) {
    range_chain(cond->args[0], chain);
    range_chain(cond->args[1], chain);
    return;
  }
  const Expr diff = ir::simplify_index(cond->args[0] - cond->args[1]);
  auto a = ir::linear_coefficient(diff, lane_var_);
  EMBER_ASSERT(a, "a lane range that is not affine in the lane");
  // lane i holds diff(base) + a * i; every comparison becomes A * i + B >= 0.
  std::string d = "(" + emit_index(diff) + ")";
  int64_t A = op == BinaryOp::Ge || op == BinaryOp::Gt ? *a : -*a;
  std::string B = op == BinaryOp::Ge   ? d
                  : op == BinaryOp::Gt ? d + " - 1"
                  : op == BinaryOp::Le ? "-" + d
                                       : "-" + d + " - 1";
  *chain += ".ge<" + std::to_string(A) + ">(" + B + ")";
}

std::string ExprEmitter::emit_unary(const Expr& e) const {
  auto op = static_cast<UnaryOp>(e->op);
  std::string a = emit(e->args[0]);
  const DType in = e->args[0].dtype();
  if (op == UnaryOp::Not)
    return vector_mode() ? "ember_rt::logical_not(" + a + ")" : "(!" + a + ")";
  if (is_float(in) || vector_mode()) {
    if (op == UnaryOp::Neg) return "(-" + a + ")";
    return std::string("ember_rt::") + ir::unary_name(op) + "(" + a + ")";
  }
  std::string T = storage_type(in);
  switch (op) {
    case UnaryOp::Neg: return "static_cast<" + T + ">(-" + a + ")";
    case UnaryOp::Abs: return "ember_rt::iabs<" + T + ">(" + a + ")";
    case UnaryOp::Relu: return "ember_rt::imax<" + T + ">(" + a + ", 0)";
    case UnaryOp::BitNot: return "static_cast<" + T + ">(~" + a + ")";
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc: return a;
    default: break;
  }
  throw InternalError(std::string("no integer code for unary ") + ir::unary_name(op));
}

namespace {

// Integer division of data by data: the divisor may be 0 (or -1 with the type's minimum,
// which traps too), so the checked helper runs unless the divisor is a harmless constant.
std::string int_div_check(const Expr& e) {
  auto c = e->args[1].as_int();
  return c && *c != 0 && *c != -1 ? "" : ", ctx";
}

}  // namespace

std::string ExprEmitter::emit_binary(const Expr& e) const {
  auto op = static_cast<BinaryOp>(e->op);
  DType t = e->args[0].dtype();
  // Acc * s + t is one fma, as a routine applying a channel affine map in registers computes
  // it (channel_affine.cpp): the accumulator is never rounded on its own. Every other
  // multiply and add rounds by itself, as eager's separate kernels do (-ffp-contract=off).
  if (op == BinaryOp::Add && t == DType::float32) {
    for (int side : {0, 1}) {
      const Expr& m = e->args[side];
      if (m.kind() != ExprKind::Binary || static_cast<BinaryOp>(m->op) != BinaryOp::Mul ||
          m.dtype() != DType::float32)
        continue;
      for (int f : {0, 1}) {
        const Expr& x = m->args[f];
        if (x.kind() == ExprKind::Acc || (acc_value_.defined() && ir::equal(x, acc_value_)))
          return "ember_rt::fma(" + emit(m->args[f]) + ", " + emit(m->args[1 - f]) + ", " +
                 emit(e->args[1 - side]) + ")";
      }
    }
  }
  std::string a = emit(e->args[0]), b = emit(e->args[1]);
  auto infix = [&](const char* s) { return "(" + a + " " + s + " " + b + ")"; };
  if ((op == BinaryOp::Max || op == BinaryOp::Min) && is_float(t)) {
    // A bound that is a constant other than NaN (clamp, relu6): max_c / min_c, one
    // instruction on vectors instead of three, keeping x's NaN (and x where it equals the
    // bound, as torch.clamp).
    auto bound = [](const Expr& x) {
      return x->kind == ExprKind::Const && is_float(x.dtype()) && !std::isnan(x->fval);
    };
    const std::string f = op == BinaryOp::Max ? "ember_rt::max_c(" : "ember_rt::min_c(";
    if (bound(e->args[1])) return f + a + ", " + b + ")";
    if (bound(e->args[0])) return f + b + ", " + a + ")";
  }
  if (vector_mode()) {
    switch (op) {
      case BinaryOp::Add: return infix("+");
      case BinaryOp::Sub: return infix("-");
      case BinaryOp::Mul: return infix("*");
      case BinaryOp::Div: return infix("/");
      case BinaryOp::FloorDiv: return "ember_rt::floor(" + infix("/") + ")";
      case BinaryOp::And: return "ember_rt::logical_and(" + a + ", " + b + ")";
      case BinaryOp::Or: return "ember_rt::logical_or(" + a + ", " + b + ")";
      default: return std::string("ember_rt::") + ir::binary_name(op) + "(" + a + ", " + b + ")";
    }
  }
  bool flt = is_float(t);
  std::string T = storage_type(t);
  switch (op) {
    case BinaryOp::Add: return flt ? infix("+") : "static_cast<" + T + ">" + infix("+");
    case BinaryOp::Sub: return flt ? infix("-") : "static_cast<" + T + ">" + infix("-");
    case BinaryOp::Mul: return flt ? infix("*") : "static_cast<" + T + ">" + infix("*");
    case BinaryOp::Div: return infix("/");
    case BinaryOp::FloorDiv:
      return flt ? "ember_rt::floor(" + infix("/") + ")"
                 : "ember_rt::ifloordiv<" + T + ">(" + a + ", " + b + int_div_check(e) + ")";
    case BinaryOp::Mod:
      return flt ? "ember_rt::pymod(" + a + ", " + b + ")"
                 : "ember_rt::imod<" + T + ">(" + a + ", " + b + int_div_check(e) + ")";
    case BinaryOp::Fmod:
      return flt ? "ember_rt::fmod(" + a + ", " + b + ")"
                 : "ember_rt::ifmod<" + T + ">(" + a + ", " + b + int_div_check(e) + ")";
    case BinaryOp::Xor: return infix("!=");
    case BinaryOp::BitAnd: return "static_cast<" + T + ">" + infix("&");
    case BinaryOp::BitOr: return "static_cast<" + T + ">" + infix("|");
    case BinaryOp::BitXor: return "static_cast<" + T + ">" + infix("^");
    case BinaryOp::Shl: return "ember_rt::ishl<" + T + ">(" + a + ", " + b + ")";
    case BinaryOp::Shr: return "ember_rt::ishr<" + T + ">(" + a + ", " + b + ")";
    case BinaryOp::Pow:
      return flt ? "ember_rt::pow(" + a + ", " + b + ")"
                 : "ember_rt::ipow<" + T + ">(" + a + ", " + b + ")";
    case BinaryOp::Max:
      return flt ? "ember_rt::max(" + a + ", " + b + ")"
                 : "ember_rt::imax<" + T + ">(" + a + ", " + b + ")";
    case BinaryOp::Min:
      return flt ? "ember_rt::min(" + a + ", " + b + ")"
                 : "ember_rt::imin<" + T + ">(" + a + ", " + b + ")";
    case BinaryOp::Eq: return infix("==");
    case BinaryOp::Ne: return infix("!=");
    case BinaryOp::Lt: return infix("<");
    case BinaryOp::Le: return infix("<=");
    case BinaryOp::Gt: return infix(">");
    case BinaryOp::Ge: return infix(">=");
    case BinaryOp::And: return infix("&&");
    case BinaryOp::Or: return infix("||");
    default:
      // The float functions of the table (atan2, hypot, zeta, igamma, the polynomials, ...):
      // ember_rt::NAME for float and double.
      return std::string("ember_rt::") + ir::binary_name(op) + "(" + a + ", " + b + ")";
  }
}

std::string ExprEmitter::emit_cast(const Expr& e) const {
  DType to = e.dtype();
  const Expr& x = e->args[0];
  DType from = x.dtype();
  std::string a = emit(x);
  if (vector_mode()) {
    // Vectorized casts (plan_vector): low-precision loads widened to float32 (the load
    // widens), and lane masks to 0/1 floats and back (nonzero, NaN included, is true).
    if (to == DType::float32 && from == DType::boolean)
      return "ember_rt::select(" + a + ", ember_rt::vf(1.0f), ember_rt::vf(0.0f))";
    if (to == DType::boolean && from == DType::float32)
      return "ember_rt::ne(" + a + ", ember_rt::vf(0.0f))";
    return a;
  }
  if (compute_type(to) == compute_type(from) && !is_low_precision(to)) return a;
  if (to == DType::boolean) return "(" + a + " != 0)";
  if (is_low_precision(to)) {
    return "static_cast<float>(" + storage_type(to) + "(static_cast<float>(" + a + ")))";
  }
  return "static_cast<" + compute_type(to) + ">(" + a + ")";
}

// The seed and offset are one scalar for every lane; the counter is the element's index, in
// vector mode the first lane's, the others following at the counter's stride along the lane.
std::string ExprEmitter::emit_random(const Expr& e) const {
  const ExprEmitter scalar(task_, names_);
  const std::string seed = scalar.emit(e->args[0]), offset = scalar.emit(e->args[1]);
  const Expr counter = ir::simplify_index(e->args[2]);
  const std::string base = emit_index(counter);
  if (!vector_mode()) return "ember_rt::philox_uniform(" + seed + ", " + offset + ", " + base + ")";
  auto stride = ir::linear_coefficient(counter, lane_var_);
  EMBER_ASSERT(stride && *stride >= 0, "a random counter that is not affine in the lane");
  return "ember_rt::philox_uniform_lanes<" + std::to_string(*stride) + ">(" + seed + ", " + offset +
         ", " + base + ")";
}

std::string ExprEmitter::emit(const Expr& e) const {
  switch (e.kind()) {
    case ExprKind::Const: return emit_const(e);
    case ExprKind::Var: {
      std::string v = names_.name(e->name);
      if (!vector_mode()) return v;
      EMBER_ASSERT(e->name != lane_var_, "the lane variable used as a value");
      return "ember_rt::vf(static_cast<float>(" + v + "))";
    }
    case ExprKind::Acc: return acc_;
    case ExprKind::Load: return emit_load(e);
    case ExprKind::Unary: return emit_unary(e);
    case ExprKind::Binary: return emit_binary(e);
    case ExprKind::Select: {
      if (vector_mode() && is_whole_vector_select(e, lane_var_)) {
        // The condition is the same for every lane: a scalar one, and only the taken branch
        // is computed (its loads may lie outside the other branch's buffer).
        const ExprEmitter scalar(task_, names_);
        return "(" + scalar.emit(e->args[0]) + " ? " + emit(e->args[1]) + " : " + emit(e->args[2]) +
               ")";
      }
      if (vector_mode() && is_lane_range(e->args[0], lane_var_)) {
        // The lanes where the condition holds; loads under it read only those.
        std::string chain;
        range_chain(e->args[0], &chain);
        ExprEmitter inner = *this;
        inner.guard_ =
            (guard_.empty() ? "ember_rt::LaneRange(" + lane_limit() + ")" : guard_) + chain;
        return "ember_rt::guard(" + inner.guard_ + ", " + inner.emit(e->args[1]) + ", " +
               emit(e->args[2]) + ")";
      }
      std::string c = emit(e->args[0]), a = emit(e->args[1]), b = emit(e->args[2]);
      if (vector_mode()) return "ember_rt::select(" + c + ", " + a + ", " + b + ")";
      return "(" + c + " ? " + a + " : " + b + ")";
    }
    case ExprKind::Cast: return emit_cast(e);
    case ExprKind::Random: return emit_random(e);
  }
  return "";
}

std::string ExprEmitter::store(int b, const std::vector<Expr>& indices,
                               const std::string& value) const {
  DType t = task_.buffers.at(b).dtype;
  std::string ptr = "b" + std::to_string(b);
  std::string off = emit_index(offset(b, indices));
  if (!vector_mode()) {
    if (is_low_precision(t)) return ptr + "[" + off + "] = " + storage_type(t) + "(" + value + ");";
    return ptr + "[" + off + "] = " + value + ";";
  }
  std::string suffix = t == DType::bfloat16 ? "_bf16" : t == DType::float16 ? "_f16" : "";
  if (!partial_.empty())
    return "(" + value + ").store_partial" + suffix + "(" + ptr + " + " + off + ", " + partial_ +
           ");";
  return "(" + value + ").store" + suffix + "(" + ptr + " + " + off + ");";
}

}  // namespace ember::codegen
