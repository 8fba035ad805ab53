// FlowGraph -> CompiledGraph: lower every node, tune the GEMM blocking of matmul kernels when
// asked, generate one kernel per distinct task, compile the kernels together (through the
// cache), and link the launches.
#include "ember/compile/build.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "ember/codegen/codegen.h"
#include "ember/codegen/cost.h"
#include "ember/codegen/kernel_plan.h"
#include "ember/jit/cache.h"
#include "ember/ops/attrs.h"
#include "ember/ops/op_def.h"
#include "ember/runtime/artifact.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "ember_rt/gemm_prepared.h"

namespace ember {

namespace fs = std::filesystem;

namespace {

// Kernels per translation unit before another unit is worth its compiler start-up.
constexpr int kKernelsPerUnit = 6;

std::string kernel_name(const std::string& body) {
  return "ember_k_" + sha256_hex(body).substr(0, 16);
}

void report(const BuildOptions& o, const char* phase, size_t done, size_t total) {
  if (o.progress) o.progress(phase, static_cast<int>(done), static_cast<int>(total));
}

void write_text(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path);
  out << text;
  EMBER_CHECK(!ec && out, "ember cannot write " << path.string()
                                                << " (dump_dir): choose a writable directory.");
}

std::string tuning_summary(const std::vector<ir::Task>& tasks,
                           const std::vector<tune::TuneResult>& results) {
  std::ostringstream os;
  os << "# GEMM blocking per kernel: the choice, median seconds of the default and of the "
        "choice, and how many candidates were measured\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const tune::TuneResult& r = results[i];
    if (r.skipped == "no matmul stage") continue;
    os << tasks[i].name << ": ";
    if (!r.skipped.empty()) {
      os << "default (" << r.skipped << ")\n";
      continue;
    }
    os << r.config.str() << "  default " << r.default_seconds << " s, chosen " << r.best_seconds
       << " s, " << r.candidates << " candidates"
       << (r.from_record ? " (from the tuning records)" : "") << "\n";
  }
  return os.str();
}

// What a node computes, for the runtime's messages: "Embedding" or "Fused[Embedding, Mul]".
std::string describe(const FlowGraph& graph, const Node& node) {
  std::string s = node.op->title;
  if (const auto* f = std::get_if<FusedAttrs>(&node.attrs)) {
    s += "[";
    for (size_t i = 0; i < f->graph->nodes.size(); ++i)
      s += (i ? ", " : "") + f->graph->nodes[i].op->title;
    s += "]";
  }
  if (!node.outputs.empty()) s += " computing '" + graph.names[node.outputs[0]] + "'";
  return s;
}

// What saving the graph needs of its module (ember/runtime/artifact.h).
std::shared_ptr<const KernelBinary> binary_of(const BuildRequest& req, const Module& module) {
  auto b = std::make_shared<KernelBinary>();
  b->isa = isa_name(req.isa);
  b->cpu_features = isa_features(req.isa);
  b->module_path = (fs::path(module.dir()) / "module.so").string();
  b->sources = req.sources;
  return b;
}

// Kernels of a loaded model whose machine code this CPU cannot run: compiled again from the
// saved sources, for the ISA this process generates code for (through the kernel cache).
detail::RebuiltKernels rebuild_kernels(const std::vector<std::string>& sources,
                                       const std::vector<std::string>& names) {
  BuildRequest req;
  req.name = "loaded model";
  req.sources = sources;
  codegen::define_gemm_once(&req.sources);  // sources saved before they existed
  codegen::define_pieces_once(&req.sources);
  req.isa = isa_from_env();
  std::shared_ptr<Module> module = get_or_build(req);
  detail::RebuiltKernels r;
  for (const auto& name : names) r.fns.push_back(module->symbol(name));
  r.binary = binary_of(req, *module);
  r.prepare = module->find_symbol(ember_rt::kPrepareGemmB);
  r.modules = module;
  return r;
}

// Linking the compiler lets load() rebuild kernels.
const bool kRebuilderInstalled = [] {
  detail::set_kernel_rebuilder(&rebuild_kernels);
  return true;
}();

}  // namespace

void validate(const BuildOptions& o) {
  tune::TuneOptions t;
  t.search_space = o.search_space;
  t.parallel_k = o.parallel_k;
  t.symbol_values = o.symbol_values;
  tune::validate(t);
}

