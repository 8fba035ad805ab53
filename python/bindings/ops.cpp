// ember._C.ops: every function of ember/ops/ops.h, with Python-friendly arguments.
//
// Binary operators take tensors or Python numbers (a number takes the other operand's
// dtype); dims are an int, a list of ints or None; shapes are lists of ints and symbol names.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "bindings.h"
#include "ember/ops/op_def.h"
#include "ember/support/error.h"

namespace ember::py {

namespace {

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);
using ArgReduceFn = Tensor (*)(const Tensor&, int64_t, bool);

template <ReduceFn fn>
void def_reduce(nb::module_& m, const char* name, const char* doc) {
  m.def(
      name,
      [](const Tensor& x, const DimsArg& dims, bool keepdim) { return fn(x, dims.dims, keepdim); },
      nb::arg("x"), nb::arg("dims") = nb::none(), nb::arg("keepdim") = false, doc);
}

template <ArgReduceFn fn>
void def_arg_reduce(nb::module_& m, const char* name, const char* doc) {
  m.def(
      name, [](const Tensor& x, int64_t dim, bool keepdim) { return fn(x, dim, keepdim); },
      nb::arg("x"), nb::arg("dim"), nb::arg("keepdim") = false, doc);
}

const char* domain_name(ir::UnaryDomain d) {
  switch (d) {
    case ir::UnaryDomain::Float: return "float";
    case ir::UnaryDomain::Signed: return "signed";
    case ir::UnaryDomain::FloatOrIdentity: return "float_or_identity";
    case ir::UnaryDomain::Predicate: return "predicate";
    case ir::UnaryDomain::Logical: return "logical";
    case ir::UnaryDomain::Bitwise: return "bitwise";
  }
  return "";
}

const char* kind_name(ir::BinaryKind k) {
  switch (k) {
    case ir::BinaryKind::Arith: return "arith";
    case ir::BinaryKind::Div: return "div";
    case ir::BinaryKind::Pow: return "pow";
    case ir::BinaryKind::Integer: return "integer";
    case ir::BinaryKind::Remainder: return "remainder";
    case ir::BinaryKind::Float: return "float";
    case ir::BinaryKind::Compare: return "compare";
    case ir::BinaryKind::Logical: return "logical";
    case ir::BinaryKind::Bitwise: return "bitwise";
    case ir::BinaryKind::Shift: return "shift";
  }
  return "";
}

bool gelu_uses_tanh(const std::string& approximate) {
  if (approximate == "none") return false;
  if (approximate == "tanh") return true;
  EMBER_THROW("gelu: approximate must be 'none' (the exact erf form) or 'tanh', got '"
              << approximate << "'");
}

void bind_elementwise(nb::module_& m) {
  m.def(
      "gelu",
      [](const Tensor& x, const std::string& approximate) {
        return ops::gelu(x, gelu_uses_tanh(approximate));
      },
      nb::arg("x"), nb::arg("approximate") = "none",
      "GELU; approximate='tanh' uses the tanh approximation, 'none' the exact erf form.");
  // One function per row of the scalar operator tables (ember/ir/scalar_ops.h), unless bound
  // above with more arguments.
  for (auto* row = ir::unary_ops_begin(); row != ir::unary_ops_end(); ++row) {
    if (nb::hasattr(m, row->fn)) continue;
    m.def(
        row->fn, [op = row->op](const Tensor& x) { return ops::unary(op, x); }, nb::arg("x"),
        row->doc);
  }
  for (auto* row = ir::binary_ops_begin(); row != ir::binary_ops_end(); ++row) {
    if (nb::hasattr(m, row->fn)) continue;
    m.def(
        row->fn,
        [op = row->op, name = row->fn](const Operand& a, const Operand& b) {
          return ops::binary(op, operand_tensor(a, b, name), operand_tensor(b, a, name));
        },
        nb::arg("a"), nb::arg("b"), row->doc);
  }
  m.def(
      "scalar_op_table",
      [] {
        nb::list rows;
        for (auto* row = ir::unary_ops_begin(); row != ir::unary_ops_end(); ++row) {
          rows.append(nb::make_tuple(row->fn, 1, domain_name(row->domain)));
        }
        for (auto* row = ir::binary_ops_begin(); row != ir::binary_ops_end(); ++row) {
          rows.append(nb::make_tuple(row->fn, 2, kind_name(row->kind)));
        }
        return rows;
      },
      "The scalar operators as (name, arity, dtype rule) tuples, in table order; the dtype rule "
      "is the UnaryDomain or BinaryKind of ember/ir/scalar_ops.h in lower case.");
  m.def(
      "nan_to_num",
      [](const Tensor& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
        return ops::nan_to_num(x, nan, posinf, neginf);
      },
      nb::arg("x"), nb::arg("nan") = 0.0, nb::arg("posinf") = nb::none(),
      nb::arg("neginf") = nb::none(),
      "NaN, +inf and -inf replaced (by default: 0, the dtype's largest and lowest finite "
      "values).");
  m.def(
      "elu", [](const Tensor& x, double alpha) { return ops::elu(x, alpha); }, nb::arg("x"),
      nb::arg("alpha") = 1.0, "x above 0, alpha * (exp(x) - 1) below.");
  m.def(
      "celu", [](const Tensor& x, double alpha) { return ops::celu(x, alpha); }, nb::arg("x"),
      nb::arg("alpha") = 1.0, "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).");

  m.def(
      "where",
      [](const Tensor& cond, const Operand& a, const Operand& b) {
        return ops::where(cond, operand_tensor(a, b, "where"), operand_tensor(b, a, "where"));
      },
      nb::arg("cond"), nb::arg("a"), nb::arg("b"), "a where cond is true, else b.");
  m.def(
      "cast", [](const Tensor& x, const DTypeArg& dtype) { return ops::cast(x, dtype.get()); },
      nb::arg("x"), nb::arg("dtype"), "x converted to dtype.");
  m.def(
      "scalar", [](double value, const DTypeArg& dtype) { return ops::scalar(value, dtype.get()); },
      nb::arg("value"), nb::arg("dtype") = "float32", "A 0-d constant tensor.");
}

void bind_reductions(nb::module_& m) {
  def_reduce<ops::sum>(m, "sum", "Sum over dims (None: all; negative dims count from the end).");
  def_reduce<ops::mean>(m, "mean", "Mean over dims (None: all).");
  def_reduce<ops::max>(m, "max", "Maximum over dims (None: all).");
  def_reduce<ops::min>(m, "min", "Minimum over dims (None: all).");
  def_reduce<ops::prod>(m, "prod", "Product over dims (None: all).");
  def_arg_reduce<ops::argmax>(m, "argmax", "int64 index of the maximum along dim.");
  def_arg_reduce<ops::argmin>(m, "argmin", "int64 index of the minimum along dim.");
  m.def(
      "softmax", [](const Tensor& x, int64_t axis) { return ops::softmax(x, axis); }, nb::arg("x"),
      nb::arg("axis") = -1, "Softmax along axis.");
  m.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return ops::matmul(a, b); }, nb::arg("a"),
      nb::arg("b"), "Matrix product with numpy's matmul semantics.");
  m.def(
      "matmul_nt", [](const Tensor& a, const Tensor& b) { return ops::matmul_nt(a, b); },
      nb::arg("a"), nb::arg("b"),
      "a @ b^T with b stored [..., N, K] (a Linear layer's weight as stored), read in place.");
}

