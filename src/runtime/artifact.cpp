// Saving a CompiledModel to one file and loading it back (ember/runtime/artifact.h): what
// the sections of the file (artifact_file.h) hold, and linking the saved machine code.
//
//   "meta"     ember version, kernel ABI, ISA and CPU features, names, front-end metadata
//   "plan"     values, inputs, outputs, symbols, constants (offsets into "weights"), launches
//   "weights"  the constants, each 64-byte aligned
//   "module"   the kernels' shared object, less what only tools read (artifact_module.h);
//              compressed (format version 3)
//   "sources"  the translation units it was compiled from; compressed (format version 3)
//   "prepared" which constants are prepared forms of which, and how (ember::Preparation:
//              packed GEMM operands, Winograd filters); one form of each is stored and the
//              other made again at load (stored_forms)
//   "costs"    per launch, its floating-point operations and bytes moved as size expressions
//              ("" when unknown), for the profile; a file without it (written before it
//              existed) loads with the counts unknown, and older embers ignore it
//   "layouts"  the values whose layout is not plain (format version 5)
//   "aliases"  the values that are views of others, which no launch writes, and the launches
//              whose output may take an input's memory (format version 6)
#include "ember/runtime/artifact.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "artifact_file.h"
#include "artifact_module.h"
#include "artifact_plan.h"
#include "ember/support/cpu.h"
#include "ember/support/hash.h"
#include "ember_rt/gemm_prepared.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

