// ember._C.ops: scans, sorts and scatters (ember/ops/ops.h, src/ops/library_ops.cpp).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace ember::py {

void bind_library_ops(nb::module_& m) {
  m.def("cumsum", &ops::cumsum, nb::arg("x"), nb::arg("axis"),
        "Running sum along axis (float sums accumulate in double).");
  m.def("cumprod", &ops::cumprod, nb::arg("x"), nb::arg("axis"), "Running product along axis.");
  m.def("logcumsumexp", &ops::logcumsumexp, nb::arg("x"), nb::arg("axis"),
        "Running log(sum(exp(x))) along axis (float32 / float64).");
  m.def(
      "cummax",
      [](const Tensor& x, int64_t axis) { return tensors_to_python(ops::cummax(x, axis)); },
      nb::arg("x"), nb::arg("axis"),
      "(values, int64 indices) of the running maximum along axis; a NaN holds once met.");
  m.def(
      "cummin",
      [](const Tensor& x, int64_t axis) { return tensors_to_python(ops::cummin(x, axis)); },
      nb::arg("x"), nb::arg("axis"),
      "(values, int64 indices) of the running minimum along axis; a NaN holds once met.");
  m.def(
      "sort",
      [](const Tensor& x, int64_t axis, bool descending) {
        return tensors_to_python(ops::sort(x, axis, descending));
      },
      nb::arg("x"), nb::arg("axis") = -1, nb::arg("descending") = false,
      "(values, int64 positions) of a stable sort along axis; NaN is above every number.");
  m.def("searchsorted", &ops::searchsorted, nb::arg("sorted"), nb::arg("values"),
        nb::arg("right") = false,
        "int64 positions that keep the rows of sorted (its last dimension) sorted with values "
        "inserted: before equal elements, or after them with right=True.");
  m.def("scatter", &ops::scatter, nb::arg("self"), nb::arg("axis"), nb::arg("index"),
        nb::arg("src"), nb::arg("reduce") = "assign", nb::arg("include_self") = true,
        "self with src scattered into it along axis: out[..., index[..., k, ...], ...] "
        "(reduce)= src[..., k, ...] in order of k (index and src of one shape, self's but along "
        "axis); reduce is assign (the last write wins), sum, prod, amax, amin or mean. An "
        "index outside [0, self.shape[axis]) raises ember.DataError when it runs.");
}

}  // namespace ember::py
