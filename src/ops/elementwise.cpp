// Elementwise operators: unary math, binary arithmetic and comparisons with numpy
// broadcasting, where, cast.
//
// float16 and bfloat16 values are computed in float32: loads are cast up, the result is
// cast back to the output dtype (the code generator converts at loads and stores).
#include "common.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

using ir::BinaryOp;
using ir::UnaryOp;

// Which input dtypes a unary operator takes.
enum class Domain {
  Float,            // floating point only (math functions)
  Signed,           // floating point or integer (neg, abs, relu)
  FloatOrIdentity,  // floating point; on integers the operator is the identity (floor, ...)
  Any,              // every dtype (logical_not)
};

TensorType same_type(const TensorType& t, DType dtype) {
  return TensorType{dtype, t.shape, t.device};
}

void check_domain(const std::string& op, const TensorType& t, Domain domain) {
  switch (domain) {
    case Domain::Float:
      check_float(op, t);
      break;
    case Domain::Signed:
    case Domain::FloatOrIdentity:
      check_not_bool(op, t);
      break;
    case Domain::Any:
      break;
  }
}

// e != 0 as bool (e itself when it already is bool).
Expr to_bool(const Expr& e) {
  if (e.dtype() == DType::boolean) return e;
  const Expr c = to_compute(e);
  return ir::binary(BinaryOp::Ne, c, ir::const_of(0, c.dtype()));
}

// The unary operator on a loaded value of an integer dtype.
Expr integer_unary(UnaryOp op, const Expr& x) {
  const Expr zero = ir::const_of(0, x.dtype());
  switch (op) {
    case UnaryOp::Neg:
      return ir::binary(BinaryOp::Sub, zero, x);
    case UnaryOp::Abs:
      return ir::select(ir::binary(BinaryOp::Lt, x, zero), ir::binary(BinaryOp::Sub, zero, x), x);
    case UnaryOp::Relu:
      return ir::binary(BinaryOp::Max, x, zero);
    default:
      return x;  // floor, ceil, round of an integer
  }
}

OpDef unary_def(const std::string& name, const std::string& title, UnaryOp op, Domain domain) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Elementwise;
  d.num_inputs = 1;
  d.infer = [name, domain](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity(name, in, 1);
    check_domain(name, in[0], domain);
    const DType out = domain == Domain::Any ? DType::boolean : in[0].dtype;
    return std::vector<TensorType>{same_type(in[0], out)};
  };
  d.compute = [op](const ComputeArgs& a) {
    const Expr x = a.load(0, a.idx);
    if (op == UnaryOp::Not) {
      return x.dtype() == DType::boolean ? ir::unary(UnaryOp::Not, x)
                                         : ir::binary(BinaryOp::Eq, to_compute(x),
                                                      ir::const_of(0, compute_dtype(x.dtype())));
    }
    if (!is_float(x.dtype())) return cast_to(integer_unary(op, x), a.output.dtype);
    return cast_to(ir::unary(op, to_compute(x)), a.output.dtype);
  };
  return d;
}

// How a binary operator treats dtypes.
enum class BinaryKind {
  Arith,    // same dtype, not bool; the output has that dtype
  Div,      // like Arith, but integers divide as float32 (true division)
  Pow,      // like Arith; integers are raised in float64 and converted back
  Integer,  // like Arith, for integers only (floor division and modulo by data)
  Compare,  // same dtype; bool output
  Logical,  // any dtypes, each read as != 0; bool output
};

OpDef binary_def(const std::string& name, const std::string& title, BinaryOp op, BinaryKind kind) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Elementwise;
  d.num_inputs = 2;
  d.infer = [name, kind](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity(name, in, 2);
    const Device device = common_device(name, in);
    if (kind != BinaryKind::Logical) check_same_dtype(name, in[0], in[1]);
    if (kind == BinaryKind::Arith || kind == BinaryKind::Div || kind == BinaryKind::Pow) {
      check_not_bool(name, in[0]);
    }
    EMBER_CHECK(kind != BinaryKind::Integer || is_integer(in[0].dtype),
                name << ": ember implements it for integer tensors, got " << in[0].str()
                     << "; for floating point use floor(a / b) (and a - floor(a / b) * b)");
    DType out = in[0].dtype;
    if (kind == BinaryKind::Compare || kind == BinaryKind::Logical) out = DType::boolean;
    if (kind == BinaryKind::Div && !is_float(out)) out = DType::float32;
    return std::vector<TensorType>{
        TensorType{out, broadcast_shapes(name, in[0].shape, in[1].shape), device}};
  };
  d.compute = [op, kind](const ComputeArgs& a) {
    Expr x = a.load(0, broadcast_index(a.idx, a.inputs[0].shape));
    Expr y = a.load(1, broadcast_index(a.idx, a.inputs[1].shape));
    if (kind == BinaryKind::Logical) return ir::binary(op, to_bool(x), to_bool(y));
    DType work = compute_dtype(x.dtype());
    if (kind == BinaryKind::Div && !is_float(work)) work = DType::float32;
    if (kind == BinaryKind::Pow && !is_float(work)) work = DType::float64;
    const Expr r = ir::binary(op, cast_to(x, work), cast_to(y, work));
    return cast_to(r, a.output.dtype);
  };
  return d;
}

}  // namespace

