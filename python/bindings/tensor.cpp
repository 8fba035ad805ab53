// ember.DType and ember.Tensor: properties, creation, symbols, Python operators, indexing.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/support/error.h"

namespace ember::py {

namespace {

constexpr int64_t kSliceEnd = INT64_MAX;  // "to the end" for ops::slice (stops are clamped)

Device device_arg(const std::string& device) { return Device::parse(device); }

nb::object trace_of(const Tensor& t) {
  if (!t.trace() || t.trace()->op == nullptr) return nb::none();
  return nb::make_tuple(t.trace()->op->title, t.trace_index());
}

// The value of a one-element concrete tensor (bool(t), float(t), int(t)).
double only_value(const Tensor& t, const char* what) {
  EMBER_CHECK(!t.is_symbolic(), what << " of a symbolic tensor: its value is not known until "
                                     << "the graph runs (build the graph and run it first)");
  EMBER_CHECK(t.numel() == 1,
              what << " of a tensor with " << t.numel()
                   << " elements is ambiguous; it needs exactly one element "
                   << "(reduce it first, e.g. ember.ops.sum(t) or ember.ops.max(t))");
  return element_as_double(t, 0);
}

int64_t concrete_dim(const Tensor& t, int64_t axis) {
  auto v = t.shape()[static_cast<size_t>(axis)].as_int();
  return v ? *v : -1;
}

// t[key] for ints, slices, Ellipsis and tuples of them: one ops::slice over the axes that
// change, then one ops::squeeze over the axes indexed by an int.
Tensor get_item(const Tensor& t, nb::handle key) {
  std::vector<nb::handle> items;
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle item : key) items.push_back(item);
  } else {
    items.push_back(key);
  }
  size_t ellipses = 0;
  for (nb::handle item : items) ellipses += item.is(Py_Ellipsis) ? 1 : 0;
  if (ellipses > 1) throw nb::index_error("an index can only have a single ellipsis ('...')");
  size_t rank = static_cast<size_t>(t.rank());
  if (items.size() - ellipses > rank) {
    throw nb::index_error(("too many indices for a tensor of rank " + std::to_string(rank) + ": " +
                           std::to_string(items.size() - ellipses) + " given")
                              .c_str());
  }
  std::vector<int64_t> axes, starts, stops, steps, squeezed;
  int64_t axis = 0;
  for (nb::handle item : items) {
    if (item.is(Py_Ellipsis)) {
      axis += static_cast<int64_t>(rank - (items.size() - 1));
      continue;
    }
    if (PySlice_Check(item.ptr())) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(item.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      EMBER_CHECK(step > 0, "tensor indexing: slice steps must be positive, got "
                                << step << " (ember tensors have no negative strides)");
      bool whole = start == 0 && stop == PY_SSIZE_T_MAX && step == 1;
      if (!whole) {
        axes.push_back(axis);
        starts.push_back(start);
        stops.push_back(stop == PY_SSIZE_T_MAX ? kSliceEnd : stop);
        steps.push_back(step);
      }
    } else {
      int64_t i = 0;
      if (!nb::try_cast<int64_t>(item, i)) {
        throw nb::type_error((std::string("tensor indices must be ints, slices or '...', not ") +
                              Py_TYPE(item.ptr())->tp_name)
                                 .c_str());
      }
      int64_t size = concrete_dim(t, axis);
      if (size >= 0 && (i >= size || i < -size)) {
        throw nb::index_error(("index " + std::to_string(i) + " is out of range for axis " +
                               std::to_string(axis) + " of size " + std::to_string(size))
                                  .c_str());
      }
      if (size >= 0 && i < 0) i += size;
      axes.push_back(axis);
      starts.push_back(i);
      stops.push_back(i == -1 ? kSliceEnd : i + 1);
      steps.push_back(1);
      squeezed.push_back(axis);
    }
    ++axis;
  }
  Tensor out = t;
  if (!axes.empty()) out = ops::slice(out, axes, starts, stops, steps);
  if (!squeezed.empty()) out = ops::squeeze(out, squeezed);
  return out;
}

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

// Binds `name` (and its reflected form `rname` when given) as fn(self, other).
template <BinaryFn fn>
void def_binary(nb::class_<Tensor>& cls, const char* name, const char* rname, const char* op) {
  cls.def(
      name,
      [op](const Tensor& self, const Operand& other) {
        Operand me{self, 0.0, false, std::nullopt};
        return fn(self, operand_tensor(other, me, op));
      },
      nb::is_operator());
  if (rname != nullptr) {
    cls.def(
        rname,
        [op](const Tensor& self, const Operand& other) {
          Operand me{self, 0.0, false, std::nullopt};
          return fn(operand_tensor(other, me, op), self);
        },
        nb::is_operator());
  }
}

}  // namespace

