// The extension module ember._C: error translation, then one bind_* call per concept.
#include "bindings.h"
#include "ember/runtime/artifact.h"
#include "ember/support/error.h"

namespace nb = nanobind;

NB_MODULE(_C, m) {
  using namespace ember::py;
  m.doc() = "ember's C++ core; import it through the `ember` package.";
  m.attr("__version__") = EMBER_VERSION;
  // Tensors and graphs held by module globals (a user's compiled graph, the torch backend's
  // compiled segments) may outlive the interpreter's teardown of this module; nanobind then
  // reports them as leaks at exit although nothing is lost.
  nb::set_leak_warnings(false);

  // ember::Error (a user error: the message says what to do) and ember::InternalError (a bug
  // in ember) become exceptions of their own, both RuntimeErrors, carrying the C++ message.
  nb::exception<ember::Error> user_error(m, "EmberError", PyExc_RuntimeError);
  nb::exception<ember::InternalError> internal_error(m, "InternalError", PyExc_RuntimeError);
  // Registered after EmberError so that its translator is tried first.
  nb::exception<ember::DataError> data_error(m, "DataError", user_error.ptr());
  data_error.doc() =
      "Bad data met at run time (an index out of range, an integer division "
      "by zero); a subclass of EmberError.";
  nb::exception<ember::ArtifactError> artifact_error(m, "ArtifactError", user_error.ptr());
  artifact_error.doc() =
      "A saved model file that cannot be loaded: not a model file, damaged, truncated, from a "
      "newer format or kernel ABI, or built for a CPU this one is not (with no compiler to "
      "rebuild it); a subclass of EmberError.";
  user_error.doc() = "A user error: the message says what happened, why, and what to do.";
  internal_error.doc() = "A bug in ember: please report it with the message.";

  bind_dtype(m);
  bind_tensor(m);
  bind_interop(m);
  bind_ops(m);
  nb::module_ ops = nb::borrow<nb::module_>(m.attr("ops"));
  bind_nn_ops(ops);  // nn functions join the ember._C.ops submodule bind_ops created
  bind_library_ops(ops);
  bind_linalg_ops(ops);
  bind_graph(m);
  bind_runtime(m);
  bind_artifact(m);
}