// ---- unary ----

EMBER_REGISTER_OP { return unary_def("neg", "Neg", UnaryOp::Neg, Domain::Signed); }
EMBER_REGISTER_OP { return unary_def("abs", "Abs", UnaryOp::Abs, Domain::Signed); }
EMBER_REGISTER_OP { return unary_def("relu", "Relu", UnaryOp::Relu, Domain::Signed); }
EMBER_REGISTER_OP { return unary_def("exp", "Exp", UnaryOp::Exp, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("log", "Log", UnaryOp::Log, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("sqrt", "Sqrt", UnaryOp::Sqrt, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("rsqrt", "Rsqrt", UnaryOp::Rsqrt, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("sigmoid", "Sigmoid", UnaryOp::Sigmoid, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("tanh", "Tanh", UnaryOp::Tanh, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("gelu", "Gelu", UnaryOp::GeluErf, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("gelu_tanh", "GeluTanh", UnaryOp::GeluTanh, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("silu", "Silu", UnaryOp::Silu, Domain::Float); }
EMBER_REGISTER_OP { return unary_def("erf", "Erf", UnaryOp::Erf, Domain::Float); }
EMBER_REGISTER_OP {
  return unary_def("reciprocal", "Reciprocal", UnaryOp::Reciprocal, Domain::Float);
}
EMBER_REGISTER_OP { return unary_def("floor", "Floor", UnaryOp::Floor, Domain::FloatOrIdentity); }
EMBER_REGISTER_OP { return unary_def("ceil", "Ceil", UnaryOp::Ceil, Domain::FloatOrIdentity); }
EMBER_REGISTER_OP { return unary_def("round", "Round", UnaryOp::Round, Domain::FloatOrIdentity); }
EMBER_REGISTER_OP { return unary_def("logical_not", "LogicalNot", UnaryOp::Not, Domain::Any); }

// ---- binary ----

EMBER_REGISTER_OP { return binary_def("add", "Add", BinaryOp::Add, BinaryKind::Arith); }
EMBER_REGISTER_OP { return binary_def("sub", "Sub", BinaryOp::Sub, BinaryKind::Arith); }
EMBER_REGISTER_OP { return binary_def("mul", "Mul", BinaryOp::Mul, BinaryKind::Arith); }
EMBER_REGISTER_OP { return binary_def("div", "Div", BinaryOp::Div, BinaryKind::Div); }
EMBER_REGISTER_OP { return binary_def("pow", "Pow", BinaryOp::Pow, BinaryKind::Pow); }
// Python / torch semantics (the quotient rounds down, the remainder takes the divisor's
// sign); a zero divisor is reported at run time (ember::DataError), as torch raises.
EMBER_REGISTER_OP {
  return binary_def("floor_divide", "FloorDivide", BinaryOp::FloorDiv, BinaryKind::Integer);
}
EMBER_REGISTER_OP {
  return binary_def("remainder", "Remainder", BinaryOp::Mod, BinaryKind::Integer);
}
EMBER_REGISTER_OP { return binary_def("maximum", "Maximum", BinaryOp::Max, BinaryKind::Arith); }
EMBER_REGISTER_OP { return binary_def("minimum", "Minimum", BinaryOp::Min, BinaryKind::Arith); }
EMBER_REGISTER_OP { return binary_def("eq", "Equal", BinaryOp::Eq, BinaryKind::Compare); }
EMBER_REGISTER_OP { return binary_def("ne", "NotEqual", BinaryOp::Ne, BinaryKind::Compare); }
EMBER_REGISTER_OP { return binary_def("lt", "Less", BinaryOp::Lt, BinaryKind::Compare); }
EMBER_REGISTER_OP { return binary_def("le", "LessEqual", BinaryOp::Le, BinaryKind::Compare); }
EMBER_REGISTER_OP { return binary_def("gt", "Greater", BinaryOp::Gt, BinaryKind::Compare); }
EMBER_REGISTER_OP { return binary_def("ge", "GreaterEqual", BinaryOp::Ge, BinaryKind::Compare); }
EMBER_REGISTER_OP {
  return binary_def("logical_and", "LogicalAnd", BinaryOp::And, BinaryKind::Logical);
}
EMBER_REGISTER_OP {
  return binary_def("logical_or", "LogicalOr", BinaryOp::Or, BinaryKind::Logical);
}

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
