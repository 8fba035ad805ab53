// CompiledGraph: checks the inputs, binds the symbols, plans memory once per symbol values,
// and launches the kernels.
//
// State shared between concurrent run() calls (the plan cache, the statistics, the workspace
// pool) sits behind mutexes; everything else a run needs lives on its own stack.
//
// The memory plans and the workspaces are in workspace.cpp; compiled_graph_impl.h declares
// what the two share.
#include "ember/runtime/compiled_graph.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <utility>

#include "compiled_graph_impl.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/error.h"

namespace ember {

using detail::Role;
using detail::RunPlan;
using detail::symbols_text;
using detail::SymbolSource;
using detail::SymbolValues;

std::string detail::symbols_text(const SymbolValues& env) {
  std::string s;
  for (const auto& [name, value] : env) {
    if (!s.empty()) s += ", ";
    s += name + " = " + std::to_string(value);
  }
  return s;
}

namespace {

// The ember::DataError for what kernel `l` reported (kernel.h KernelError).
[[noreturn]] void throw_data_error(const KernelLaunch& l, const ember_rt::KernelError& e) {
  std::ostringstream os;
  const std::string op = l.op.empty() ? "kernel " + l.name : l.op;
  if (e.kind == ember_rt::KernelError::kIndexOutOfRange) {
    os << op << ": index " << e.value << " is out of range for " << e.site << ", of size "
       << e.bound;
    if (e.bound > 0) {
      os << " (valid indices are 0 to " << e.bound - 1 << "; negative ones are not allowed)";
    } else {
      os << " (it is empty: no index is valid)";
    }
    os << ". Check the values of the index tensor: for an embedding, every id must be below "
       << "the number of rows of the weight.";
  } else if (e.kind == ember_rt::KernelError::kDivisionByZero) {
    os << op << ": integer division by zero (" << e.value << " divided by 0), which torch "
       << "raises as ZeroDivisionError too. Make sure the divisor has no zeros, e.g. "
       << "torch.where(d == 0, 1, d), or divide in floating point.";
  } else if (e.kind == ember_rt::KernelError::kLinalg) {
    os << op << ": matrix " << e.bound << " of the batch is " << e.site << " (info " << e.value
       << ", as torch's *_ex operators report it), which torch raises as an error too.";
  } else if (e.kind == ember_rt::KernelError::kLayout) {
    os << op << ": its data is laid out in channel blocks of " << e.value << " but its kernel ("
       << e.site << ") was compiled for vectors of " << e.bound << " floats; compile the model "
       << "again on this machine.";
  } else {
    os << op << ": the kernel reported bad data (error kind " << e.kind << ")";
  }
  os << " The outputs of this run were discarded.";
  throw DataError(os.str());
}

}  // namespace

// ---- validation of the plan ---------------------------------------------------------------

CompiledGraph::Impl::Impl(const ExecPlan& p) : plan(p) {
  assign_roles();
  resolve_views();
  analyze_launches();
  share_in_place();
  check_constants();
  find_symbol_sources();
  find_births_and_deaths();
}

void CompiledGraph::Impl::assign_roles() {
  const int n = static_cast<int>(plan.values.size());
  auto check_id = [n](int v, const char* where) {
    EMBER_ASSERT(v >= 0 && v < n, "ExecPlan: " << where << " refers to value " << v
                                               << " but the plan has " << n << " values");
  };
  role.assign(n, Role::Unused);
  for (int v : plan.outputs) {
    check_id(v, "an output");
    role[v] = Role::Output;
  }
  for (const auto& [v, t] : plan.constants) {
    check_id(v, "a constant");
    role[v] = Role::Constant;
  }
  for (int v : plan.inputs) {
    check_id(v, "an input");
    EMBER_ASSERT(role[v] != Role::Constant, "ExecPlan: value " << v << " is both an input and "
                                                               << "a constant");
    role[v] = Role::Input;
  }
  for (const auto& [v, base] : plan.views) {
    check_id(v, "a view");
    check_id(base, "a view's base");
    EMBER_ASSERT(role[v] != Role::Input && role[v] != Role::Constant,
                 "ExecPlan: value " << v << " is a view and a graph input or constant");
    role[v] = Role::View;
  }
  for (const auto& launch : plan.launches) {
    for (int v : launch.args) {
      check_id(v, ("launch " + launch.name).c_str());
      if (role[v] == Role::Unused) role[v] = Role::Intermediate;
    }
  }
  for (int v = 0; v < n; ++v) {
    if (role[v] != Role::Unused) {
      EMBER_ASSERT(plan.values[v].device.kind == DeviceKind::cpu,
                   "ExecPlan: value " << v << " is on " << plan.values[v].device.str()
                                      << "; CompiledGraph runs on the CPU only");
    }
  }
}

// Each view's memory: the value at the end of its chain of views, which must have memory of
// the same dtype and layout. An intermediate that an output views is written into the
// output's memory, so it becomes an output; two outputs never share memory unless they are
// copies (of an input or a constant).
void CompiledGraph::Impl::resolve_views() {
  const int n = static_cast<int>(plan.values.size());
  memory_of.resize(n);
  for (int v = 0; v < n; ++v) memory_of[v] = v;
  for (const auto& [v, base] : plan.views) {
    int r = base;
    for (int steps = 0; role[r] == Role::View; ++steps) {
      EMBER_ASSERT(steps < n, "ExecPlan: the views of value " << v << " form a cycle");
      r = plan.views.at(r);
    }
    const TensorType &a = plan.values[v], &b = plan.values[r];
    EMBER_ASSERT(a.dtype == b.dtype && same_memory(a.layout, a.shape, b.layout, b.shape),
                 "ExecPlan: value " << v << " (" << a.str() << ") views value " << r << " ("
                                    << b.str()
                                    << "); a view is of its base's dtype and lies in memory as "
                                       "it does");
    EMBER_ASSERT(!shape_is_concrete(a.shape) || !shape_is_concrete(b.shape) ||
                     shape_nbytes(a.shape, a.dtype) == shape_nbytes(b.shape, b.dtype),
                 "ExecPlan: value " << v << " (" << a.str() << ") views value " << r << " ("
                                    << b.str() << ") of another size");
    memory_of[v] = r;
  }
  std::map<int, int> output_of_memory;
  for (int v : plan.outputs) {
    const int r = memory_of[v];
    if (role[r] == Role::Input || role[r] == Role::Constant) continue;  // copied
    auto [it, inserted] = output_of_memory.emplace(r, v);
    EMBER_ASSERT(inserted || it->second == v,
                 "ExecPlan: outputs " << it->second << " and " << v << " share memory");
    if (role[r] == Role::Intermediate) role[r] = Role::Output;
  }
}

void CompiledGraph::Impl::analyze_launches() {
  writer.assign(plan.values.size(), -1);
  last_use.assign(plan.values.size(), -1);
  for (int k = 0; k < static_cast<int>(plan.launches.size()); ++k) {
    const KernelLaunch& l = plan.launches[k];
    EMBER_ASSERT(l.fn != nullptr, "ExecPlan: launch " << k << " (" << l.name << ") has no kernel");
    const int num_args = static_cast<int>(l.args.size());
    EMBER_ASSERT(l.num_inputs >= -1 && l.num_inputs <= num_args,
                 "ExecPlan: launch " << l.name << " has " << num_args << " args but num_inputs "
                                     << l.num_inputs);
    for (int j = 0; j < num_args; ++j) {
      int v = l.args[j];
      const int mem = memory_of[v];
      bool given = role[mem] == Role::Input || role[mem] == Role::Constant;
      bool writes = l.num_inputs >= 0 ? j >= l.num_inputs
                                      : (!given && role[v] != Role::View && writer[v] < 0);
      if (writes) {
        EMBER_ASSERT(!given, "ExecPlan: launch " << l.name << " writes value " << v
                                                 << ", a graph input or constant");
        EMBER_ASSERT(role[v] != Role::View,
                     "ExecPlan: launch " << l.name << " writes value " << v << ", a view");
        EMBER_ASSERT(writer[v] < 0, "ExecPlan: value " << v << " is written by launch "
                                                       << plan.launches[writer[v]].name
                                                       << " and again by " << l.name);
        writer[v] = k;
      } else {
        EMBER_ASSERT(given || (writer[mem] >= 0 && writer[mem] < k),
                     "ExecPlan: launch " << l.name << " reads value " << v
                                         << " before any launch writes it");
      }
      last_use[v] = k;
    }
  }
  for (const auto& [v, base] : plan.views) {  // a view's readers keep its memory alive
    const int mem = memory_of[v];
    last_use[mem] = std::max(last_use[mem], last_use[v]);
  }
  for (int v : plan.outputs) {
    const int mem = memory_of[v];
    EMBER_ASSERT(role[mem] == Role::Input || role[mem] == Role::Constant || writer[mem] >= 0,
                 "ExecPlan: output value " << v << " is never written by a launch");
  }
}

// A launch's first output takes the memory of its in_place input where that input is an
// intermediate of the same type that dies at this launch and no other argument of it is in
// that memory; the memory then lives until the output's last use.
void CompiledGraph::Impl::share_in_place() {
  for (int k = 0; k < static_cast<int>(plan.launches.size()); ++k) {
    const KernelLaunch& l = plan.launches[k];
    const int num_args = static_cast<int>(l.args.size());
    if (l.in_place < 0 || l.num_inputs < 0 || l.in_place >= l.num_inputs ||
        l.num_inputs >= num_args)
      continue;
    const int in = l.args[l.in_place], out = l.args[l.num_inputs];
    if (memory_of[in] != in || role[in] != Role::Intermediate || last_use[in] != k ||
        role[out] != Role::Intermediate || memory_of[out] != out)
      continue;
    const TensorType &a = plan.values[in], &b = plan.values[out];
    if (a.dtype != b.dtype || !(a.layout == b.layout) || !shape_equal(a.shape, b.shape)) continue;
    bool elsewhere = false;  // another argument reads or writes that memory
    for (int j = 0; j < num_args; ++j)
      elsewhere = elsewhere || (j != l.in_place && j != l.num_inputs && memory_of[l.args[j]] == in);
    if (elsewhere) continue;
    for (int& m : memory_of)
      if (m == out) m = in;  // out and the views of it
    last_use[in] = std::max(last_use[in], last_use[out]);
  }
}

void CompiledGraph::Impl::check_constants() const {
  for (const auto& [v, t] : plan.constants) {
    EMBER_ASSERT(t.defined() && !t.is_symbolic(), "ExecPlan: constant " << v << " has no memory");
    EMBER_ASSERT(t.device().kind == DeviceKind::cpu,
                 "ExecPlan: constant " << v << " is on " << t.device().str());
    EMBER_ASSERT(t.dtype() == plan.values[v].dtype && shape_equal(t.shape(), plan.values[v].shape),
                 "ExecPlan: constant " << v << " is " << t.type().str() << " but the value is "
                                       << plan.values[v].str());
  }
}

void CompiledGraph::Impl::find_symbol_sources() {
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const Shape& shape = plan.values[plan.inputs[i]].shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d].is_var() && !sources.count(shape[d]->name)) {
        sources[shape[d]->name] = SymbolSource{static_cast<int>(i), static_cast<int>(d)};
      }
    }
  }
  std::set<std::string> needed(plan.symbols.begin(), plan.symbols.end());
  auto add_vars = [&](const Shape& s) {
    for (const auto& d : s) {
      if (d.as_int()) continue;
      for (auto& name : ir::free_vars(d)) needed.insert(name);
    }
  };
  for (size_t v = 0; v < plan.values.size(); ++v) {
    if (role[v] != Role::Unused) add_vars(plan.values[v].shape);
  }
  for (const auto& l : plan.launches) {
    for (const auto& s : l.scratch) add_vars(s.shape);
  }
  for (const auto& name : needed) {
    EMBER_CHECK(sources.count(name),
                "the graph's sizes use the symbol '"
                    << name << "', but no input has a dimension that is '" << name
                    << "' itself (only expressions of it, or none), so no run can bind it; give "
                       "one input a dimension that is the symbol alone");
  }
}