namespace ember {
namespace {

using namespace artifact_file;    // NOLINT: the container's records and sections
using namespace artifact_plan;    // NOLINT: the plan's other sections
using namespace artifact_module;  // NOLINT: the machine code: read, stripped, linked

// Which constants the file stores (value -> tensor): each prepared constant (ExecPlan::
// prepared) in one form only, the other made again at load (derive_prepared_forms):
//   - the source, where the preparation cannot be undone (a Winograd filter: its 3x3 weight,
//     a quarter of the transform) or where the prepared form is more than 1/16 larger (GEMM
//     panels whose padding makes them so: a Linear layer with 10 outputs packed 32 wide):
//     load prepares it (GEMM panels with the kernels' own function), and drops it again
//     unless a launch reads it or it cannot be prepared back;
//   - else the prepared form (GEMM panels, blocked convolution filters whose channels fill
//     their blocks: mapped at load, where reordering ResNet-50's 98 MB took 50 ms); a source
//     that a launch reads as well (GPT-2's embedding, tied to its output layer) is then
//     unpacked from them at load instead of stored twice.
std::map<int, Tensor> stored_forms(const ExecPlan& p) {
  std::map<int, Tensor> stored = p.constants;
  std::set<int> prepared_at_load;  // sources stored for preparing
  for (const PreparedConstant& pc : p.prepared) {
    const Tensor& made = p.constants.at(pc.value);
    const TensorType& source = p.values.at(pc.source);
    const auto source_bytes = static_cast<int64_t>(shape_nbytes(source.shape, source.dtype));
    if (preparation_reversible(pc.kind) && made.nbytes() * 16 <= source_bytes * 17) continue;
    if (!stored.count(pc.source))  // (irreversible ones keep their source)
      stored[pc.source] = unprepare_constant(made, pc, source);
    stored.erase(pc.value);
    prepared_at_load.insert(pc.source);
  }
  for (const PreparedConstant& pc : p.prepared)
    if (stored.count(pc.value) && !prepared_at_load.count(pc.source)) stored.erase(pc.source);
  return stored;
}

// At load, the other form of each prepared constant the file stores in one (stored_forms):
// GEMM sources that a launch reads are unpacked from their panels here; prepared constants
// stored as their source are prepared: GEMM panels by `prepare` (the saved kernels' function;
// null when the kernels are compiled again, which packs every panel anew), Winograd filters
// on the host.
// ArtifactError through `bad` when the records do not fit together.
template <class Bad>
void derive_prepared_forms(ExecPlan* plan, void* prepare, const Bad& bad) {
  const std::set<int> read = values_read(*plan);
  try {
    for (PreparedConstant& pc : plan->prepared) {
      if (plan->constants.count(pc.value)) {
        if (!plan->constants.count(pc.source) && read.count(pc.source))
          plan->constants[pc.source] =
              unprepare_constant(plan->constants[pc.value], pc, plan->values[pc.source]);
      } else if (prepare != nullptr || pc.kind != Preparation::GemmPanels) {
        PreparedConstant made = pc;
        Tensor t = prepare_constant(prepare, plan->constants.at(pc.source), &made);
        if (made.kc != pc.kc || made.nr != pc.nr ||
            !shape_equal(t.shape(), plan->values[pc.value].shape))
          bad("the file is damaged: a prepared constant does not match its kernels' layout");
        plan->constants[pc.value] = t;
      }
    }
  } catch (const ArtifactError&) {
    throw;
  } catch (const Error& e) {
    bad(std::string("the file is damaged: ") + e.what());
  }
}

bool is_three(const ir::Expr& e) { return e.as_int().value_or(0) == 3; }

// Whether the plan has GEMM panels, which need the kernels' packing function.
bool has_gemm_panels(const ExecPlan& plan) {
  return std::any_of(plan.prepared.begin(), plan.prepared.end(),
                     [](const PreparedConstant& pc) { return pc.kind == Preparation::GemmPanels; });
}

std::mutex rebuilder_mu;
detail::KernelRebuilder g_rebuilder = nullptr;

}  // namespace

namespace detail {

void set_kernel_rebuilder(KernelRebuilder r) {
  std::lock_guard<std::mutex> lock(rebuilder_mu);
  g_rebuilder = r;
}
KernelRebuilder kernel_rebuilder() {
  std::lock_guard<std::mutex> lock(rebuilder_mu);
  return g_rebuilder;
}
}  // namespace detail

// ---- CompiledModel ---------------------------------------------------------------------------

CompiledModel::CompiledModel(std::shared_ptr<CompiledGraph> graph,
                             std::vector<std::string> input_names,
                             std::vector<std::string> output_names, std::string metadata)
    : graph_(std::move(graph)),
      input_names_(std::move(input_names)),
      output_names_(std::move(output_names)),
      metadata_(std::move(metadata)) {
  EMBER_CHECK(graph_ != nullptr, "CompiledModel: no compiled graph");
  const ExecPlan& p = graph_->plan();
  auto fill = [](std::vector<std::string>* names, size_t n, const char* prefix, const char* what) {
    if (names->empty())
      for (size_t i = 0; i < n; ++i) names->push_back(prefix + std::to_string(i));
    EMBER_CHECK(names->size() == n, "CompiledModel: the graph has " << n << " " << what << "s but "
                                                                    << names->size()
                                                                    << " names were given");
  };
  fill(&input_names_, p.inputs.size(), "input_", "input");
  fill(&output_names_, p.outputs.size(), "output_", "output");
  info_.ember_version = EMBER_VERSION;
  info_.kernel_abi = EMBER_RT_ABI_VERSION;
  if (p.binary) {
    info_.isa = p.binary->isa;
    info_.cpu_features = p.binary->cpu_features;
  }
  for (const auto& [v, t] : p.constants) info_.weight_bytes += t.nbytes();
  info_.prepared_weight_bytes = graph_->prepared_weight_bytes();
  std::set<std::string> kernels;
  for (const auto& l : p.launches) kernels.insert(l.name);
  info_.kernels = static_cast<int>(kernels.size());
  info_.launches = static_cast<int>(p.launches.size());
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor>& inputs) const {
  return graph_->run(inputs);
}

std::vector<TensorInfo> CompiledModel::inputs() const {
  std::vector<TensorInfo> v;
  const ExecPlan& p = graph_->plan();
  for (size_t i = 0; i < p.inputs.size(); ++i)
    v.push_back({input_names_[i], p.values[p.inputs[i]]});
  return v;
}

std::vector<TensorInfo> CompiledModel::outputs() const {
  std::vector<TensorInfo> v;
  const ExecPlan& p = graph_->plan();
  for (size_t i = 0; i < p.outputs.size(); ++i)
    v.push_back({output_names_[i], p.values[p.outputs[i]]});
  return v;
}

void CompiledModel::save(const std::string& path) {
  const ExecPlan& p = graph_->plan();
  Writer meta;
  meta.str(EMBER_VERSION);
  meta.i64(EMBER_RT_ABI_VERSION);
  meta.str(info_.isa);
  meta.strs(info_.cpu_features);
  meta.strs(input_names_);
  meta.strs(output_names_);
  meta.str(metadata_);

  // The weights first, so the plan can give each constant its offset. Constants with the
  // same bytes are stored once.
  const std::map<int, Tensor> stored = stored_forms(p);
  std::vector<std::pair<int, const Tensor*>> consts;
  for (const auto& [v, t] : stored) consts.emplace_back(v, &t);
  std::vector<size_t> offsets;
  std::vector<bool> written;
  std::multimap<uint64_t, size_t> by_checksum;  // -> index into consts
  size_t weight_size = 0;
  for (size_t i = 0; i < consts.size(); ++i) {
    const Tensor& t = *consts[i].second;
    const size_t n = static_cast<size_t>(t.nbytes());
    const uint64_t sum = checksum64(t.data(), n);
    size_t offset = weight_size;
    for (auto [it, end] = by_checksum.equal_range(sum); it != end; ++it) {
      const Tensor& same = *consts[it->second].second;
      if (static_cast<size_t>(same.nbytes()) == n && std::memcmp(same.data(), t.data(), n) == 0) {
        offset = offsets[it->second];
        break;
      }
    }
    offsets.push_back(offset);
    written.push_back(offset == weight_size);
    if (offset == weight_size) {
      by_checksum.emplace(sum, i);
      weight_size = align_up(weight_size + n);
    }
  }

  Writer plan;
  plan.u32(static_cast<uint32_t>(p.values.size()));
  for (const auto& t : p.values) plan.type(t);
  plan.ints(p.inputs);
  plan.ints(p.outputs);
  plan.strs(p.symbols);
  plan.u32(static_cast<uint32_t>(consts.size()));
  for (size_t i = 0; i < consts.size(); ++i) {
    plan.i64(consts[i].first);
    plan.i64(static_cast<int64_t>(offsets[i]));
    plan.i64(consts[i].second->nbytes());
  }
  plan.u32(static_cast<uint32_t>(p.launches.size()));
  for (const auto& l : p.launches) {
    plan.str(l.name);
    plan.str(l.op);
    plan.ints(l.args);
    plan.i64(l.num_inputs);
    plan.u32(static_cast<uint32_t>(l.scratch.size()));
    for (const auto& s : l.scratch) {
      EMBER_CHECK(s.layout.is_plain(), "cannot save this compiled graph: a scratch buffer of "
                                           << l.name << " has the type " << s.str()
                                           << ", whose layout the model file does not store");
      plan.type(s);
    }
  }

  // Which constants are prepared forms of which (ExecPlan::prepared), and how: load makes
  // the form the file does not store, and packs GEMM panels again when it compiles the
  // kernels for another ISA.
  Writer prepared;
  prepared.u32(static_cast<uint32_t>(p.prepared.size()));
  for (const PreparedConstant& pc : p.prepared) {
    for (int64_t x : {static_cast<int64_t>(pc.kind), int64_t{pc.value}, int64_t{pc.source}})
      prepared.i64(x);
    if (pc.kind != Preparation::GemmPanels) continue;
    for (int64_t x : {pc.batches, pc.K, pc.N, int64_t{pc.transposed}, pc.kc, pc.nr})
      prepared.i64(x);
    for (int64_t x : pc.tuning) prepared.i64(x);
  }

  std::string module, sources_rec;
  if (p.binary) {
    module = deflate(strip_module(read_module_bytes(*p.binary)));
    Writer src;
    src.strs(p.binary->sources);
    sources_rec = deflate(src.out);
  }

  std::string weights(weight_size, '\0');
  for (size_t i = 0; i < consts.size(); ++i) {
    const Tensor& t = *consts[i].second;
    if (t.nbytes() > 0 && written[i])
      std::memcpy(weights.data() + offsets[i], t.data(), t.nbytes());
  }

  const std::string costs = costs_section(p), layouts = layouts_section(p),
                    aliases = aliases_section(p);
  std::vector<std::pair<const char*, std::string_view>> sections = {
      {"meta", meta.out}, {"plan", plan.out},       {"weights", weights},
      {"module", module}, {"sources", sources_rec}, {"prepared", prepared.out},
      {"costs", costs},   {"layouts", layouts},     {"aliases", aliases}};
  write_sections(path, sections);
  info_.file_bytes = static_cast<int64_t>(std::filesystem::file_size(path));
}

// ---- load ------------------------------------------------------------------------------------

std::shared_ptr<CompiledModel> load(const std::string& path) {
  std::shared_ptr<Mapping> file = map_file(path);
  auto bad = [&](const std::string& why) { throw ArtifactError(path + ": " + why); };
  Contents contents = read_sections(*file, path);
  const uint32_t version = contents.version;
  auto& sections = contents.sections;
  auto section = [&](const char* tag) -> Reader {
    auto it = sections.find(tag);
    if (it == sections.end()) bad(std::string("the file is damaged: no '") + tag + "' section");
    return Reader(it->second.data, it->second.size, std::string(tag) + " section");
  };

  Reader meta = section("meta");
  ArtifactInfo info;
  info.format_version = static_cast<int>(version);
  info.ember_version = meta.str();
  info.kernel_abi = static_cast<int>(meta.i64());
  info.isa = meta.str();
  info.cpu_features = meta.strs();
  std::vector<std::string> input_names = meta.strs();
  std::vector<std::string> output_names = meta.strs();
  std::string frontend = meta.str();

  ExecPlan plan;
  Reader pr = section("plan");
  uint32_t num_values = pr.count(5);
  for (uint32_t v = 0; v < num_values; ++v) plan.values.push_back(pr.type());
  if (sections.count("layouts")) read_layouts(section("layouts"), &plan);  // format version 5
  plan.inputs = pr.ints(num_values);
  plan.outputs = pr.ints(num_values);
  plan.symbols = pr.strs();
  const Section& weights = sections.count("weights") ? sections["weights"] : Section{};
  uint32_t num_consts = pr.count(24);
  for (uint32_t i = 0; i < num_consts; ++i) {
    int v = pr.index(num_values);
    int64_t off = pr.i64(), nbytes = pr.i64();
    const TensorType& t = plan.values[v];
    if (!shape_is_concrete(t.shape) ||
        static_cast<int64_t>(shape_nbytes(t.shape, t.dtype)) != nbytes || off < 0 || nbytes < 0 ||
        static_cast<uint64_t>(off) > weights.size ||
        static_cast<uint64_t>(nbytes) > weights.size - static_cast<uint64_t>(off) ||
        off % static_cast<int64_t>(kAlign) != 0) {
      pr.fail("a constant does not fit the weights");
    }
    auto storage = Storage::borrow(const_cast<char*>(weights.data) + off,
                                   static_cast<size_t>(nbytes), Device::cpu(), file);
    plan.constants[v] = Tensor::from_storage(storage, t.shape, t.dtype);
  }
  uint32_t num_launches = pr.count(20);
  std::vector<std::string> kernel_names;
  for (uint32_t k = 0; k < num_launches; ++k) {
    KernelLaunch l;
    l.name = pr.str();
    l.op = pr.str();
    l.args = pr.ints(num_values);
    int64_t num_inputs = pr.i64();
    if (num_inputs < -1 || num_inputs > static_cast<int64_t>(l.args.size()))
      pr.fail("a launch's input count is out of range");
    l.num_inputs = static_cast<int>(num_inputs);
    uint32_t num_scratch = pr.count(8);
    for (uint32_t s = 0; s < num_scratch; ++s) l.scratch.push_back(pr.type());
    kernel_names.push_back(l.name);
    plan.launches.push_back(std::move(l));
  }
  if (!pr.done()) pr.fail("it has bytes after its last record");
  if (sections.count("aliases")) read_aliases(section("aliases"), &plan);  // format version 6
  if (sections.count("prepared")) {                                        // format version 2
    Reader pp = section("prepared");
    // Format version 4 starts each record with its preparation; earlier ones are GEMM panels.
    uint32_t n = pp.count(version >= 4 ? 3 * 8 : 13 * 8);
    for (uint32_t i = 0; i < n; ++i) {
      PreparedConstant pc;
      if (version >= 4) {
        const int64_t kind = pp.i64();
        if (kind != static_cast<int64_t>(Preparation::GemmPanels) &&
            kind != static_cast<int64_t>(Preparation::WinogradFilter) &&
            kind != static_cast<int64_t>(Preparation::ConvBlockedFilter))
          pp.fail("a prepared constant has the unknown preparation " + std::to_string(kind));
        pc.kind = static_cast<Preparation>(kind);
      }
      pc.value = pp.index(num_values);
      pc.source = pp.index(num_values);
      const TensorType& src = plan.values[pc.source];
      const TensorType& made = plan.values[pc.value];
      if (pc.kind == Preparation::WinogradFilter) {
        // The source [O, C, 3, 3] is stored, the filter [36, O, C] made at load.
        const Shape want =
            src.shape.size() == 4 ? Shape{ir::Expr(36), src.shape[0], src.shape[1]} : Shape{};
        if (!plan.constants.count(pc.source) || plan.constants.count(pc.value) ||
            src.dtype != DType::float32 || made.dtype != DType::float32 || want.empty() ||
            !shape_is_concrete(src.shape) || !is_three(src.shape[2]) || !is_three(src.shape[3]) ||
            !shape_equal(made.shape, want))
          pp.fail("a Winograd filter does not match its source");
        plan.prepared.push_back(pc);
        continue;
      }
      if (pc.kind == Preparation::ConvBlockedFilter) {
        // One of the source [O, C, KH, KW] and the filter [OB, CB, KH, KW, b, b] is stored
        // (stored_forms), the other made at load, for the block b the filter's type names.
        const int64_t b = made.shape.size() == 6 ? made.shape[5].as_int().value_or(0) : 0;
        if (plan.constants.count(pc.source) == plan.constants.count(pc.value) ||
            !conv_blocked_filter_fits(src, made, b))
          pp.fail("a blocked convolution filter does not match its source");
        pc.block = b;
        plan.prepared.push_back(pc);
        continue;
      }
      pc.batches = pp.i64();
      pc.K = pp.i64();
      pc.N = pp.i64();
      pc.transposed = pp.i64() != 0;
      pc.kc = pp.i64();
      pc.nr = pp.i64();
      for (int t = 0; t < 5; ++t) pc.tuning.push_back(pp.i64());
      // Format version 3 stores the panels or their source (stored_forms).
      const bool stored = plan.constants.count(pc.value) ||
                          (version >= 3 && plan.constants.count(pc.source) &&
                           made.dtype == DType::float32 && shape_is_concrete(made.shape));
      if (!stored || pc.batches < 1 || pc.K < 1 || pc.N < 1 || src.dtype != DType::float32 ||
          !shape_is_concrete(src.shape) ||
          static_cast<int64_t>(shape_nbytes(src.shape, src.dtype)) != 4 * pc.batches * pc.K * pc.N)
        pp.fail("a prepared constant does not match its source");
      plan.prepared.push_back(pc);
    }
    if (!pp.done()) pp.fail("it has bytes after its last record");
  }
  if (sections.count("costs")) read_costs(section("costs"), &plan);

  // Format version 3 compresses the machine code and the sources.
  auto inflated = [&](const char* tag) {
    Reader r = section(tag);
    return version >= 3 && r.left() > 0 ? inflate(r) : std::string(r.take(r.left()), r.left());
  };
  std::vector<std::string> sources;
  if (sections.count("sources")) {
    std::string bytes = inflated("sources");
    if (!bytes.empty()) sources = Reader(bytes.data(), bytes.size(), "sources section").strs();
  }

  if (!plan.launches.empty()) {
    // Can this CPU run the saved machine code?
    std::string why;
    if (info.kernel_abi != EMBER_RT_ABI_VERSION) {
      why = "its kernels were built for kernel ABI " + std::to_string(info.kernel_abi) +
            ", this ember (" EMBER_VERSION ") runs ABI " + std::to_string(EMBER_RT_ABI_VERSION);
    }
    if (why.empty()) {
      Isa allowed = isa_from_env();
      Isa saved;
      try {
        saved = parse_isa(info.isa);
      } catch (const Error&) {
        bad("the file is damaged: unknown instruction set '" + info.isa + "'");
      }
      if (static_cast<int>(saved) > static_cast<int>(allowed)) {
        why = "its kernels were built for " + info.isa + " but " +
              (allowed == detect_isa() ? "this CPU supports at most " + isa_name(allowed)
                                       : "EMBER_ISA allows at most " + isa_name(allowed));
      }
      for (const auto& f : info.cpu_features) {
        if (why.empty() && !cpu_supports(f))
          why = "its kernels use the CPU feature " + f + ", which this CPU lacks";
      }
    }
    std::vector<ember_kernel_fn> fns;
    if (why.empty()) {
      auto mod = std::make_shared<std::string>(sections.count("module") ? inflated("module") : "");
      if (mod->empty()) bad("the file is damaged: its kernels' machine code is missing");
      auto module = open_module(mod->data(), mod->size());
      using AbiFn = int (*)();
      auto abi = reinterpret_cast<AbiFn>(dlsym(module->handle, "ember_module_abi"));
      if (!abi || abi() != EMBER_RT_ABI_VERSION)
        bad("the file is damaged: its machine code does not report ember's kernel ABI");
      for (const auto& name : kernel_names) {
        auto fn = reinterpret_cast<ember_kernel_fn>(dlsym(module->handle, name.c_str()));
        if (!fn) bad("the file is damaged: its machine code lacks the kernel " + name);
        fns.push_back(fn);
      }
      void* prepare = dlsym(module->handle, ember_rt::kPrepareGemmB);
      if (has_gemm_panels(plan) && !prepare)
        bad("the file is damaged: its machine code cannot prepare its weights");
      derive_prepared_forms(&plan, prepare, bad);
      drop_unread_sources(&plan);
      auto binary = std::make_shared<KernelBinary>();
      binary->isa = info.isa;
      binary->cpu_features = info.cpu_features;
      binary->module_data = mod->data();
      binary->module_size = mod->size();
      binary->module_data_owner = mod;
      binary->sources = sources;
      plan.binary = binary;
      plan.modules = module;
    } else {
      if (info.kernel_abi != EMBER_RT_ABI_VERSION && info.kernel_abi > EMBER_RT_ABI_VERSION) {
        throw ArtifactError(path + ": " + why + ": it comes from a newer ember; upgrade ember");
      }
      detail::KernelRebuilder rebuild = detail::kernel_rebuilder();
      if (!rebuild || sources.empty()) {
        throw ArtifactError(
            path + ": " + why +
            (sources.empty() ? ", and the file holds no sources to rebuild them from"
                             : ". Rebuilding them from the sources the file holds needs ember's "
                               "compiler, which this program does not link (link ember::ember "
                               "instead of ember::runtime, or load it from Python)") +
            "; or compile and save the model again on a machine like this one");
      }
      // Blocked values are laid out in blocks of the saved kernels' vector width: kernels
      // compiled for another width would read them wrongly.
      const int lanes = isa_float_lanes(isa_from_env());
      for (const TensorType& t : plan.values) {
        if (t.layout.kind == LayoutKind::Blocked && t.layout.block != lanes) {
          throw ArtifactError(path + ": " + why + ", and its values use the channel-blocked " +
                              "layout " + t.layout.name(t.shape.size()) + " of that instruction " +
                              "set, which kernels rebuilt for " + isa_name(isa_from_env()) +
                              " (blocks of " + std::to_string(lanes) + ") cannot read; " +
                              "compile and save the model again on a machine like this one");
        }
      }
      detail::RebuiltKernels rebuilt = rebuild(sources, kernel_names);
      fns = rebuilt.fns;
      // The panels were packed for the saved kernels' ISA and blocking: again for these.
      if (!plan.prepared.empty()) {
        if (has_gemm_panels(plan) && !rebuilt.prepare)
          bad("the file is damaged: its sources cannot prepare its weights");
        derive_prepared_forms(&plan, nullptr, bad);
        reprepare_constants(&plan, rebuilt.prepare);
        drop_unread_sources(&plan);
      }
      plan.modules = rebuilt.modules;
      plan.binary = rebuilt.binary;
      info.isa = rebuilt.binary->isa;
      info.cpu_features = rebuilt.binary->cpu_features;
      info.rebuilt = why;
    }
    for (size_t k = 0; k < plan.launches.size(); ++k) plan.launches[k].fn = fns[k];
  }

  pack_prepared_constants(&plan);  // those prepared at load; the mapped ones stay in place
  std::shared_ptr<CompiledGraph> graph;
  try {
    graph = std::make_shared<CompiledGraph>(std::move(plan));
  } catch (const InternalError& e) {
    bad(std::string("the file is damaged: its plan is inconsistent (") + e.what() + ")");
  }
  auto model = std::make_shared<CompiledModel>(graph, std::move(input_names),
                                               std::move(output_names), std::move(frontend));
  ArtifactInfo full = model->info();
  info.file_bytes = static_cast<int64_t>(file->size);
  info.weight_bytes = full.weight_bytes;
  info.prepared_weight_bytes = full.prepared_weight_bytes;
  info.kernels = full.kernels;
  info.launches = full.launches;
  model->set_info(info);
  return model;
}

}  // namespace ember
