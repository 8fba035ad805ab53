// ember.FlowGraph, ember.TensorType, trace_from, and the graph optimizer.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "ember/compile/build.h"
#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/runtime/compiled_graph.h"

namespace ember::py {

namespace {

std::vector<TensorType> value_types(const FlowGraph& g, const std::vector<int>& ids) {
  std::vector<TensorType> out;
  for (int id : ids) out.push_back(g.values[static_cast<size_t>(id)]);
  return out;
}

tune::ParallelK parse_parallel_k(nb::handle v) {
  using Mode = tune::ParallelK::Mode;
  if (nb::isinstance<nb::str>(v)) {
    std::string s = nb::cast<std::string>(v);
    if (s == "default") return {Mode::Default, 0};
    if (s == "disabled") return {Mode::Disabled, 0};
    if (s == "search") return {Mode::Search, 0};
  } else if (nb::isinstance<nb::int_>(v) && !nb::isinstance<nb::bool_>(v)) {
    int parts = nb::cast<int>(v);
    if (parts == 1) return {Mode::Disabled, 0};
    if (parts >= 2) return {Mode::Fixed, parts};
  }
  throw Error(
      "parallel_k must be 'default', 'disabled', 'search' or a number of parts >= 1, "
      "got " +
      nb::cast<std::string>(nb::repr(v)));
}

nb::object optimize_graph(const FlowGraph& graph, std::optional<std::string> dump_dir,
                          bool return_timings, int search_space,
                          std::map<std::string, int64_t> symbol_values) {
  PassOptions options;
  options.dump_dir = dump_dir.value_or("");
  options.tuning.search_space = search_space;
  options.tuning.symbol_values = std::move(symbol_values);
  std::vector<PassTiming> timings;
  FlowGraph optimized = optimize(graph, options, return_timings ? &timings : nullptr);
  nb::object result = nb::cast(std::move(optimized));
  if (!return_timings) return result;
  nb::list rows;
  for (const PassTiming& t : timings) {
    nb::dict row;
    row["pass"] = t.pass;
    row["seconds"] = t.seconds;
    row["nodes_before"] = t.nodes_before;
    row["nodes_after"] = t.nodes_after;
    rows.append(row);
  }
  return nb::make_tuple(result, rows);
}

std::shared_ptr<CompiledGraph> build_graph_py(const FlowGraph& g, int search_space,
                                              nb::handle parallel_k,
                                              std::optional<std::string> dump_dir,
                                              std::optional<nb::callable> progress,
                                              std::map<std::string, int64_t> symbol_values) {
  BuildOptions o;
  o.search_space = search_space;
  o.parallel_k = parse_parallel_k(parallel_k);
  o.dump_dir = dump_dir.value_or("");
  o.symbol_values = std::move(symbol_values);
  if (progress) {
    nb::callable fn = *progress;
    // Called on this thread (which holds the GIL); also lets Ctrl-C stop a long tuning.
    o.progress = [fn](const std::string& phase, int done, int total) {
      fn(phase, done, total);
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
    };
  }
  return g.build(o);
}

}  // namespace

void bind_graph(nb::module_& m) {
  nb::class_<TensorType>(m, "TensorType", "The type of a value in a graph.")
      .def_prop_ro("dtype", [](const TensorType& t) { return t.dtype; })
      .def_prop_ro(
          "shape", [](const TensorType& t) { return shape_to_python(t.shape); },
          nb::sig("def shape(self, /) -> tuple[int | str, ...]"))
      .def_prop_ro("device", [](const TensorType& t) { return t.device.str(); })
      .def_prop_ro("ndim", &TensorType::rank)
      .def_prop_ro(
          "layout", [](const TensorType& t) { return t.layout.name(t.shape.size()); },
          "'plain', or the layout's name for the rank ('nhwc', 'nChw16c').")
      .def("__str__", &TensorType::str)
      .def("__repr__", [](const TensorType& t) { return "TensorType(" + t.str() + ")"; });

  nb::class_<FlowGraph>(m, "FlowGraph",
                        "A dataflow graph of operators. Call it to run it; build() compiles it.")
      .def("__str__", &FlowGraph::str)
      .def("__repr__", &FlowGraph::str)
      .def(
          "__call__",
          [](const FlowGraph& g, nb::args args) {
            return tensors_to_python(g(tensor_list(args, "FlowGraph.__call__")));
          },
          nb::sig("def __call__(self, *args: Tensor) -> Tensor | tuple[Tensor, ...]"),
          "Runs the graph on concrete tensors (compiles it on the first call); returns a tensor, "
          "or a tuple for several outputs.")
      .def("build", &build_graph_py, nb::kw_only(), nb::arg("search_space") = 0,
           nb::arg("parallel_k") = "default", nb::arg("dump_dir") = nb::none(),
           nb::arg("progress") = nb::none(),
           nb::arg("symbol_values") = std::map<std::string, int64_t>{},
           nb::sig("def build(self, *, search_space: int = 0, parallel_k: str | int = 'default', "
                   "dump_dir: str | None = None, progress: "
                   "collections.abc.Callable[[str, int, int], None] | None = None, "
                   "symbol_values: collections.abc.Mapping[str, int] = {}) -> CompiledGraph"),
           "Generates, compiles (or loads from the cache) and links every kernel.\n\n"
           "search_space: 0 uses the analytic GEMM blocking; 1 and 2 measure a small and a large "
           "space of blockings for every matmul kernel (recorded on disk and reused).\n"
           "parallel_k: how GEMMs split K across threads: 'default' (decided per call), "
           "'disabled', 'search' (split-K candidates are measured), or a number of parts.\n"
           "dump_dir: write the generated translation units (kernels/unit_<i>.cpp), each "
           "kernel's plan (kernels/kernel_<k>.plan.txt) and the tuning decisions (tuning.txt) "
           "there.\n"
           "progress: called as progress(phase, done, total) for 'generating kernels', "
           "'tuning' and 'compiling'.\n"
           "symbol_values: sizes of symbolic dimensions to tune at; kernels stay generic.")
      .def_prop_ro("inputs", [](const FlowGraph& g) { return value_types(g, g.inputs); })
      .def_prop_ro("outputs", [](const FlowGraph& g) { return value_types(g, g.outputs); })
      .def_prop_ro("symbols", &FlowGraph::symbols, "Symbolic dimensions of the inputs.")
      .def_prop_ro("num_nodes", [](const FlowGraph& g) { return g.nodes.size(); })
      .def_prop_ro(
          "node_titles",
          [](const FlowGraph& g) {
            std::vector<std::string> titles;
            for (const Node& n : g.nodes) titles.push_back(n.op ? n.op->title : "?");
            return titles;
          },
          "The operator title of every node, in order.")
      .def_prop_ro("num_constants", [](const FlowGraph& g) { return g.constants.size(); })
      .def("fingerprint", &FlowGraph::fingerprint, "A stable structural hash.")
      .def("verify", &FlowGraph::verify, "Checks the graph's invariants.");

  m.def(
      "trace_from",
      [](nb::handle outputs, nb::handle inputs) {
        std::vector<Tensor> ins;
        if (!inputs.is_none()) ins = tensor_list(inputs, "trace_from(inputs)");
        return trace_from(tensor_list(outputs, "trace_from(outputs)"), ins);
      },
      nb::arg("outputs"), nb::arg("inputs") = nb::none(),
      nb::sig("def trace_from(outputs: Tensor | collections.abc.Sequence[Tensor], "
              "inputs: Tensor | collections.abc.Sequence[Tensor] | None = None) -> FlowGraph"),
      "The graph computing `outputs` from `inputs` by following the tensors' traces. Without "
      "inputs, every symbolic tensor without a trace becomes an input, in order of discovery.");

  m.def("optimize", &optimize_graph, nb::arg("graph"), nb::arg("dump_dir") = nb::none(),
        nb::arg("return_timings") = false, nb::kw_only(), nb::arg("search_space") = 0,
        nb::arg("symbol_values") = std::map<std::string, int64_t>{},
        nb::sig("def optimize(graph: FlowGraph, dump_dir: str | None = None, "
                "return_timings: bool = False, *, search_space: int = 0, "
                "symbol_values: collections.abc.Mapping[str, int] = {}) -> "
                "FlowGraph | tuple[FlowGraph, list[dict[str, typing.Any]]]"),
        "Runs ember's graph passes in order and returns the optimized graph (the input is not "
        "modified). dump_dir: write the graph after each pass as <NN>_<pass>.txt. "
        "return_timings=True returns (graph, [{'pass', 'seconds', 'nodes_before', "
        "'nodes_after'}, ...]).\n\n"
        "search_space: 0 lets the rules choose each convolution's algorithm; 1 and 2 measure "
        "every algorithm that applies and take the fastest (recorded on disk and reused). "
        "symbol_values: FlowGraph.build's (the sizes of symbolic dimensions to measure at).");
  m.def("pass_names", &pass_names, "The graph passes, in the order optimize() runs them.");
}

}  // namespace ember::py