// ---- inputs ---------------------------------------------------------------------------------

void CompiledGraph::Impl::check_input(size_t i, const Tensor& t, SymbolValues* env) const {
  EMBER_CHECK(t.defined(), "CompiledGraph.run: input " << i << " is an undefined tensor");
  const TensorType& want = plan.values[plan.inputs[i]];
  EMBER_CHECK(!t.is_symbolic(), "CompiledGraph.run: input "
                                    << i << " is a symbolic tensor (" << t.type().str()
                                    << "); run() needs tensors that hold values");
  EMBER_CHECK(t.device().kind == DeviceKind::cpu,
              "CompiledGraph.run: input " << i << " is on " << t.device().str()
                                          << " but the graph runs on the CPU; move it there");
  auto fail = [&](const std::string& rule) {
    EMBER_THROW("CompiledGraph.run: input " << i << " has shape " << shape_str(t.shape())
                                            << " but the graph expects " << shape_str(want.shape)
                                            << ": " << rule);
  };
  EMBER_CHECK(t.dtype() == want.dtype, "CompiledGraph.run: input "
                                           << i << " has type " << t.type().str()
                                           << " but the graph expects " << want.str()
                                           << ": the dtype must be " << dtype_name(want.dtype));
  if (t.rank() != want.rank()) fail("the rank must be " + std::to_string(want.rank()));
  for (size_t d = 0; d < want.shape.size(); ++d) {
    const ir::Expr& e = want.shape[d];
    int64_t got = *t.shape()[d].as_int();
    std::string dim = "dimension " + std::to_string(d);
    if (auto c = e.as_int()) {
      if (got != *c) fail(dim + " must be " + std::to_string(*c));
    } else if (e.is_var()) {
      auto [it, inserted] = env->emplace(e->name, got);
      if (!inserted && it->second != got) {
        const SymbolSource& src = sources.at(e->name);
        fail(dim + " must be " + e->name + " = " + std::to_string(it->second) + ", as set by " +
             "dimension " + std::to_string(src.dim) + " of input " + std::to_string(src.input));
      }
    }
  }
}