void bind_transforms(nb::module_& m) {
  m.def(
      "reshape",
      [](const Tensor& x, const ShapeArg& shape) { return ops::reshape(x, shape.get()); },
      nb::arg("x"), nb::arg("shape"), "x with a new shape; one dimension may be -1.");
  m.def(
      "transpose",
      [](const Tensor& x, int64_t dim0, int64_t dim1) { return ops::transpose(x, dim0, dim1); },
      nb::arg("x"), nb::arg("dim0"), nb::arg("dim1"), "Swaps two dimensions.");
  m.def(
      "permute", [](const Tensor& x, const DimsArg& perm) { return ops::permute(x, perm.dims); },
      nb::arg("x"), nb::arg("perm"), "Reorders the dimensions.");
  m.def(
      "flip", [](const Tensor& x, const DimsArg& dims) { return ops::flip(x, dims.dims); },
      nb::arg("x"), nb::arg("dims"), "The elements of each of dims in reverse order.");
  m.def(
      "flatten",
      [](const Tensor& x, int64_t start_dim, int64_t end_dim) {
        return ops::flatten(x, start_dim, end_dim);
      },
      nb::arg("x"), nb::arg("start_dim") = 0, nb::arg("end_dim") = -1,
      "Merges dimensions start_dim..end_dim into one.");
  m.def(
      "squeeze", [](const Tensor& x, const DimsArg& dims) { return ops::squeeze(x, dims.dims); },
      nb::arg("x"), nb::arg("dims") = nb::none(), "Removes size-1 dimensions (None: all of them).");
  m.def(
      "unsqueeze",
      [](const Tensor& x, const DimsArg& dims) { return ops::unsqueeze(x, dims.dims); },
      nb::arg("x"), nb::arg("dims"), "Inserts size-1 dimensions at dims.");
  m.def(
      "concat", [](const std::vector<Tensor>& xs, int64_t axis) { return ops::concat(xs, axis); },
      nb::arg("xs"), nb::arg("axis") = 0, "Joins tensors along axis.");
  m.def(
      "slice",
      [](const Tensor& x, const DimsArg& axes, const nb::object& starts, const nb::object& stops,
         const DimsArg& steps, bool clamp) {
        auto bounds = [&]<class T>(const nb::object& v, const char* what) {
          T out;
          if (!nb::try_cast<T>(v, out)) {
            EMBER_THROW("slice: " << what << " must be "
                                  << (clamp ? "an int or a list of ints"
                                            : "ints or size expressions ('n - 1')")
                                  << ", got " << nb::cast<std::string>(nb::repr(v)));
          }
          return out;
        };
        if (clamp) {
          return ops::slice(x, axes.dims, bounds.operator()<DimsArg>(starts, "starts").dims,
                            bounds.operator()<DimsArg>(stops, "stops").dims, steps.dims);
        }
        return ops::slice_exact(x, axes.dims, bounds.operator()<ShapeArg>(starts, "starts").get(),
                                bounds.operator()<ShapeArg>(stops, "stops").get(), steps.dims);
      },
      nb::arg("x"), nb::arg("axes"), nb::arg("starts"), nb::arg("stops"),
      nb::arg("steps") = nb::none(), nb::arg("clamp") = true,
      "Python-style slicing per axis (stops are clamped, steps >= 1; None: steps of 1). "
      "clamp=False: bounds may be size expressions ('n - 1') that the caller guarantees "
      "in range (0 <= start <= stop <= size; negative constants count from the end), and "
      "the length is exactly (stop - start) / step rounded up.");
  m.def(
      "expand", [](const Tensor& x, const ShapeArg& shape) { return ops::expand(x, shape.get()); },
      nb::arg("x"), nb::arg("shape"), "Broadcasts x to shape; -1 keeps a dimension.");
  m.def(
      "to_layout",
      [](const Tensor& x, const std::string& layout) {
        return ops::to_layout(x, parse_layout(layout));
      },
      nb::arg("x"), nb::arg("layout"),
      "x stored in another layout: 'plain' (row-major), 'channels_last' ('nhwc', 'nwc') or "
      "channel-blocked ('nChw16c', 'nCw8c', 'blocked16') for [N, C, ...] tensors of rank 3 to "
      "5. The values stay the same; only inside a traced graph, whose outputs must be plain "
      "again.");
  m.def(
      "gather",
      [](const Tensor& x, int64_t axis, const Tensor& index) {
        return ops::gather(x, axis, index);
      },
      nb::arg("x"), nb::arg("axis"), nb::arg("index"),
      "out[.., i, ..] = x[.., index[.., i, ..], ..] along axis (torch.gather). The index has "
      "x's rank; off the axis its sizes equal x's (or are constants no larger). Index values "
      "out of range raise ember.DataError when the graph runs.");
}

}  // namespace

void bind_ops(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("ops",
                                       "ember's operators (imperative on concrete "
                                       "tensors, traced on symbolic ones).");
  bind_elementwise(m);
  bind_reductions(m);
  bind_transforms(m);
  m.def("op_names", &op_names, "Names of every registered operator.");
}

}  // namespace ember::py
