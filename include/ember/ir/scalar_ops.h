// The scalar operators: one table row per operator, and everything else derived from it.
//
// Each row names an operator once. From the table come the ir::UnaryOp / ir::BinaryOp
// enumerators, their names in printed IR, the cost class the code generator weighs fusion
// and row splitting with, whether kernels vectorize it, the registered elementwise operator
// (its name, title and dtype rule), the C++ function in ember::ops, the Python function in
// ember.ops, and the torch functions it converts (python/ember/torch/converters/scalar.py
// reads the table through ember._C.ops.scalar_op_table()).
//
// An operator's implementation is the function `ember_rt::NAME` (NAME = the first column)
// in runtime_include/ember_rt/, overloaded for float, ember_rt::vf and double: generated
// kernels call it on float32 vectors, on a vector's scalar tail and on float64. Integer
// dtypes use the integer forms in src/ops/elementwise.cpp (integer_unary / the binary
// kinds) and src/codegen/expr_emitter.cpp.
//
// Adding a unary float operator: one row below, `ember_rt::NAME` for float / vf / double
// (runtime_include/ember_rt/math*.h), and a test (tests/python/test_scalar_ops.py takes
// every row and checks it against torch at edge values).
#pragma once

#include <cstdint>

// EMBER_UNARY_OPS(X): X(Enum, name, fn, Title, cost, domain, doc)
//   Enum    the ir::UnaryOp enumerator
//   name    its name in printed IR and its ember_rt function
//   fn      the registered operator, the ember::ops / ember.ops function and the torch name
//   cost    Cheap (a few instructions) | Math (a polynomial) | Lanewise (a loop over lanes in
//           double precision: not worth a vector)
//   domain  which dtypes it takes and what it returns (UnaryDomain below)
#define EMBER_UNARY_OPS(X)                                                                       \
  X(Neg, neg, neg, Neg, Cheap, Signed, "-x")                                                     \
  X(Abs, abs, abs, Abs, Cheap, Signed, "|x|")                                                    \
  X(Exp, exp, exp, Exp, Math, Float, "e ** x")                                                   \
  X(Log, log, log, Log, Math, Float, "Natural logarithm.")                                       \
  X(Sqrt, sqrt, sqrt, Sqrt, Math, Float, "Square root.")                                         \
  X(Rsqrt, rsqrt, rsqrt, Rsqrt, Math, Float, "1 / sqrt(x)")                                      \
  X(Sigmoid, sigmoid, sigmoid, Sigmoid, Math, Float, "1 / (1 + exp(-x))")                        \
  X(Tanh, tanh, tanh, Tanh, Math, Float, "Hyperbolic tangent.")                                  \
  X(Relu, relu, relu, Relu, Cheap, Signed, "max(x, 0)")                                          \
  X(Erf, erf, erf, Erf, Math, Float, "The error function.")                                      \
  X(GeluErf, gelu_erf, gelu, Gelu, Math, Float,                                                  \
    "GELU, the exact form: x * (1 + erf(x / sqrt(2))) / 2.")                                     \
  X(GeluTanh, gelu_tanh, gelu_tanh, GeluTanh, Math, Float,                                       \
    "GELU, the tanh approximation: x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2.")      \
  X(Silu, silu, silu, Silu, Math, Float, "x * sigmoid(x)")                                       \
  X(Floor, floor, floor, Floor, Cheap, FloatOrIdentity, "Rounds down (integers unchanged).")     \
  X(Ceil, ceil, ceil, Ceil, Cheap, FloatOrIdentity, "Rounds up (integers unchanged).")           \
  X(Round, round, round, Round, Cheap, FloatOrIdentity,                                          \
    "Rounds half to even (integers unchanged).")                                                 \
  X(Not, logical_not, logical_not, LogicalNot, Cheap, Logical, "not x, as bool.")                \
  X(Reciprocal, reciprocal, reciprocal, Reciprocal, Math, Float, "1 / x")                        \
  X(Sin, sin, sin, Sin, Math, Float, "Sine.")                                                    \
  X(Cos, cos, cos, Cos, Math, Float, "Cosine.")                                                  \
  X(Tan, tan, tan, Tan, Math, Float, "Tangent.")                                                 \
  X(Asin, asin, asin, Asin, Math, Float, "Arcsine (NaN outside [-1, 1]).")                       \
  X(Acos, acos, acos, Acos, Math, Float, "Arccosine (NaN outside [-1, 1]).")                     \
  X(Atan, atan, atan, Atan, Math, Float, "Arctangent.")                                          \
  X(Sinh, sinh, sinh, Sinh, Math, Float, "Hyperbolic sine.")                                     \
  X(Cosh, cosh, cosh, Cosh, Math, Float, "Hyperbolic cosine.")                                   \
  X(Asinh, asinh, asinh, Asinh, Math, Float, "Inverse hyperbolic sine.")                         \
  X(Acosh, acosh, acosh, Acosh, Math, Float, "Inverse hyperbolic cosine (NaN below 1).")         \
  X(Atanh, atanh, atanh, Atanh, Math, Float, "Inverse hyperbolic tangent.")                      \
  X(Log1p, log1p, log1p, Log1p, Math, Float, "log(1 + x), accurate near 0.")                     \
  X(Expm1, expm1, expm1, Expm1, Math, Float, "exp(x) - 1, accurate near 0.")                     \
  X(Log2, log2, log2, Log2, Math, Float, "Base-2 logarithm.")                                    \
  X(Log10, log10, log10, Log10, Math, Float, "Base-10 logarithm.")                               \
  X(Exp2, exp2, exp2, Exp2, Math, Float, "2 ** x")                                               \
  X(Erfc, erfc, erfc, Erfc, Math, Float, "1 - erf(x), accurate in the tail.")                    \
  X(Erfinv, erfinv, erfinv, Erfinv, Lanewise, Float, "The inverse error function.")              \
  X(Lgamma, lgamma, lgamma, Lgamma, Lanewise, Float, "log |gamma(x)|")                           \
  X(Digamma, digamma, digamma, Digamma, Lanewise, Float, "d/dx log gamma(x)")                    \
  X(Ndtr, ndtr, ndtr, Ndtr, Lanewise, Float, "The standard normal CDF.")                         \
  X(I0, i0, i0, I0, Lanewise, Float,                                                             \
    "The modified Bessel function of the first kind, order 0 (also modified_bessel_i0).")        \
  X(I0e, i0e, i0e, I0e, Lanewise, Float, "exp(-|x|) i0(x)")                                      \
  X(I1, i1, i1, I1, Lanewise, Float,                                                             \
    "The modified Bessel function of the first kind, order 1 (also modified_bessel_i1).")        \
  X(I1e, i1e, i1e, I1e, Lanewise, Float, "exp(-|x|) i1(x)")                                      \
  X(ModifiedBesselK0, modified_bessel_k0, modified_bessel_k0, ModifiedBesselK0, Lanewise, Float, \
    "The modified Bessel function of the second kind, order 0 (inf at 0, NaN below).")           \
  X(ModifiedBesselK1, modified_bessel_k1, modified_bessel_k1, ModifiedBesselK1, Lanewise, Float, \
    "The modified Bessel function of the second kind, order 1 (inf at 0, NaN below).")           \
  X(ScaledModifiedBesselK0, scaled_modified_bessel_k0, scaled_modified_bessel_k0,                \
    ScaledModifiedBesselK0, Lanewise, Float, "exp(x) modified_bessel_k0(x)")                     \
  X(ScaledModifiedBesselK1, scaled_modified_bessel_k1, scaled_modified_bessel_k1,                \
    ScaledModifiedBesselK1, Lanewise, Float, "exp(x) modified_bessel_k1(x)")                     \
  X(BesselJ0, bessel_j0, bessel_j0, BesselJ0, Lanewise, Float,                                   \
    "The Bessel function of the first kind, order 0.")                                           \
  X(BesselJ1, bessel_j1, bessel_j1, BesselJ1, Lanewise, Float,                                   \
    "The Bessel function of the first kind, order 1.")                                           \
  X(BesselY0, bessel_y0, bessel_y0, BesselY0, Lanewise, Float,                                   \
    "The Bessel function of the second kind, order 0 (-inf at 0, NaN below).")                   \
  X(BesselY1, bessel_y1, bessel_y1, BesselY1, Lanewise, Float,                                   \
    "The Bessel function of the second kind, order 1 (-inf at 0, NaN below).")                   \
  X(SphericalBesselJ0, spherical_bessel_j0, spherical_bessel_j0, SphericalBesselJ0, Lanewise,    \
    Float, "sin(x) / x, 1 at 0.")                                                                \
  X(AiryAi, airy_ai, airy_ai, AiryAi, Lanewise, Float, "The Airy function Ai (NaN at +-inf).")   \
  X(Erfcx, erfcx, erfcx, Erfcx, Lanewise, Float,                                                 \
    "exp(x^2) erfc(x), the scaled complementary error function.")                                \
  X(LogNdtr, log_ndtr, log_ndtr, LogNdtr, Lanewise, Float,                                       \
    "log(ndtr(x)), accurate in both tails.")                                                     \
  X(Ndtri, ndtri, ndtri, Ndtri, Lanewise, Float, "The inverse of ndtr (NaN outside [0, 1]).")    \
  X(Sign, sign, sign, Sign, Cheap, Signed, "-1, 0 or 1 (0 for NaN, as torch).")                  \
  X(Trunc, trunc, trunc, Trunc, Cheap, FloatOrIdentity, "Rounds toward zero.")                   \
  X(Frac, frac, frac, Frac, Cheap, Float, "x - trunc(x)")                                        \
  X(Isnan, isnan, isnan, IsNan, Cheap, Predicate, "x is NaN, as bool.")                          \
  X(Isinf, isinf, isinf, IsInf, Cheap, Predicate, "x is +inf or -inf, as bool.")                 \
  X(Isfinite, isfinite, isfinite, IsFinite, Cheap, Predicate,                                    \
    "x is neither infinite nor NaN, as bool.")                                                   \
  X(Softplus, softplus, softplus, Softplus, Math, Float,                                         \
    "log(1 + exp(x)), and x itself above 20 (torch's default beta = 1, threshold = 20).")        \
  X(Mish, mish, mish, Mish, Math, Float, "x * tanh(softplus(x))")                                \
  X(LogSigmoid, logsigmoid, logsigmoid, LogSigmoid, Math, Float, "log(sigmoid(x)), stable.")     \
  X(Selu, selu, selu, Selu, Math, Float, "SELU with torch's constants.")                         \
  X(BitNot, bitwise_not, bitwise_not, BitwiseNot, Cheap, Bitwise,                                \
    "~x for integers, not x for bool.")