SymbolValues CompiledGraph::Impl::bind(const std::vector<Tensor>& inputs) const {
  EMBER_CHECK(inputs.size() == plan.inputs.size(), "CompiledGraph.run: the graph takes "
                                                       << plan.inputs.size() << " inputs but "
                                                       << inputs.size() << " were given");
  SymbolValues env;
  for (size_t i = 0; i < inputs.size(); ++i) check_input(i, inputs[i], &env);
  // Dimensions that are expressions of symbols, once every symbol is bound.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& want = plan.values[plan.inputs[i]].shape;
    for (size_t d = 0; d < want.size(); ++d) {
      if (want[d].as_int() || want[d].is_var()) continue;
      int64_t expect = ir::eval_int(want[d], env);
      int64_t got = *inputs[i].shape()[d].as_int();
      EMBER_CHECK(got == expect, "CompiledGraph.run: input "
                                     << i << " has shape " << shape_str(inputs[i].shape())
                                     << " but the graph expects " << shape_str(want)
                                     << ": dimension " << d << " must be " << ir::to_string(want[d])
                                     << " = " << expect << " with " << symbols_text(env));
    }
  }
  return env;
}

// ---- run ------------------------------------------------------------------------------------

CompiledGraph::CompiledGraph(ExecPlan plan)
    : plan_(std::move(plan)), num_threads_(0), impl_(std::make_unique<Impl>(plan_)) {}

