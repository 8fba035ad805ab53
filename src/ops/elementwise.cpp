// Elementwise operators: unary math, binary arithmetic and comparisons with numpy
// broadcasting, where, cast.
//
// float16 and bfloat16 values are computed in float32: loads are cast up, the result is
// cast back to the output dtype (the code generator converts at loads and stores).
#include "common.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

using ir::BinaryKind;
using ir::BinaryOp;
using ir::UnaryDomain;
using ir::UnaryOp;

TensorType same_type(const TensorType& t, DType dtype) {
  return TensorType{dtype, t.shape, t.device};
}

void check_domain(const std::string& op, const TensorType& t, UnaryDomain domain) {
  switch (domain) {
    case UnaryDomain::Float: check_float(op, t); break;
    case UnaryDomain::Signed:
    case UnaryDomain::FloatOrIdentity: check_not_bool(op, t); break;
    case UnaryDomain::Bitwise:
      EMBER_CHECK(t.dtype == DType::boolean || is_integer(t.dtype),
                  op << ": expected an integer or bool tensor, got " << t.str());
      break;
    case UnaryDomain::Predicate:
    case UnaryDomain::Logical: break;
  }
}

// e != 0 as bool (e itself when it already is bool).
Expr to_bool(const Expr& e) {
  if (e.dtype() == DType::boolean) return e;
  const Expr c = to_compute(e);
  return ir::binary(BinaryOp::Ne, c, ir::const_of(0, c.dtype()));
}

// The unary operator on a loaded value of an integer or bool dtype: the operators whose
// integer form is not the kernel's own (ir::unary on an integer) are written out here.
Expr integer_unary(UnaryOp op, const Expr& x) {
  const Expr zero = ir::const_of(0, x.dtype());
  switch (op) {
    case UnaryOp::Neg: return ir::binary(BinaryOp::Sub, zero, x);
    case UnaryOp::Abs:
      return ir::select(ir::binary(BinaryOp::Lt, x, zero), ir::binary(BinaryOp::Sub, zero, x), x);
    case UnaryOp::Relu: return ir::binary(BinaryOp::Max, x, zero);
    case UnaryOp::Sign: {
      const Expr one = ir::const_of(1, x.dtype());
      return ir::select(ir::binary(BinaryOp::Gt, x, zero), one,
                        ir::select(ir::binary(BinaryOp::Lt, x, zero),
                                   ir::binary(BinaryOp::Sub, zero, one), zero));
    }
    case UnaryOp::Isfinite:
      return ir::const_of(1, DType::boolean);  // integers are finite, never NaN or inf
    case UnaryOp::Isnan:
    case UnaryOp::Isinf: return ir::const_of(0, DType::boolean);
    case UnaryOp::Not:
      return x.dtype() == DType::boolean ? ir::unary(UnaryOp::Not, x)
                                         : ir::binary(BinaryOp::Eq, x, zero);
    case UnaryOp::BitNot:
      return x.dtype() == DType::boolean ? ir::unary(UnaryOp::Not, x) : ir::unary(op, x);
    default: return x;  // floor, ceil, round, trunc of an integer
  }
}

OpDef unary_def(const ir::UnaryOpInfo& row) {
  OpDef d;
  d.name = row.fn;
  d.title = row.title;
  d.kind = OpKind::Elementwise;
  d.num_inputs = 1;
  d.infer = [name = d.name, domain = row.domain](const std::vector<TensorType>& in,
                                                 const OpAttrs&) {
    check_arity(name, in, 1);
    check_domain(name, in[0], domain);
    const bool to_bool = domain == UnaryDomain::Predicate || domain == UnaryDomain::Logical;
    return std::vector<TensorType>{same_type(in[0], to_bool ? DType::boolean : in[0].dtype)};
  };
  d.compute = [op = row.op](const ComputeArgs& a) {
    const Expr x = a.load(0, a.idx);
    if (!is_float(x.dtype())) return cast_to(integer_unary(op, x), a.output.dtype);
    if (op == UnaryOp::Not) {
      const Expr c = to_compute(x);
      return ir::binary(BinaryOp::Eq, c, ir::const_of(0, c.dtype()));
    }
    return cast_to(ir::unary(op, to_compute(x)), a.output.dtype);
  };
  return d;
}

