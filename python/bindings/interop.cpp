// numpy and torch interop: views without copies through DLPack, and asarray (a copy).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/support/error.h"

namespace ember::py {

namespace {

namespace dl = nb::dlpack;

dl::dtype dlpack_dtype(DType t) {
  auto bits = static_cast<uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::float32:
    case DType::float16:
    case DType::float64:
      return {static_cast<uint8_t>(dl::dtype_code::Float), bits, 1};
    case DType::bfloat16:
      return {static_cast<uint8_t>(dl::dtype_code::Bfloat), bits, 1};
    case DType::int8:
    case DType::int16:
    case DType::int32:
    case DType::int64:
      return {static_cast<uint8_t>(dl::dtype_code::Int), bits, 1};
    case DType::uint8:
      return {static_cast<uint8_t>(dl::dtype_code::UInt), bits, 1};
    case DType::boolean:
      return {static_cast<uint8_t>(dl::dtype_code::Bool), bits, 1};
  }
  EMBER_ASSERT(false, "dlpack_dtype: unknown dtype " << static_cast<int>(t));
  return {};
}

void check_exportable(const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined(), what << ": the tensor is undefined");
  EMBER_CHECK(!t.is_symbolic(), what << ": the tensor is symbolic (it has a shape but no memory); "
                                     << "build its graph and run it to get a concrete tensor");
  EMBER_CHECK(t.device().kind == DeviceKind::cpu, what << ": the tensor is on " << t.device().str()
                                                       << "; only CPU tensors can be shared");
}

// An ndarray of framework `Framework` viewing t's memory; a capsule holding a copy of the
// Tensor keeps the memory alive for as long as the array lives.
template <class Framework>
nb::object export_view(const Tensor& t) {
  std::vector<size_t> shape;
  for (int64_t d : shape_values(t.shape())) shape.push_back(static_cast<size_t>(d));
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::ndarray<Framework> arr(t.data(), shape.size(), shape.data(), owner, nullptr,
                             dlpack_dtype(t.dtype()), nb::device::cpu::value);
  return nb::cast(arr, nb::rv_policy::reference);
}

// A sequence of ints as Python prints a tuple: "(3, 2)", "(3,)".
std::string tuple_text(nb::handle seq) {
  std::string s = "(";
  size_t n = 0;
  for (nb::handle item : seq) {
    if (n++ > 0) s += ", ";
    s += std::to_string(nb::cast<int64_t>(item));
  }
  return s + (n == 1 ? ",)" : ")");
}

// The ember dtype for a torch dtype; torch dtypes ember lacks are an ember::Error.
DType dtype_from_torch(nb::handle torch_dtype) {
  std::string name = nb::cast<std::string>(nb::str(torch_dtype));
  try {
    return dtype_from_name(name);
  } catch (const Error&) {
    EMBER_THROW("from_torch: ember has no dtype for "
                << name << "; ember supports float32, float16, bfloat16, float64, int8, int16, "
                << "int32, int64, uint8 and bool. Convert the tensor first, e.g. "
                << "t.to(torch.float32) (that copies)");
  }
}

Tensor copy_tensor(const Tensor& src) {
  check_exportable(src, "asarray");
  Tensor out = Tensor::empty(src.shape(), src.dtype(), src.device());
  if (src.nbytes() > 0) std::memcpy(out.data(), src.data(), static_cast<size_t>(src.nbytes()));
  return out;
}

// A new tensor holding a copy of the numpy array `arr` converted to `dtype`.
Tensor from_numpy_copy(nb::module_& np, nb::handle arr, DType dtype) {
  Shape shape;
  for (nb::handle d : arr.attr("shape")) shape.push_back(ir::Expr(nb::cast<int64_t>(d)));
  if (dtype == DType::bfloat16) {  // numpy has no bfloat16: go through float64 values
    nb::object flat = np.attr("ascontiguousarray")(arr, "float64").attr("ravel")();
    auto view = nb::cast<nb::ndarray<const double, nb::c_contig, nb::device::cpu>>(flat);
    std::vector<double> values(view.data(), view.data() + view.size());
    return from_values(values, shape, dtype);
  }
  nb::object contiguous = np.attr("ascontiguousarray")(arr, dtype_name(dtype));
  auto view = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(contiguous);
  Tensor out = Tensor::empty(shape, dtype);
  if (out.nbytes() > 0) std::memcpy(out.data(), view.data(), static_cast<size_t>(out.nbytes()));
  return out;
}

Tensor asarray(nb::handle obj, const std::optional<DTypeArg>& dtype_arg) {
  std::optional<DType> want;
  if (dtype_arg) want = dtype_arg->get();
  Tensor* tensor = nullptr;
  if (nb::try_cast<Tensor*>(obj, tensor) && tensor != nullptr) {
    Tensor out = copy_tensor(*tensor);
    return want && *want != out.dtype() ? ops::cast(out, *want) : out;
  }
  nb::module_ np = nb::module_::import_("numpy");
  bool is_ndarray = nb::isinstance(obj, np.attr("ndarray"));
  nb::object arr = np.attr("asarray")(obj);
  std::string kind = nb::cast<std::string>(arr.attr("dtype").attr("kind"));
  std::string name = nb::cast<std::string>(arr.attr("dtype").attr("name"));
  DType dtype = DType::float32;
  if (want) {
    dtype = *want;
  } else if (kind != "b" && kind != "i" && kind != "u" && kind != "f") {
    EMBER_THROW("asarray: cannot make a tensor from an object of type "
                << Py_TYPE(obj.ptr())->tp_name << ": numpy reads its elements as '" << name
                << "'; pass numbers, nested lists of numbers of a regular shape, or a numeric "
                << "numpy array");
  } else if (!is_ndarray && name == "float64") {
    dtype = DType::float32;  // Python floats give float32, ember's default float type
  } else {
    try {
      dtype = dtype_from_name(name);
    } catch (const Error&) {
      EMBER_THROW("asarray: ember has no dtype for numpy's " << name
                                                             << "; pass dtype=... to convert");
    }
  }
  return from_numpy_copy(np, arr, dtype);
}

}  // namespace