CompiledGraph::~CompiledGraph() = default;

std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor>& inputs) const {
  return run_timed(inputs, nullptr, nullptr);
}

std::vector<Tensor> CompiledGraph::run_releasing(std::vector<Tensor>& inputs) const {
  return run_timed(inputs, nullptr, &inputs);
}

GraphProfile CompiledGraph::profile(const std::vector<Tensor>& inputs, int runs) const {
  EMBER_CHECK(runs >= 1, "CompiledGraph.profile: runs must be at least 1, got " << runs);
  using Clock = std::chrono::steady_clock;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  run(inputs);  // warm-up: memory plan, workspace, caches
  const size_t n = plan_.launches.size();
  std::vector<std::vector<double>> per_launch(n);
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    run_timed(inputs, &seconds, nullptr);
    for (size_t k = 0; k < n; ++k) per_launch[k].push_back(seconds[k]);
  }
  std::vector<double> whole;
  for (int r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    run(inputs);
    whole.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  GraphProfile p;
  p.runs = runs;
  p.run_seconds = median(whole);
  p.threads = num_threads();
  const SymbolValues env = impl_->bind(inputs);
  std::shared_ptr<const RunPlan> rp = impl_->plan_for(env);
  auto count = [&](const ir::Expr& e) {
    if (!e.defined()) return -1.0;
    try {
      return static_cast<double>(ir::eval_int(e, env));
    } catch (const Error&) {  // past int64: not worth failing the profile for
      return -1.0;
    }
  };
  for (size_t k = 0; k < n; ++k) {
    const KernelLaunch& l = plan_.launches[k];
    LaunchProfile lp;
    lp.name = l.name;
    lp.op = l.op;
    lp.seconds = median(per_launch[k]);
    // Without an input count, the last argument is taken as its output.
    size_t first_output = l.num_inputs >= 0 ? static_cast<size_t>(l.num_inputs) : l.args.size();
    if (l.num_inputs < 0 && !l.args.empty()) first_output = l.args.size() - 1;
    for (size_t a = first_output; a < l.args.size(); ++a)
      lp.output_shapes.push_back(rp->dims[l.args[a]]);
    lp.flops = count(l.flops);
    lp.bytes = count(l.bytes);
    p.launches.push_back(std::move(lp));
  }
  return p;
}