// EMBER_BINARY_OPS(X): X(Enum, name, fn, Title, cost, kind, doc)
//   name    its name in printed IR and its ember_rt function (float operands)
//   kind    how it treats dtypes (BinaryKind below)
#define EMBER_BINARY_OPS(X)                                                                       \
  X(Add, add, add, Add, Cheap, Arith, "a + b")                                                    \
  X(Sub, sub, sub, Sub, Cheap, Arith, "a - b")                                                    \
  X(Mul, mul, mul, Mul, Cheap, Arith, "a * b")                                                    \
  X(Div, div, div, Div, Cheap, Div, "a / b (true division: integers give float32)")               \
  X(FloorDiv, floordiv, floor_divide, FloorDivide, Cheap, Integer,                                \
    "a // b for integers (rounds down); a zero divisor raises ember.DataError.")                  \
  X(Mod, pymod, remainder, Remainder, Cheap, Remainder,                                           \
    "a % b with the divisor's sign (Python and torch.remainder); an integer zero divisor "        \
    "raises ember.DataError, a float one gives NaN.")                                             \
  X(Pow, pow, pow, Pow, Math, Pow, "a ** b")                                                      \
  X(Max, max, maximum, Maximum, Cheap, Arith, "Elementwise maximum (NaN if either is NaN).")      \
  X(Min, min, minimum, Minimum, Cheap, Arith, "Elementwise minimum (NaN if either is NaN).")      \
  X(Eq, eq, equal, Equal, Cheap, Compare, "a == b, as bool.")                                     \
  X(Ne, ne, not_equal, NotEqual, Cheap, Compare, "a != b, as bool.")                              \
  X(Lt, lt, less, Less, Cheap, Compare, "a < b, as bool.")                                        \
  X(Le, le, less_equal, LessEqual, Cheap, Compare, "a <= b, as bool.")                            \
  X(Gt, gt, greater, Greater, Cheap, Compare, "a > b, as bool.")                                  \
  X(Ge, ge, greater_equal, GreaterEqual, Cheap, Compare, "a >= b, as bool.")                      \
  X(And, logical_and, logical_and, LogicalAnd, Cheap, Logical, "a and b, as bool.")               \
  X(Or, logical_or, logical_or, LogicalOr, Cheap, Logical, "a or b, as bool.")                    \
  X(Xor, logical_xor, logical_xor, LogicalXor, Cheap, Logical, "a xor b, as bool.")               \
  X(Atan2, atan2, atan2, Atan2, Math, Float,                                                      \
    "The angle of the point (b, a): atan(a / b) in "                                              \
    "the right quadrant.")                                                                        \
  X(Hypot, hypot, hypot, Hypot, Math, Float, "sqrt(a * a + b * b) without overflow.")             \
  X(Copysign, copysign, copysign, Copysign, Cheap, Float, "|a| with the sign of b.")              \
  X(Fmod, fmod, fmod, Fmod, Cheap, Remainder,                                                     \
    "a % b with the dividend's sign (C fmod, torch.fmod); an integer zero divisor raises "        \
    "ember.DataError, a float one gives NaN.")                                                    \
  X(BitAnd, bitwise_and, bitwise_and, BitwiseAnd, Cheap, Bitwise, "a & b (integers and bool).")   \
  X(BitOr, bitwise_or, bitwise_or, BitwiseOr, Cheap, Bitwise, "a | b (integers and bool).")       \
  X(BitXor, bitwise_xor, bitwise_xor, BitwiseXor, Cheap, Bitwise, "a ^ b (integers and bool).")   \
  X(Shl, shl, bitwise_left_shift, BitwiseLeftShift, Cheap, Shift,                                 \
    "a << b for integers; a shift by the bit width or more gives 0, as torch.")                   \
  X(Shr, shr, bitwise_right_shift, BitwiseRightShift, Cheap, Shift,                               \
    "a >> b for integers, arithmetic for signed types; a shift by the bit width or more "         \
    "gives 0 or -1, as torch.")                                                                   \
  X(Zeta, zeta, zeta, Zeta, Lanewise, Float,                                                      \
    "The Hurwitz zeta function sum_k (b + k)^-a (inf at a = 1, NaN below).")                      \
  X(Igamma, igamma, igamma, Igamma, Lanewise, Float,                                              \
    "The regularized lower incomplete gamma function P(a, b).")                                   \
  X(Igammac, igammac, igammac, Igammac, Lanewise, Float,                                          \
    "The regularized upper incomplete gamma function Q(a, b) = 1 - P(a, b).")                     \
  X(Nextafter, nextafter, nextafter, Nextafter, Lanewise, Float,                                  \
    "The next representable value after a toward b.")                                             \
  X(ChebyshevPolynomialT, chebyshev_polynomial_t, chebyshev_polynomial_t, ChebyshevPolynomialT,   \
    Lanewise, Float,                                                                              \
    "The Chebyshev polynomial of the first kind T_n(x), n = trunc(b) (0 for n < 0).")             \
  X(ChebyshevPolynomialU, chebyshev_polynomial_u, chebyshev_polynomial_u, ChebyshevPolynomialU,   \
    Lanewise, Float,                                                                              \
    "The Chebyshev polynomial of the second kind U_n(x), n = trunc(b) (0 for n < 0).")            \
  X(ChebyshevPolynomialV, chebyshev_polynomial_v, chebyshev_polynomial_v, ChebyshevPolynomialV,   \
    Lanewise, Float,                                                                              \
    "The Chebyshev polynomial of the third kind V_n(x), n = trunc(b) (0 for n < 0).")             \
  X(ChebyshevPolynomialW, chebyshev_polynomial_w, chebyshev_polynomial_w, ChebyshevPolynomialW,   \
    Lanewise, Float,                                                                              \
    "The Chebyshev polynomial of the fourth kind W_n(x), n = trunc(b) (0 for n < 0).")            \
  X(ShiftedChebyshevPolynomialT, shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_t,  \
    ShiftedChebyshevPolynomialT, Lanewise, Float, "T_n(2x - 1), n = trunc(b) (0 for n < 0).")     \
  X(ShiftedChebyshevPolynomialU, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_u,  \
    ShiftedChebyshevPolynomialU, Lanewise, Float, "U_n(2x - 1), n = trunc(b) (0 for n < 0).")     \
  X(ShiftedChebyshevPolynomialV, shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_v,  \
    ShiftedChebyshevPolynomialV, Lanewise, Float, "V_n(2x - 1), n = trunc(b) (0 for n < 0).")     \
  X(ShiftedChebyshevPolynomialW, shifted_chebyshev_polynomial_w, shifted_chebyshev_polynomial_w,  \
    ShiftedChebyshevPolynomialW, Lanewise, Float, "W_n(2x - 1), n = trunc(b) (0 for n < 0).")     \
  X(HermitePolynomialH, hermite_polynomial_h, hermite_polynomial_h, HermitePolynomialH, Lanewise, \
    Float,                                                                                        \
    "The physicists' Hermite polynomial H_n(x), n = trunc(b) (0 for n < 0; NaN past n = 128 in "  \
    "float32, 512 in float64, as torch).")                                                        \
  X(HermitePolynomialHe, hermite_polynomial_he, hermite_polynomial_he, HermitePolynomialHe,       \
    Lanewise, Float,                                                                              \
    "The probabilists' Hermite polynomial He_n(x), n = trunc(b) (0 for n < 0; NaN past n = 128 "  \
    "in float32, 512 in float64, as torch).")                                                     \
  X(LaguerrePolynomialL, laguerre_polynomial_l, laguerre_polynomial_l, LaguerrePolynomialL,       \
    Lanewise, Float, "The Laguerre polynomial L_n(x), n = trunc(b) (0 for n < 0).")               \
  X(LegendrePolynomialP, legendre_polynomial_p, legendre_polynomial_p, LegendrePolynomialP,       \
    Lanewise, Float, "The Legendre polynomial P_n(x), n = trunc(b) (0 for n < 0).")