namespace {

// Whether task buffer `buf` is read by anything but matmul stage `only`.
bool read_elsewhere(const ir::Task& task, int buf, const ir::Stage* only) {
  bool found = false;
  auto loads = [&](const ir::Expr& e) {
    if (!e.defined()) return;
    ir::visit(e, [&](const ir::Expr& x) {
      if (x.kind() == ir::ExprKind::Load && x->buffer == buf) found = true;
    });
  };
  for (const ir::Stage& st : task.stages) {
    loads(st.value);
    loads(st.epilogue);
    for (const ir::Expr& e : st.params) loads(e);
    for (int b : st.call_inputs) found = found || b == buf;
    if (st.kind == ir::StageKind::Matmul)
      found = found || st.a == buf || (st.b == buf && &st != only);
  }
  return found;
}

// The constant B operands of node i's matmul stages that its kernel reads prepared (see
// PreparedConstant): float32 graph constants that the task reads nowhere else. Fills
// config->prepared_b and returns (task buffer, what to prepare), tuning and layout unset.
std::vector<std::pair<int, PreparedConstant>> find_prepared(const FlowGraph& graph,
                                                            const Node& node, const ir::Task& task,
                                                            codegen::KernelConfig* config) {
  std::vector<std::pair<int, PreparedConstant>> out;
  for (const ir::Stage& st : task.stages) {
    if (st.kind != ir::StageKind::Matmul || st.b_row_offset.defined()) continue;
    const int buf = st.b;
    if (buf < 0 || buf >= static_cast<int>(node.inputs.size())) continue;
    const int v = node.inputs[buf];
    const ir::Buffer& b = task.buffers[buf];
    if (!graph.constants.count(v) || b.dtype != DType::float32 || b.shape.size() < 2 ||
        !shape_is_concrete(b.shape) || read_elsewhere(task, buf, &st) ||
        std::count(graph.outputs.begin(), graph.outputs.end(), v) > 0 ||
        std::count(config->prepared_b.begin(), config->prepared_b.end(), buf) > 0)
      continue;
    PreparedConstant pc;
    pc.source = v;
    pc.transposed = st.b_transposed;
    const size_t r = b.shape.size();
    const int64_t rows = *b.shape[r - 2].as_int(), cols = *b.shape[r - 1].as_int();
    pc.K = st.b_transposed ? cols : rows;
    pc.N = st.b_transposed ? rows : cols;
    pc.batches = 1;
    for (size_t d = 0; d + 2 < r; ++d) pc.batches *= *b.shape[d].as_int();
    if (pc.K * pc.N * pc.batches == 0) continue;
    config->prepared_b.push_back(buf);
    out.emplace_back(buf, pc);
  }
  return out;
}

// Packs the prepared constants with the module's own function, points the launches at them,
// and drops each source that no launch or output reads any more.
void prepare_constants(ExecPlan* plan, const Module& module,
                       const std::vector<std::tuple<size_t, int, PreparedConstant>>& wanted) {
  if (wanted.empty()) return;
  void* fn = module.find_symbol(ember_rt::kPrepareGemmB);
  EMBER_ASSERT(fn != nullptr, "the kernel module lacks " << ember_rt::kPrepareGemmB);
  std::map<std::tuple<int, bool, std::vector<int64_t>>, int> made;  // one per source and layout
  for (const auto& [launch, buf, want] : wanted) {
    const auto key = std::make_tuple(want.source, want.transposed, want.tuning);
    auto it = made.find(key);
    if (it == made.end()) {
      PreparedConstant pc = want;
      Tensor panels = prepare_constant(fn, plan->constants.at(pc.source), &pc);
      pc.value = static_cast<int>(plan->values.size());
      plan->values.push_back(panels.type());
      plan->constants[pc.value] = panels;
      plan->prepared.push_back(pc);
      it = made.emplace(key, pc.value).first;
    }
    plan->launches[launch].args[buf] = it->second;
  }
  drop_unread_sources(plan);
}

// The nodes that prepare a constant input (OpDef::constant_preparation; constant folding
// leaves them): prepared here, on the host, and recorded in plan->prepared as prepared forms
// of their input, which a saved model can store instead and prepare again at load. Returns
// the graph with their results as constants and without those nodes.
FlowGraph prepare_on_host(const FlowGraph& graph, ExecPlan* plan) {
  FlowGraph out = graph;
  out.nodes.clear();
  for (const Node& n : graph.nodes) {
    if (!n.op->constant_preparation || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        !out.constants.count(n.inputs[0])) {
      out.nodes.push_back(n);
      continue;
    }
    PreparedConstant pc;
    pc.kind = *n.op->constant_preparation;
    pc.source = n.inputs[0];
    pc.value = n.outputs[0];
    if (pc.kind == Preparation::ConvBlockedFilter)
      pc.block = graph.values[pc.value].shape.back().as_int().value_or(0);
    Tensor made = prepare_constant(nullptr, out.constants.at(pc.source), &pc);
    EMBER_ASSERT(
        made.type().dtype == graph.values[pc.value].dtype &&
            shape_equal(made.shape(), graph.values[pc.value].shape),
        n.op->name << " prepared " << made.type().str() << " for " << graph.values[pc.value].str());
    out.constants[pc.value] = made;
    plan->prepared.push_back(pc);
  }
  return out;
}

// The nodes that run no kernel: a view (OpTraits::is_view: a reshape) whose input and output
// lie alike in memory (ember/ir/layout.h, same_memory) becomes plan->views[output] = input, its
// output read in its input's memory. Where the view is a graph output, the memory it views must be
// free to become that output's: an input or a constant (the output is then a copy of it), or a
// kernel's result that is no other output's memory; else the view runs its copy kernel. Returns,
// per node, whether it is one.
std::vector<bool> find_views(const FlowGraph& graph, ExecPlan* plan) {
  std::vector<bool> is_view(graph.nodes.size(), false);
  const std::set<int> outputs(graph.outputs.begin(), graph.outputs.end());
  std::set<int> output_memory(outputs);  // memory an output already holds
  auto given = [&](int v) {
    return graph.constants.count(v) ||
           std::find(graph.inputs.begin(), graph.inputs.end(), v) != graph.inputs.end();
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (!n.op->traits().is_view || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
    const int in = n.inputs[0], out = n.outputs[0];
    const TensorType &a = graph.values[in], &b = graph.values[out];
    if (a.dtype != b.dtype || !same_memory(a.layout, a.shape, b.layout, b.shape) || given(out) ||
        in == out)
      continue;
    int root = in;
    while (plan->views.count(root)) root = plan->views.at(root);
    if (outputs.count(out) && !given(root)) {
      if (output_memory.count(root)) continue;
      output_memory.insert(root);
    }
    plan->views[out] = in;
    is_view[i] = true;
  }
  return is_view;
}

}  // namespace

std::shared_ptr<CompiledGraph> build_graph(const FlowGraph& given, const BuildOptions& options) {
  validate(options);
  given.verify();
  // Tensors passed in and returned are plain (row-major); other layouts live inside.
  auto check_plain = [&](int v, const char* what) {
    const TensorType& t = given.values[v];
    EMBER_CHECK(t.layout.is_plain(), "the graph's " << what << " '" << given.names[v] << "' is "
                                                    << t.str() << "; a graph's inputs and outputs "
                                                    << "are plain: convert it with to_layout(x, "
                                                    << "'plain')");
  };
  for (int v : given.inputs) check_plain(v, "input");
  for (int v : given.outputs) check_plain(v, "output");
  ExecPlan plan;
  const FlowGraph graph = prepare_on_host(given, &plan);
  std::vector<std::string> symbols = graph.symbols();
  plan.values = graph.values;
  plan.inputs = graph.inputs;
  plan.outputs = graph.outputs;
  plan.constants = graph.constants;
  plan.symbols = symbols;

  const std::vector<bool> is_view = find_views(graph, &plan);
  std::vector<size_t> kernel_nodes;  // the nodes that run a kernel, in order
  std::vector<ir::Task> tasks;       // theirs
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (is_view[i]) continue;
    const Node& node = graph.nodes[i];
    kernel_nodes.push_back(i);
    tasks.push_back(lower_node(graph, node, node.op->name + "_" + std::to_string(i)));
  }
  tune::TuneOptions topt;
  topt.search_space = options.search_space;
  topt.parallel_k = options.parallel_k;
  topt.symbol_values = options.symbol_values;
  topt.progress = [&](int done, int total) { report(options, "tuning", done, total); };
  std::vector<tune::TuneResult> tuned = tune::tune_gemm_tasks(tasks, symbols, topt);

