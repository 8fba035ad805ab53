// FlowGraph -> CompiledGraph: lower every node, generate one kernel per distinct task,
// compile the kernels together (through the cache), and link the launches.
#include <algorithm>
#include <map>
#include <thread>

#include "ember/codegen/codegen.h"
#include "ember/graph/build.h"
#include "ember/jit/cache.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"

namespace ember {

namespace {

// Kernels per translation unit before another unit is worth its compiler start-up.
constexpr int kKernelsPerUnit = 6;

std::string kernel_name(const std::string& body) {
  return "ember_k_" + sha256_hex(body).substr(0, 16);
}

}  // namespace

std::shared_ptr<CompiledGraph> build_graph(const FlowGraph& graph) {
  graph.verify();
  std::vector<std::string> symbols = graph.symbols();
  ExecPlan plan;
  plan.values = graph.values;
  plan.inputs = graph.inputs;
  plan.outputs = graph.outputs;
  plan.constants = graph.constants;
  plan.symbols = symbols;

  std::vector<std::string> kernels;
  std::map<std::string, std::string> name_of_body;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    ir::Task task = lower_node(graph, node, node.op->name + "_" + std::to_string(i));
    // The kernel's name is the hash of its body: identical kernels are generated once.
    std::string body = codegen::generate_kernel(task, "KERNEL_NAME", symbols);
    std::string name = kernel_name(body);
    if (!name_of_body.count(body)) {
      name_of_body[body] = name;
      std::string src = body;
      src.replace(src.find("KERNEL_NAME"), 11, name);
      kernels.push_back("// " + task.name + "\n" + src);
    }
    KernelLaunch launch;
    launch.name = name;
    launch.num_inputs = static_cast<int>(node.inputs.size());
    launch.args = node.inputs;
    launch.args.insert(launch.args.end(), node.outputs.begin(), node.outputs.end());
    for (const auto& b : task.buffers)
      if (b.role == ir::BufferRole::Scratch) launch.scratch.push_back({b.dtype, b.shape, {}});
    plan.launches.push_back(std::move(launch));
  }
  if (!kernels.empty()) {
    int cores = std::max(1u, std::thread::hardware_concurrency());
    int units = std::min<int>(cores, (static_cast<int>(kernels.size()) + kKernelsPerUnit - 1) /
                                         kKernelsPerUnit);
    BuildRequest req;
    req.name = "graph";
    req.sources = codegen::make_translation_units(kernels, units);
    req.isa = isa_from_env();
    std::shared_ptr<Module> module = get_or_build(req);
    for (auto& l : plan.launches) l.fn = module->symbol(l.name);
    plan.modules = module;
  }
  return std::make_shared<CompiledGraph>(std::move(plan));
}

}  // namespace ember