namespace ember::ir {

// What a scalar operator costs in a kernel, per element.
enum class OpCost : uint8_t {
  Cheap,     // a few instructions
  Math,      // a polynomial or a division
  Lanewise,  // each vector lane in double precision
};

// Which dtypes a unary operator takes and what it returns.
enum class UnaryDomain : uint8_t {
  Float,            // floating point only (math functions); the input's dtype
  Signed,           // floating point or integer (neg, abs, relu, sign)
  FloatOrIdentity,  // floating point; the identity on integers (floor, ceil, round, trunc)
  Predicate,        // any dtype but bool; returns bool (isnan)
  Logical,          // any dtype, read as != 0; returns bool (logical_not)
  Bitwise,          // integers and bool (bitwise_not)
};

// How a binary operator treats dtypes. Both operands always have the same dtype except for
// Logical.
enum class BinaryKind : uint8_t {
  Arith,      // not bool; the output has the operands' dtype
  Div,        // like Arith, but integers divide as float32 (true division)
  Pow,        // like Arith; integers are raised in float64 and converted back
  Integer,    // integers only (floor division by data)
  Remainder,  // not bool; integers report a zero divisor at run time, floats give NaN
  Float,      // floating point only
  Compare,    // not bool-only; bool output
  Logical,    // any dtypes, each read as != 0; bool output
  Bitwise,    // integers and bool
  Shift,      // integers
};

#define EMBER_SCALAR_OP_ENUM(Enum, ...) Enum,
enum class UnaryOp : uint8_t { EMBER_UNARY_OPS(EMBER_SCALAR_OP_ENUM) };
enum class BinaryOp : uint8_t { EMBER_BINARY_OPS(EMBER_SCALAR_OP_ENUM) };
#undef EMBER_SCALAR_OP_ENUM

// One row of a table, for the code that walks every operator.
struct UnaryOpInfo {
  UnaryOp op;
  const char* name;   // printed IR, ember_rt function
  const char* fn;     // registered operator, ember.ops function, torch name
  const char* title;  // the node title in printed graphs
  OpCost cost;
  UnaryDomain domain;
  const char* doc;
};
struct BinaryOpInfo {
  BinaryOp op;
  const char* name;
  const char* fn;
  const char* title;
  OpCost cost;
  BinaryKind kind;
  const char* doc;
};

const UnaryOpInfo& info(UnaryOp op);
const BinaryOpInfo& info(BinaryOp op);
// Every row, in table order.
const UnaryOpInfo* unary_ops_begin();
const UnaryOpInfo* unary_ops_end();
const BinaryOpInfo* binary_ops_begin();
const BinaryOpInfo* binary_ops_end();

inline const char* unary_name(UnaryOp op) { return info(op).name; }
inline const char* binary_name(BinaryOp op) { return info(op).name; }
// Whether the operator's result is bool whatever its operands are.
bool returns_bool(UnaryOp op);
bool returns_bool(BinaryOp op);
bool is_comparison(BinaryOp op);

}  // namespace ember::ir