// `release`, when given, is `inputs` itself (run_releasing): each input is dropped after the
// last launch that reads it, and only after every check has passed.
std::vector<Tensor> CompiledGraph::run_timed(const std::vector<Tensor>& inputs,
                                             std::vector<double>* launch_seconds,
                                             std::vector<Tensor>* release) const {
  Impl& m = *impl_;
  SymbolValues env = m.bind(inputs);
  std::vector<int64_t> syms;
  for (const auto& s : plan_.symbols) syms.push_back(env.at(s));
  std::shared_ptr<const RunPlan> rp = m.plan_for(env);

  std::vector<void*> ptrs(plan_.values.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) ptrs[plan_.inputs[i]] = inputs[i].data();
  for (const auto& [v, t] : plan_.constants) ptrs[v] = t.data();
  std::vector<Tensor> made = m.copied_outputs(*rp, ptrs);
  if (release) {
    for (int i : m.inputs_unread) (*release)[i] = Tensor();
  }

  std::shared_ptr<WorkspacePool> pool_of_run = m.pool();
  std::shared_ptr<Storage> ws = pool_of_run->take(rp->workspace_bytes);
  struct Return {  // the workspace goes back to the pool even when a kernel throws
    WorkspacePool& pool;
    std::shared_ptr<Storage>& ws;
    ~Return() { pool.give_back(std::move(ws)); }
  } give_back{*pool_of_run, ws};
  char* base = static_cast<char*>(ws->data());
  for (size_t v = 0; v < ptrs.size(); ++v) {
    if (rp->offsets[v] >= 0) ptrs[v] = base + rp->offsets[v];
  }

  ThreadPool& pool = default_pool();
  // Bad data in this run (an index out of range...): the kernels report it here, and the
  // run stops after the launch that met it. Per run, so an error leaves nothing behind.
  ember_rt::KernelError error;
  ember_rt::LaunchContext ctx = pool.context(num_threads());
  ctx.error = &error;
  static const int64_t kNoSymbols = 0;
  const int64_t* sym_ptr = syms.empty() ? &kNoSymbols : syms.data();
  std::vector<void*> args;
  ThreadPool::Region region(pool);  // workers spin between the kernels of this run
  if (launch_seconds) launch_seconds->assign(plan_.launches.size(), 0.0);
  for (size_t k = 0; k < plan_.launches.size(); ++k) {
    const KernelLaunch& l = plan_.launches[k];
    m.allocate_outputs(static_cast<int>(k), *rp, &made, &ptrs);
    args.clear();
    for (int v : l.args) args.push_back(ptrs[m.memory_of[v]]);
    for (int64_t off : rp->scratch_offsets[k]) args.push_back(base + off);
    if (launch_seconds) {
      auto t0 = std::chrono::steady_clock::now();
      l.fn(args.data(), sym_ptr, &ctx);
      (*launch_seconds)[k] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      l.fn(args.data(), sym_ptr, &ctx);
    }
    if (error.reported()) throw_data_error(l, error);
    if (release) {
      for (int i : m.inputs_dying[k]) (*release)[i] = Tensor();
    }
  }
  return m.gather_outputs(&made);
}

int64_t CompiledGraph::prepared_weight_bytes() const {
  int64_t bytes = 0;
  for (const PreparedConstant& pc : plan_.prepared)
    if (auto it = plan_.constants.find(pc.value); it != plan_.constants.end())
      bytes += it->second.nbytes();
  return bytes;
}

int64_t CompiledGraph::constant_bytes() const {
  int64_t bytes = 0;
  for (const auto& [v, t] : plan_.constants) bytes += t.nbytes();
  return bytes;
}

void CompiledGraph::set_num_threads(int n) {
  EMBER_CHECK(n >= 1, "CompiledGraph.set_num_threads: the number of threads must be at "
                          << "least 1, got " << n);
  num_threads_ = n;
}

int CompiledGraph::num_threads() const {
  return num_threads_ > 0 ? num_threads_ : get_num_threads();
}

}  // namespace ember
