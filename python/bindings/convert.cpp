// Argument conversions shared by the bindings (see bindings.h).
#include <nanobind/stl/string.h>

#include <cctype>
#include <climits>
#include <cmath>
#include <string>

#include "bindings.h"
#include "ember/support/error.h"

namespace nb = nanobind;

namespace ember::py {

namespace {

bool is_sequence(nb::handle h) { return PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()); }

// An int that fits int64 (bool counts as an int, as in Python).
bool to_int64(nb::handle h, int64_t& out) {
  if (!PyLong_Check(h.ptr())) {
    // numpy integers and other objects that implement __index__.
    if (PyFloat_Check(h.ptr()) || !PyIndex_Check(h.ptr())) return false;
  }
  int overflow = 0;
  PyObject* index = PyNumber_Index(h.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    return false;
  }
  long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  out = static_cast<int64_t>(v);
  return true;
}

std::string py_type_name(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

ir::Expr size_from_text(const std::string& text, std::string* error) {
  if (is_identifier(text)) return ir::var(text);
  try {
    return ir::parse_int_expr(text);
  } catch (const Error& e) {
    if (error->empty()) *error = e.what();
    return ir::Expr(0);
  }
}

const Shape& ShapeArg::get() const {
  EMBER_CHECK(error.empty(), error);
  return shape;
}

namespace {

// A 0-d tensor of integer dtype `t` holding v modulo 2^bits (two's complement).
Tensor wrapped_int_scalar(int64_t v, DType t) {
  Tensor s = Tensor::empty(Shape{}, t);
  switch (t) {
    case DType::int8: *static_cast<int8_t*>(s.data()) = static_cast<int8_t>(v); break;
    case DType::int16: *static_cast<int16_t*>(s.data()) = static_cast<int16_t>(v); break;
    case DType::int32: *static_cast<int32_t*>(s.data()) = static_cast<int32_t>(v); break;
    case DType::int64: *static_cast<int64_t*>(s.data()) = v; break;
    case DType::uint8: *static_cast<uint8_t*>(s.data()) = static_cast<uint8_t>(v); break;
    default: throw InternalError("wrapped_int_scalar of a non-integer dtype");
  }
  return s;
}

}  // namespace

Tensor operand_tensor(const Operand& x, const Operand& other, const char* op) {
  if (x.tensor) return *x.tensor;
  EMBER_CHECK(other.tensor.has_value(),
              op << ": at least one operand must be an ember.Tensor, but both are Python numbers");
  DType dtype = other.tensor->dtype();
  if (x.integer && is_integer(dtype)) return wrapped_int_scalar(*x.integer, dtype);
  if (x.is_float && !is_float(dtype) &&
      (!std::isfinite(x.value) || x.value != std::floor(x.value))) {
    EMBER_THROW(op << ": cannot combine a tensor of dtype " << dtype_name(dtype)
                   << " with the Python float " << x.value
                   << " without losing its fraction (ember converts a Python number to the "
                   << "tensor's dtype); cast the tensor first, e.g. ember.ops.cast(t, 'float32')");
  }
  return ops::scalar(x.value, dtype);
}

nb::tuple shape_to_python(const Shape& shape) {
  nb::list dims;
  for (const ir::Expr& d : shape) {
    if (auto v = d.as_int()) {
      dims.append(*v);
    } else if (d.is_var()) {
      dims.append(d->name);
    } else {
      dims.append(ir::to_string(d));
    }
  }
  return nb::tuple(dims);
}

std::vector<Tensor> tensor_list(nb::handle obj, const char* what) {
  std::vector<Tensor> out;
  auto one = [&](nb::handle item) {
    Tensor* t = nullptr;
    if (!nb::try_cast<Tensor*>(item, t) || t == nullptr) {
      EMBER_THROW(what << ": expected an ember.Tensor or a list of them, got an object of type "
                       << py_type_name(item));
    }
    out.push_back(*t);
  };
  if (is_sequence(obj)) {
    size_t i = 0;
    for (nb::handle item : obj) {
      // g([x, w]) to __call__(*args): a list inside the arguments' list.
      if (is_sequence(item)) {
        EMBER_THROW(what << ": expected ember.Tensor items, got a " << py_type_name(item)
                         << " as item " << i << " of the " << py_type_name(obj)
                         << ": a list inside a list (call g(x, w), not g([x, w]))");
      }
      one(item);
      ++i;
    }
  } else {
    one(obj);
  }
  return out;
}

nb::object tensors_to_python(const std::vector<Tensor>& tensors) {
  if (tensors.size() == 1) return nb::cast(tensors[0]);
  nb::list items;
  for (const Tensor& t : tensors) items.append(nb::cast(t));
  return nb::tuple(items);
}

}  // namespace ember::py

namespace nanobind::detail {

using ember::py::DimsArg;
using ember::py::DTypeArg;
using ember::py::Operand;
using ember::py::ShapeArg;

bool type_caster<DTypeArg>::from_python(handle src, uint32_t flags,
                                        cleanup_list* cleanup) noexcept {
  try {
    value = DTypeArg{};
    make_caster<ember::DType> enum_caster;
    if (enum_caster.from_python(src, flags & ~(uint32_t)cast_flags::convert, cleanup)) {
      value.dtype = enum_caster.value;
      return true;
    }
    if (PyUnicode_Check(src.ptr())) {
      value.name = nb::cast<std::string>(src);
      return true;
    }
    std::string tname = Py_TYPE(src.ptr())->tp_name;
    if (tname == "torch.dtype") {  // str(torch.float32) == 'torch.float32'
      std::string s = nb::cast<std::string>(nb::str(src));
      value.name = s.rfind("torch.", 0) == 0 ? s.substr(6) : s;
      return true;
    }
    bool numpy_type = PyType_Check(src.ptr()) && nb::hasattr(src, "__module__") &&
                      nb::cast<std::string>(src.attr("__module__")) == "numpy";
    if (tname.rfind("numpy.", 0) == 0 || numpy_type) {  // np.dtype('float32'), np.float32
      nb::object np = nb::module_::import_("numpy");
      value.name = nb::cast<std::string>(np.attr("dtype")(src).attr("name"));
      return true;
    }
  } catch (...) {
    PyErr_Clear();
  }
  return false;
}

bool type_caster<ShapeArg>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  if (!PyList_Check(src.ptr()) && !PyTuple_Check(src.ptr())) return false;
  try {
    value.shape.clear();
    value.error.clear();
    for (handle item : src) {
      int64_t v;
      if (PyUnicode_Check(item.ptr())) {
        value.shape.push_back(ember::py::size_from_text(nb::cast<std::string>(item), &value.error));
      } else if (ember::py::to_int64(item, v)) {
        value.shape.push_back(ember::ir::Expr(v));
      } else {
        return false;
      }
    }
    return true;
  } catch (...) {
    PyErr_Clear();
    return false;
  }
}

bool type_caster<DimsArg>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  value.dims.clear();
  if (src.is_none()) return true;
  int64_t v;
  if (ember::py::to_int64(src, v)) {
    value.dims.push_back(v);
    return true;
  }
  if (!PyList_Check(src.ptr()) && !PyTuple_Check(src.ptr())) return false;
  for (handle item : src) {
    if (!ember::py::to_int64(item, v)) return false;
    value.dims.push_back(v);
  }
  return true;
}