OpDef binary_def(const ir::BinaryOpInfo& row) {
  OpDef d;
  d.name = row.fn;
  d.title = row.title;
  d.kind = OpKind::Elementwise;
  d.num_inputs = 2;
  d.infer = [name = d.name, kind = row.kind](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity(name, in, 2);
    const Device device = common_device(name, in);
    if (kind != BinaryKind::Logical) check_same_dtype(name, in[0], in[1]);
    switch (kind) {
      case BinaryKind::Arith:
      case BinaryKind::Div:
      case BinaryKind::Pow:
      case BinaryKind::Remainder: check_not_bool(name, in[0]); break;
      case BinaryKind::Integer:
        EMBER_CHECK(is_integer(in[0].dtype),
                    name << ": ember implements it for integer tensors, got " << in[0].str()
                         << "; for floating point use floor(a / b)");
        break;
      case BinaryKind::Float: check_float(name, in[0]); break;
      case BinaryKind::Bitwise:
        EMBER_CHECK(is_integer(in[0].dtype) || in[0].dtype == DType::boolean,
                    name << ": expected integer or bool tensors, got " << in[0].str());
        break;
      case BinaryKind::Shift:
        EMBER_CHECK(is_integer(in[0].dtype),
                    name << ": expected integer tensors, got " << in[0].str());
        break;
      case BinaryKind::Compare:
      case BinaryKind::Logical: break;
    }
    DType out = in[0].dtype;
    if (kind == BinaryKind::Compare || kind == BinaryKind::Logical) out = DType::boolean;
    if (kind == BinaryKind::Div && !is_float(out)) out = DType::float32;
    return std::vector<TensorType>{
        TensorType{out, broadcast_shapes(name, in[0].shape, in[1].shape), device}};
  };
  d.compute = [op = row.op, kind = row.kind](const ComputeArgs& a) {
    Expr x = a.load(0, broadcast_index(a.idx, a.inputs[0].shape));
    Expr y = a.load(1, broadcast_index(a.idx, a.inputs[1].shape));
    if (kind == BinaryKind::Logical) return ir::binary(op, to_bool(x), to_bool(y));
    if (kind == BinaryKind::Bitwise && x.dtype() == DType::boolean) return ir::binary(op, x, y);
    DType work = compute_dtype(x.dtype());
    if (kind == BinaryKind::Div && !is_float(work)) work = DType::float32;
    if (kind == BinaryKind::Pow && !is_float(work)) work = DType::float64;
    const Expr r = ir::binary(op, cast_to(x, work), cast_to(y, work));
    return cast_to(r, a.output.dtype);
  };
  return d;
}

// Every row of the scalar operator tables with an operator name, registered.
[[maybe_unused]] const bool registered_scalar_ops = [] {
  for (auto* row = ir::unary_ops_begin(); row != ir::unary_ops_end(); ++row) {
    register_op_def(unary_def(*row));
  }
  for (auto* row = ir::binary_ops_begin(); row != ir::binary_ops_end(); ++row) {
    register_op_def(binary_def(*row));
  }
  return true;
}();

}  // namespace

// ---- where ----

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "where";
  d.title = "Where";
  d.kind = OpKind::Elementwise;
  d.num_inputs = 3;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity("where", in, 3);
    const Device device = common_device("where", in);
    EMBER_CHECK(in[0].dtype == DType::boolean,
                "where: the condition must be a bool tensor, got "
                    << dtype_name(in[0].dtype)
                    << "; compare first (e.g. x > 0) or cast it with ember.ops.cast");
    check_same_dtype("where", in[1], in[2]);
    Shape s = broadcast_shapes("where", in[0].shape, in[1].shape);
    s = broadcast_shapes("where", s, in[2].shape);
    return std::vector<TensorType>{TensorType{in[1].dtype, s, device}};
  };
  d.compute = [](const ComputeArgs& a) {
    const Expr c = a.load(0, broadcast_index(a.idx, a.inputs[0].shape));
    const Expr x = a.load(1, broadcast_index(a.idx, a.inputs[1].shape));
    const Expr y = a.load(2, broadcast_index(a.idx, a.inputs[2].shape));
    return ir::select(c, x, y);
  };
  return d;
}

// ---- cast ----

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "cast";
  d.title = "Cast";
  d.kind = OpKind::Elementwise;
  d.num_inputs = 1;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity("cast", in, 1);
    return std::vector<TensorType>{same_type(in[0], attrs_as<CastAttrs>(attrs).dtype)};
  };
  // float -> integer truncates toward zero (C++ conversion); anything -> bool is != 0;
  // float16 / bfloat16 go through float32 on either side.
  d.compute = [](const ComputeArgs& a) {
    const DType to = a.output.dtype;
    const Expr x = a.load(0, a.idx);
    if (x.dtype() == to) return x;
    if (to == DType::boolean) return to_bool(x);
    Expr e = to_compute(x);
    if (compute_dtype(to) != to) e = cast_to(e, DType::float32);
    return cast_to(e, to);
  };
  return d;
}

}  // namespace ember::opdefs
