// ember.FlowGraph, ember.TensorType, trace_from, and the graph optimizer.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.h"
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

nb::object optimize_graph(const FlowGraph& graph, std::optional<std::string> dump_dir,
                          bool return_timings) {
  PassOptions options;
  options.dump_dir = dump_dir.value_or("");
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

}  // namespace

void bind_graph(nb::module_& m) {
  nb::class_<TensorType>(m, "TensorType", "The type of a value in a graph.")
      .def_prop_ro("dtype", [](const TensorType& t) { return t.dtype; })
      .def_prop_ro(
          "shape", [](const TensorType& t) { return shape_to_python(t.shape); },
          nb::sig("def shape(self, /) -> tuple[int | str, ...]"))
      .def_prop_ro("device", [](const TensorType& t) { return t.device.str(); })
      .def_prop_ro("ndim", &TensorType::rank)
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
      .def("build", &FlowGraph::build,
           "Generates, compiles (or loads from the cache) and links every kernel.")
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
        nb::arg("return_timings") = false,
        nb::sig("def optimize(graph: FlowGraph, dump_dir: str | None = None, "
                "return_timings: bool = False) -> "
                "FlowGraph | tuple[FlowGraph, list[dict[str, typing.Any]]]"),
        "Runs ember's graph passes in order and returns the optimized graph (the input is not "
        "modified). dump_dir: write the graph after each pass as <NN>_<pass>.txt. "
        "return_timings=True returns (graph, [{'pass', 'seconds', 'nodes_before', "
        "'nodes_after'}, ...]).");
  m.def("pass_names", &pass_names, "The graph passes, in the order optimize() runs them.");
}

}  // namespace ember::py