handle type_caster<DimsArg>::from_cpp(const DimsArg& v, rv_policy, cleanup_list*) noexcept {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(v.dims.size()));
  if (list == nullptr) return handle();
  for (size_t i = 0; i < v.dims.size(); ++i) {
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(v.dims[i]));
  }
  return list;
}

bool type_caster<Operand>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  value = Operand{};
  ember::Tensor* t = nullptr;
  if (nb::try_cast<ember::Tensor*>(src, t) && t != nullptr) {
    value.tensor = *t;
    return true;
  }
  if (PyFloat_Check(src.ptr())) {
    value.value = PyFloat_AsDouble(src.ptr());
    value.is_float = true;
    return true;
  }
  int64_t v;
  if (ember::py::to_int64(src, v)) {
    value.value = static_cast<double>(v);
    value.integer = v;
    return true;
  }
  // numpy scalars that are not Python numbers: np.float32(2), np.float16(1), np.bool_(True).
  std::string tname = Py_TYPE(src.ptr())->tp_name;
  if (tname.rfind("numpy.", 0) != 0 || tname == "numpy.ndarray") return false;
  try {
    std::string kind = nb::cast<std::string>(src.attr("dtype").attr("kind"));
    if (kind != "f" && kind != "b") return false;  // numpy integers were taken by __index__
    value.value = nb::cast<double>(nb::float_(src));
    value.is_float = kind == "f";
    return true;
  } catch (...) {
    PyErr_Clear();
    return false;
  }
}

}  // namespace nanobind::detail
