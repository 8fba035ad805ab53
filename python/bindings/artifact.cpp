// ember._C.CompiledModel, ember._C.load and CompiledGraph.profile: saved models; and
// ember._C.read_npy / write_npy, the .npy reader and writer of the runtime library (what
// examples/cpp/run_saved uses), bound to test them against numpy.
#include "ember/runtime/artifact.h"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "ember/runtime/npy.h"
#include "ember/support/hash.h"

namespace ember::py {

namespace {

nb::list tensor_infos(const std::vector<TensorInfo>& infos) {
  nb::list out;
  for (const auto& i : infos) out.append(nb::make_tuple(i.name, i.type));
  return out;
}

nb::dict info_dict(const CompiledModel& m) {
  const ArtifactInfo& i = m.info();
  nb::dict d;
  d["format_version"] = i.format_version;
  d["ember_version"] = i.ember_version;
  d["kernel_abi"] = i.kernel_abi;
  d["isa"] = i.isa;
  d["cpu_features"] = i.cpu_features;
  d["file_bytes"] = i.file_bytes >= 0 ? nb::cast(i.file_bytes) : nb::none();
  d["weight_bytes"] = i.weight_bytes;
  d["prepared_weight_bytes"] = i.prepared_weight_bytes;
  d["kernels"] = i.kernels;
  d["launches"] = i.launches;
  d["symbols"] = m.graph()->plan().symbols;
  d["rebuilt"] = i.rebuilt.empty() ? nb::none() : nb::cast(i.rebuilt);
  return d;
}

nb::dict profile_dict(const CompiledGraph& g, nb::handle inputs, int runs) {
  std::vector<Tensor> list = tensor_list(inputs, "CompiledGraph.profile");
  GraphProfile p;
  {
    nb::gil_scoped_release release;
    p = g.profile(list, runs);
  }
  nb::list launches;
  for (const auto& l : p.launches) {
    nb::dict d;
    d["kernel"] = l.name;
    d["op"] = l.op;
    d["seconds"] = l.seconds;
    d["output_shapes"] = l.output_shapes;
    d["flops"] = l.flops >= 0 ? nb::cast(l.flops) : nb::none();
    d["bytes"] = l.bytes >= 0 ? nb::cast(l.bytes) : nb::none();
    launches.append(d);
  }
  nb::dict d;
  d["launches"] = launches;
  d["run_seconds"] = p.run_seconds;
  d["runs"] = p.runs;
  d["threads"] = p.threads;
  return d;
}

}  // namespace

void bind_artifact(nb::module_& m) {
  nb::class_<CompiledGraph> graph = nb::borrow<nb::class_<CompiledGraph>>(m.attr("CompiledGraph"));
  graph.def("profile", &profile_dict, nb::arg("inputs"), nb::arg("runs") = 20,
            nb::sig("def profile(self, inputs: Tensor | collections.abc.Sequence[Tensor], "
                    "runs: int = 20) -> dict[str, typing.Any]"),
            "Times every kernel launch over `runs` runs (after a warm-up run): {'launches': "
            "[{'kernel', 'op', 'seconds' (median), 'output_shapes', 'flops', 'bytes' (per "
            "launch at these inputs' sizes; None when unknown)}], 'run_seconds' (median of "
            "whole runs without the per-launch timers), 'runs', 'threads'}.");
  graph.def_prop_ro(
      "launch_ops",
      [](const CompiledGraph& g) {
        std::vector<std::string> ops;
        for (const KernelLaunch& k : g.plan().launches) ops.push_back(k.op);
        return ops;
      },
      "What each kernel launch computes, in launch order (\"Fused[Matmul, Add] computing 'y'\").");

  nb::class_<CompiledModel>(m, "CompiledModel",
                            "A CompiledGraph with named inputs and outputs, saved to and "
                            "loaded from one file (ember/runtime/artifact.h).")
      .def(nb::init<std::shared_ptr<CompiledGraph>, std::vector<std::string>,
                    std::vector<std::string>, std::string>(),
           nb::arg("graph"), nb::arg("input_names") = std::vector<std::string>{},
           nb::arg("output_names") = std::vector<std::string>{}, nb::arg("metadata") = "")
      .def(
          "run",
          [](const CompiledModel& model, nb::handle inputs) {
            std::vector<Tensor> list = tensor_list(inputs, "CompiledModel.run");
            nb::gil_scoped_release release;
            return model.run(list);
          },
          nb::arg("inputs"),
          nb::sig("def run(self, inputs: Tensor | collections.abc.Sequence[Tensor]) -> "
                  "list[Tensor]"),
          "Runs the model on ember tensors in the order of `inputs`; returns the outputs.")
      .def("save", &CompiledModel::save, nb::arg("path"), nb::call_guard<nb::gil_scoped_release>(),
           "Writes the model to one file, atomically.")
      .def_prop_ro(
          "inputs", [](const CompiledModel& m) { return tensor_infos(m.inputs()); },
          nb::sig("def inputs(self) -> list[tuple[str, TensorType]]"))
      .def_prop_ro(
          "outputs", [](const CompiledModel& m) { return tensor_infos(m.outputs()); },
          nb::sig("def outputs(self) -> list[tuple[str, TensorType]]"))
      .def_prop_ro("metadata", &CompiledModel::metadata)
      .def_prop_ro("graph", &CompiledModel::graph)
      .def("info", &info_dict, nb::sig("def info(self) -> dict[str, typing.Any]"),
           "{'format_version', 'ember_version', 'kernel_abi', 'isa', 'cpu_features', "
           "'file_bytes', 'weight_bytes', 'prepared_weight_bytes', 'kernels', 'launches', "
           "'symbols', 'rebuilt'}.");

  m.def(
      "_reseal",
      [](nb::bytes data) {
        std::string out = detail::reseal(std::string(data.c_str(), data.size()));
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("data"),
      "A saved model's bytes with every checksum recomputed (for tests that damage records).");
  m.def("load", &load, nb::arg("path"), nb::call_guard<nb::gil_scoped_release>(),
        "Loads a model saved by CompiledModel.save (raises ArtifactError for a file it cannot "
        "load, saying why).");
  m.def("read_npy", &read_npy, nb::arg("path"), nb::call_guard<nb::gil_scoped_release>(),
        "Reads a .npy file with the C++ runtime's reader (ember/runtime/npy.h).");
  m.def("write_npy", &write_npy, nb::arg("path"), nb::arg("tensor"),
        nb::call_guard<nb::gil_scoped_release>(),
        "Writes a tensor to a .npy file with the C++ runtime's writer (ember/runtime/npy.h).");
}

}  // namespace ember::py