nb::object tensor_to_numpy(const Tensor& t) {
  check_exportable(t, "numpy()");
  EMBER_CHECK(t.dtype() != DType::bfloat16,
              "numpy(): numpy has no bfloat16; use t.torch() (no copy) or "
              "ember.ops.cast(t, 'float32').numpy()");
  return export_view<nb::numpy>(t);
}

nb::object tensor_to_torch(const Tensor& t) {
  check_exportable(t, "torch()");
  return export_view<nb::pytorch>(t);
}

// What from_torch looks up on every call, once: it sits on the torch backend's call path
// (every input of every compiled segment, every call).
struct TorchLookups {
  nb::object tensor_type;
  std::vector<std::pair<PyObject*, DType>> dtypes;  // torch dtypes are singletons
};

const TorchLookups& torch_lookups() {
  // Leaked on purpose: released at exit, after the interpreter, it would crash.
  static const TorchLookups* lookups = [] {
    auto* l = new TorchLookups;
    nb::module_ torch = nb::module_::import_("torch");
    l->tensor_type = torch.attr("Tensor");
    for (const char* name : {"float32", "float16", "bfloat16", "float64", "int8", "int16",
                             "int32", "int64", "uint8", "bool"}) {
      nb::object d = torch.attr(name);
      l->dtypes.emplace_back(d.ptr(), dtype_from_torch(d));
      d.inc_ref();  // kept alive with the table
    }
    return l;
  }();
  return *lookups;
}

Tensor tensor_from_torch(nb::handle t) {
  const TorchLookups& torch = torch_lookups();
  EMBER_CHECK(nb::isinstance(t, torch.tensor_type),
              "from_torch: expected a torch.Tensor, got an object of type "
                  << Py_TYPE(t.ptr())->tp_name
                  << "; use ember.asarray for numbers, lists and numpy arrays (it copies)");
  if (!nb::cast<bool>(t.attr("is_cpu"))) {
    nb::object device = t.attr("device");
    EMBER_THROW("from_torch: the tensor is on "
                << nb::cast<std::string>(nb::str(device))
                << "; ember runs on the CPU today, call .cpu() first (that copies)");
  }
  nb::object torch_dtype = t.attr("dtype");
  std::optional<DType> found;
  for (const auto& [obj, d] : torch.dtypes)
    if (obj == torch_dtype.ptr()) found = d;
  const DType dtype = found ? *found : dtype_from_torch(torch_dtype);  // throws: no such dtype
  // A lazy negation (torch._neg_view, the imaginary part of a conjugate) shares memory that
  // holds the values with the other sign: sharing it would flip them.
  EMBER_CHECK(!nb::cast<bool>(t.attr("is_neg")()),
              "from_torch: the tensor is a lazy negative view (its memory holds the negated "
              "values); call .resolve_neg() first (that copies)");
  if (!nb::cast<bool>(t.attr("is_contiguous")())) {
    EMBER_THROW("from_torch: the tensor is not contiguous (strides "
                << tuple_text(t.attr("stride")()) << " for shape " << tuple_text(t.attr("shape"))
                << "); call .contiguous() first — ember tensors are row-major and from_torch "
                << "never copies");
  }
  Shape shape;
  int64_t numel = 1;
  for (nb::handle d : t.attr("shape")) {
    const auto n = nb::cast<int64_t>(d);
    shape.push_back(ir::Expr(n));
    numel *= n;
  }
  // data_ptr() is where element 0 is (storage offset included); requires_grad does not
  // matter, the memory is shared either way.
  auto* data = reinterpret_cast<void*>(nb::cast<uintptr_t>(t.attr("data_ptr")()));
  const size_t nbytes = static_cast<size_t>(numel) * static_cast<size_t>(dtype_size(dtype));
  // A reference to the torch tensor keeps its memory alive; dropping it takes the GIL.
  PyObject* ref = t.ptr();
  Py_INCREF(ref);
  std::shared_ptr<void> owner(ref, [](void* p) {
    nb::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
  auto storage = Storage::borrow(data, nbytes, Device::cpu(), std::move(owner));
  return Tensor::from_storage(std::move(storage), shape, dtype);
}

void bind_interop(nb::module_& m) {
  m.def("from_torch", &tensor_from_torch, nb::arg("tensor"),
        nb::sig("def from_torch(tensor: torch.Tensor) -> Tensor"),
        "An ember tensor sharing the memory of a contiguous CPU torch tensor (no copy).");
  m.def("to_torch", &tensor_to_torch, nb::arg("tensor"),
        nb::sig("def to_torch(tensor: Tensor) -> torch.Tensor"),
        "A torch tensor sharing the memory of an ember tensor (no copy).");
  m.def("asarray", &asarray, nb::arg("obj"), nb::arg("dtype") = nb::none(),
        "A new tensor holding a copy of a number, nested lists, a numpy array or a tensor. "
        "Without dtype, Python floats give float32 and numpy arrays keep their dtype.");
}

}  // namespace ember::py
