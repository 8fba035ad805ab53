// Operators on concrete inputs (ops::run_compiled, declared in ember/ops/ops.h): each runs
// as a one-node graph whose compiled form is cached by (operator, attributes, input types).
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/compile/build.h"
#include "ember/graph/flow_graph.h"
#include "ember/ops/ops.h"
#include "ember/runtime/compiled_graph.h"

namespace ember::ops {
namespace {

std::string cache_key(const std::string& op, const OpAttrs& attrs,
                      const std::vector<TensorType>& types) {
  std::string key = op + "(";
  for (const auto& [name, value] : attr_fields(attrs)) key += name + "=" + value + ";";
  key += ")";
  // A fused operator's fields name its nodes only: key it by its whole graph.
  if (const auto* f = std::get_if<FusedAttrs>(&attrs); f && f->graph) {
    key += "{" + f->graph->fingerprint() + "}";
  }
  for (const TensorType& t : types) key += "|" + t.str() + "@" + t.device.str();
  return key;
}

struct CompileCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<CompiledGraph>> graphs;
};

CompileCache& compile_cache() {
  static CompileCache* c = new CompileCache();  // never destroyed: outlives static users
  return *c;
}

// The compiled one-node graph for this operator, attributes and input types.
std::shared_ptr<CompiledGraph> compiled_for(const OpDef& def, const OpAttrs& attrs,
                                            const std::vector<TensorType>& types,
                                            const std::vector<TensorType>& outs) {
  const std::string key = cache_key(def.name, attrs, types);
  CompileCache& cache = compile_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.graphs.find(key);
    if (it != cache.graphs.end()) return it->second;
  }
  FlowGraph g;
  std::vector<int> ids;
  for (size_t i = 0; i < types.size(); ++i) {
    ids.push_back(g.add_value(types[i], "x" + std::to_string(i)));
    g.inputs.push_back(ids.back());
  }
  const int node = g.add_node(&def, attrs, ids, outs);
  g.outputs = g.nodes[node].outputs;
  std::shared_ptr<CompiledGraph> built = build_graph(g);  // outside the lock: may take seconds
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.graphs.emplace(key, std::move(built)).first->second;
}

}  // namespace

void clear_imperative_cache() {
  CompileCache& cache = compile_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.graphs.clear();
}

std::vector<Tensor> run_compiled(const OpDef& def, const OpAttrs& attrs,
                                 const std::vector<Tensor>& inputs,
                                 const std::vector<TensorType>& outputs) {
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  for (const Tensor& t : inputs) types.push_back(t.type());
  return compiled_for(def, attrs, types, outputs)->run(inputs);
}

}  // namespace ember::ops