void bind_dtype(nb::module_& m) {
  nb::enum_<DType> dtype(m, "DType", "Element type of a tensor; str(dtype) is its name.");
  for (DType t : {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int8,
                  DType::int16, DType::int32, DType::int64, DType::uint8, DType::boolean}) {
    dtype.value(dtype_name(t).c_str(), t);
  }
  dtype.def("__str__", [](DType t) { return dtype_name(t); })
      .def_prop_ro(
          "itemsize", [](DType t) { return dtype_size(t); }, "Bytes per element.")
      .def_prop_ro("is_float", [](DType t) { return is_float(t); })
      .def_prop_ro("is_integer", [](DType t) { return is_integer(t); });
  m.def(
      "dtype", [](const DTypeArg& d) { return d.get(); }, nb::arg("name"),
      "The ember.DType for a name ('float32', 'half', ...) or a numpy or torch dtype.");
}

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor> cls(m, "Tensor",
                         "An n-dimensional array: concrete (it has memory) or symbolic (it has "
                         "a shape that may name symbols, and a trace of the operator that "
                         "produces it).");
  cls.def_prop_ro(
         "shape", [](const Tensor& t) { return shape_to_python(t.shape()); },
         nb::sig("def shape(self, /) -> tuple[int | str, ...]"),
         "The dimensions: ints, or the names of symbolic dimensions.")
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("device", [](const Tensor& t) { return t.device().str(); })
      .def_prop_ro("ndim", &Tensor::rank)
      .def_prop_ro(
          "layout", [](const Tensor& t) { return t.type().layout.name(t.shape().size()); },
          "'plain' (always, for a tensor with memory), or a traced value's layout ('nChw16c').")
      .def_prop_ro("is_symbolic", &Tensor::is_symbolic,
                   "True when the tensor has no memory (a graph input or a traced value).")
      .def_prop_ro("trace", &trace_of, nb::sig("def trace(self, /) -> tuple[str, int] | None"),
                   "None, or (operator title, output index) for a tensor an operator traced.")
      .def_prop_ro("name", &Tensor::name)
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def("numel", &Tensor::numel, "Number of elements (concrete shapes only).")
      .def("__str__", &Tensor::str)
      .def("__repr__", &Tensor::str)
      .def("numpy", &tensor_to_numpy, nb::sig("def numpy(self) -> numpy.ndarray"),
           "A numpy array viewing this tensor's memory (no copy); it keeps the memory alive.")
      .def("torch", &tensor_to_torch, nb::sig("def torch(self) -> torch.Tensor"),
           "A torch tensor sharing this tensor's memory through DLPack (no copy).")
      .def(
          "__array__",
          [](const Tensor& t, nb::handle dtype, nb::handle copy) {
            nb::object arr = tensor_to_numpy(t);
            if (!dtype.is_none()) arr = arr.attr("astype")(dtype);
            if (!copy.is_none() && nb::cast<bool>(copy)) arr = arr.attr("copy")();
            return arr;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def(
          "astype", [](const Tensor& t, const DTypeArg& d) { return ops::cast(t, d.get()); },
          nb::arg("dtype"), "ember.ops.cast(self, dtype).")
      .def(
          "reshape", [](const Tensor& t, const ShapeArg& s) { return ops::reshape(t, s.get()); },
          nb::arg("shape"))
      .def("__bool__", [](const Tensor& t) { return only_value(t, "bool()") != 0.0; })
      .def("__float__", [](const Tensor& t) { return only_value(t, "float()"); })
      .def("__int__", [](const Tensor& t) { return static_cast<int64_t>(only_value(t, "int()")); })
      .def("__len__",
           [](const Tensor& t) {
             if (t.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
             int64_t n = concrete_dim(t, 0);
             if (n < 0) throw nb::type_error("len() of a tensor whose first dimension is symbolic");
             return n;
           })
      .def("__getitem__", &get_item, nb::arg("key"),
           nb::sig("def __getitem__(self, key: int | slice | types.EllipsisType | "
                   "tuple[int | slice | types.EllipsisType, ...]) -> Tensor"))
      .def("__iter__",
           [](const Tensor& t) {
             // Iterating relies on t[i] raising IndexError at the end: refuse where it never would.
             if (t.rank() == 0) throw nb::type_error("iteration over a 0-d tensor");
             int64_t n = concrete_dim(t, 0);
             if (n < 0) throw nb::type_error("iteration over a symbolic dimension");
             nb::list items;
             for (int64_t i = 0; i < n; ++i) items.append(get_item(t, nb::int_(i)));
             return nb::iter(items);
           })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });

  // numpy defers to Tensor's reflected operators (np.float32(2) * t is a Tensor, not an array).
  cls.attr("__array_ufunc__") = nb::none();
  def_binary<ops::add>(cls, "__add__", "__radd__", "+");
  def_binary<ops::sub>(cls, "__sub__", "__rsub__", "-");
  def_binary<ops::mul>(cls, "__mul__", "__rmul__", "*");
  def_binary<ops::div>(cls, "__truediv__", "__rtruediv__", "/");
  def_binary<ops::pow>(cls, "__pow__", "__rpow__", "**");
  def_binary<ops::matmul>(cls, "__matmul__", "__rmatmul__", "@");
  def_binary<ops::remainder>(cls, "__mod__", "__rmod__", "%");
  def_binary<ops::floor_divide>(cls, "__floordiv__", "__rfloordiv__", "//");
  // Bitwise, as numpy: on bool tensors the logical operators.
  def_binary<ops::bitwise_and>(cls, "__and__", "__rand__", "&");
  def_binary<ops::bitwise_or>(cls, "__or__", "__ror__", "|");
  def_binary<ops::bitwise_xor>(cls, "__xor__", "__rxor__", "^");
  def_binary<ops::bitwise_left_shift>(cls, "__lshift__", "__rlshift__", "<<");
  def_binary<ops::bitwise_right_shift>(cls, "__rshift__", "__rrshift__", ">>");
  def_binary<ops::less>(cls, "__lt__", nullptr, "<");
  def_binary<ops::less_equal>(cls, "__le__", nullptr, "<=");
  def_binary<ops::greater>(cls, "__gt__", nullptr, ">");
  def_binary<ops::greater_equal>(cls, "__ge__", nullptr, ">=");
  def_binary<ops::equal>(cls, "__eq__", nullptr, "==");
  def_binary<ops::not_equal>(cls, "__ne__", nullptr, "!=");
  cls.def("__neg__", [](const Tensor& t) { return ops::neg(t); })
      .def("__pos__", [](const Tensor& t) { return t; })
      .def("__abs__", [](const Tensor& t) { return ops::abs(t); })
      .def("__invert__", [](const Tensor& t) { return ops::bitwise_not(t); });

  // Creation.
  m.def(
      "empty",
      [](const ShapeArg& s, const DTypeArg& d, const std::string& dev) {
        return Tensor::empty(s.get(), d.get(), device_arg(dev));
      },
      nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("device") = "cpu",
      "A new tensor with uninitialized memory.");
  m.def(
      "zeros",
      [](const ShapeArg& s, const DTypeArg& d, const std::string& dev) {
        return zeros(s.get(), d.get(), device_arg(dev));
      },
      nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("device") = "cpu");
  m.def(
      "ones",
      [](const ShapeArg& s, const DTypeArg& d, const std::string& dev) {
        return ones(s.get(), d.get(), device_arg(dev));
      },
      nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("device") = "cpu");
  m.def(
      "full",
      [](const ShapeArg& s, double value, const DTypeArg& d, const std::string& dev) {
        return full(s.get(), value, d.get(), device_arg(dev));
      },
      nb::arg("shape"), nb::arg("fill_value"), nb::arg("dtype") = "float32",
      nb::arg("device") = "cpu");
  m.def(
      "randn",
      [](const ShapeArg& s, const DTypeArg& d, const std::string& dev,
         std::optional<int64_t> seed) {
        return randn(s.get(), d.get(), device_arg(dev), seed.value_or(-1));
      },
      nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("device") = "cpu",
      nb::arg("seed") = nb::none(),
      "Standard normal values (float dtypes only); seed=None draws from a global generator.");

  // Symbols.
  m.def(
      "symbol",
      [](const ShapeArg& s, const DTypeArg& d, const std::string& dev,
         std::optional<std::string> name) {
        return Tensor::symbol(s.get(), d.get(), device_arg(dev), name.value_or(""));
      },
      nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("device") = "cpu",
      nb::arg("name") = nb::none(),
      "A symbolic tensor (a graph input). A dimension is an int or the name of a symbol: "
      "ember.symbol(['n', 768]).");
  m.def(
      "symbol_like",
      [](const Tensor& t, std::optional<std::string> name) {
        return Tensor::symbol(t.shape(), t.dtype(), t.device(), name.value_or(""));
      },
      nb::arg("tensor"), nb::arg("name") = nb::none(),
      "A symbolic tensor with the shape, dtype and device of `tensor`.");
}

}  // namespace ember::py