  std::vector<std::string> kernels;
  std::vector<std::string> labels;  // per kernel: "name (what it computes)", for errors
  std::vector<std::pair<std::string, std::string>> plans;  // with dump_dir: (kernel, its plan)
  std::map<std::string, std::string> name_of_body;
  std::vector<std::tuple<size_t, int, PreparedConstant>> prepared;  // (launch, buffer, what)
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Node& node = graph.nodes[kernel_nodes[i]];
    const ir::Task& task = tasks[i];
    codegen::KernelConfig config;
    config.gemm = tuned[i].config;
    const codegen::GemmConfig& gc = config.gemm;
    for (auto& [buf, pc] : find_prepared(graph, node, task, &config)) {
      pc.tuning = {gc.mc, gc.nc, gc.kc, gc.kernel, gc.split_k};
      prepared.emplace_back(i, buf, pc);
    }
    // The kernel's name is the hash of its body without the values' names: identical
    // kernels (two layers computing the same on buffers of the same shapes) are generated
    // and compiled once; the source shows the first one's names.
    codegen::KernelConfig bare = config;
    bare.name_comments = false;
    const std::string body = codegen::generate_kernel(task, "KERNEL_NAME", symbols, bare);
    const std::string name = kernel_name(body);
    if (!name_of_body.count(body)) {
      name_of_body[body] = name;
      std::string src = codegen::generate_kernel(task, "KERNEL_NAME", symbols, config);
      src.replace(src.find("KERNEL_NAME"), 11, name);
      kernels.push_back("// " + task.name + "\n" + src);
      labels.push_back(name + " (" + describe(graph, node) + ")");
      if (!options.dump_dir.empty()) plans.emplace_back(name, codegen::plan_kernel(task).str());
    }
    KernelLaunch launch;
    launch.name = name;
    launch.op = describe(graph, node);
    launch.num_inputs = static_cast<int>(node.inputs.size());
    if (node.outputs.size() == 1) launch.in_place = node.op->traits().in_place_input;
    launch.args = node.inputs;
    launch.args.insert(launch.args.end(), node.outputs.begin(), node.outputs.end());
    for (const auto& b : task.buffers)
      if (b.role == ir::BufferRole::Scratch) launch.scratch.push_back({b.dtype, b.shape, {}});
    codegen::TaskCost cost = codegen::task_cost(task);
    launch.flops = cost.flops;
    launch.bytes = cost.bytes;
    plan.launches.push_back(std::move(launch));
    report(options, "generating kernels", i + 1, tasks.size());
  }
  if (!options.dump_dir.empty() && tune::wants_tuning(topt))
    write_text(fs::path(options.dump_dir) / "tuning.txt", tuning_summary(tasks, tuned));
  if (!kernels.empty()) {
    int cores = std::max(1u, std::thread::hardware_concurrency());
    int units = std::min<int>(
        cores, (static_cast<int>(kernels.size()) + kKernelsPerUnit - 1) / kKernelsPerUnit);
    BuildRequest req;
    req.name = "graph";
    req.sources = codegen::make_translation_units(kernels, units);
    req.isa = isa_from_env();
    req.progress = [&](int done, int total) { report(options, "compiling", done, total); };
    req.unit_contents.resize(req.sources.size());
    for (size_t k = 0; k < labels.size(); ++k) {  // kernel k is in unit k % units
      std::string& unit = req.unit_contents[k % req.sources.size()];
      unit += (unit.empty() ? "" : ", ") + labels[k];
    }
    if (!options.dump_dir.empty()) {
      const fs::path dir = fs::path(options.dump_dir) / "kernels";
      for (size_t u = 0; u < req.sources.size(); ++u)
        write_text(dir / ("unit_" + std::to_string(u) + ".cpp"), req.sources[u]);
      // Kernel k is in unit k % units (make_translation_units).
      for (size_t k = 0; k < plans.size(); ++k)
        write_text(dir / ("kernel_" + std::to_string(k) + ".plan.txt"),
                   "// " + plans[k].first + " in unit_" + std::to_string(k % req.sources.size()) +
                       ".cpp\n" + plans[k].second);
    }
    std::shared_ptr<Module> module = get_or_build(req);
    for (auto& l : plan.launches) l.fn = module->symbol(l.name);
    plan.binary = binary_of(req, *module);
    plan.modules = module;
    prepare_constants(&plan, *module, prepared);
  }
  pack_prepared_constants(&plan);
  return std::make_shared<CompiledGraph>(std::move(plan));
}

// FlowGraph's own ways to compile and run (declared in ember/graph/flow_graph.h).

std::shared_ptr<CompiledGraph> FlowGraph::build() const { return build_graph(*this); }

std::shared_ptr<CompiledGraph> FlowGraph::build(const BuildOptions& options) const {
  return build_graph(*this, options);
}

std::vector<Tensor> FlowGraph::operator()(const std::vector<Tensor>& in) const {
  if (!compiled_) compiled_ = build();
  return compiled_->run(in);
}

}  // namespace ember
