// Shared pieces of ember's nanobind bindings: argument conversions and the bind_* entry
// points, one per file (module.cpp calls them in order).
//
// Bindings convert between Python and C++; they make no decisions of their own
// (docs/principles.md, principle 7). The argument wrappers below accept the spellings a Python user
// expects (a dtype as a name, a shape as a list with symbol names, dims as an int or a list)
// and turn them into ember's C++ types; an invalid value raises ember.EmberError with the
// message of the C++ parser it was handed to.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ember/ops/ops.h"
#include "ember/tensor/tensor.h"

namespace ember::py {

namespace nb = nanobind;

// A dtype argument: an ember.DType, a name ('float32', 'bool', 'half', ...), or a numpy or
// torch dtype. Unknown names are reported by get(), which lists the valid ones.
struct DTypeArg {
  std::optional<DType> dtype;
  std::string name;
  DType get() const { return dtype ? *dtype : dtype_from_name(name); }
};

// A shape argument: a sequence whose items are ints (constant dimensions) or strs: a
// symbol name, or a size expression of symbols as ember prints them ("(n * 2)", "n - 1",
// "(n // 4)", "min(n, 64)"). get() raises ember.EmberError for text that is not one.
struct ShapeArg {
  Shape shape;
  std::string error;  // why an item could not be read (the caster cannot raise)
  const Shape& get() const;
};

// Dimensions: None (none given), an int, or a sequence of ints.
struct DimsArg {
  std::vector<int64_t> dims;
};

// An operand of an arithmetic operator: an ember.Tensor or a Python int, float or bool.
struct Operand {
  std::optional<Tensor> tensor;
  double value = 0.0;
  bool is_float = false;
  std::optional<int64_t> integer;  // a Python int (or numpy integer), exactly
};

// The tensor an operand stands for next to `other`: a scalar becomes a 0-d tensor of the
// other operand's dtype (ops::scalar). A Python int next to an integer tensor wraps to the
// tensor's width, as in PyTorch (uint8 + 300 adds 44). A float with a fraction next to an
// integer tensor is an ember::Error (it would be truncated silently). At least one operand
// must be a tensor.
Tensor operand_tensor(const Operand& x, const Operand& other, const char* op);

// A size given as text: a symbol name, or an expression ir::parse_int_expr reads. On a
// parse error, *error gets the message (when empty) and the result is a placeholder.
ir::Expr size_from_text(const std::string& text, std::string* error);

// Python view of a shape: a tuple of ints, with the name (or text) of symbolic dimensions.
nb::tuple shape_to_python(const Shape& shape);

// A list or tuple of tensors, or a single tensor, as a vector.
std::vector<Tensor> tensor_list(nb::handle obj, const char* what);

// Python result of an operator with several outputs: one tensor, or a tuple of them.
nb::object tensors_to_python(const std::vector<Tensor>& tensors);

// interop.cpp: numpy and torch without copies, and asarray (a copy).
nb::object tensor_to_numpy(const Tensor& t);
nb::object tensor_to_torch(const Tensor& t);
Tensor tensor_from_torch(nb::handle t);

void bind_dtype(nb::module_& m);          // tensor.cpp
void bind_tensor(nb::module_& m);         // tensor.cpp
void bind_interop(nb::module_& m);        // interop.cpp
void bind_ops(nb::module_& m);            // ops.cpp (the submodule ember._C.ops)
void bind_nn_ops(nb::module_& ops);       // nn_ops.cpp (into ember._C.ops)
void bind_library_ops(nb::module_& ops);  // library_ops.cpp (into ember._C.ops)
void bind_linalg_ops(nb::module_& ops);   // linalg_ops.cpp (into ember._C.ops)
void bind_graph(nb::module_& m);          // graph.cpp
void bind_runtime(nb::module_& m);        // runtime.cpp
void bind_artifact(nb::module_& m);       // artifact.cpp

}  // namespace ember::py

namespace nanobind::detail {

template <>
struct type_caster<ember::py::DTypeArg> {
  NB_TYPE_CASTER(ember::py::DTypeArg, const_name("ember.DType | str"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(const ember::py::DTypeArg& v, rv_policy, cleanup_list*) noexcept {
    return PyUnicode_FromString(v.dtype ? ember::dtype_name(*v.dtype).c_str() : v.name.c_str());
  }
};

template <>
struct type_caster<ember::py::ShapeArg> {
  NB_TYPE_CASTER(ember::py::ShapeArg, const_name("collections.abc.Sequence[int | str]"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(const ember::py::ShapeArg& v, rv_policy, cleanup_list*) noexcept {
    return ember::py::shape_to_python(v.shape).release();
  }
};

template <>
struct type_caster<ember::py::DimsArg> {
  NB_TYPE_CASTER(ember::py::DimsArg, const_name("int | collections.abc.Sequence[int] | None"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(const ember::py::DimsArg& v, rv_policy, cleanup_list*) noexcept;
};

template <>
struct type_caster<ember::py::Operand> {
  NB_TYPE_CASTER(ember::py::Operand, const_name("ember.Tensor | float"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(const ember::py::Operand&, rv_policy, cleanup_list*) noexcept {
    return none().release();
  }
};

}  // namespace nanobind::detail
