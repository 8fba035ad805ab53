// The memory of a CompiledGraph's runs: the plan of each run's intermediate values and
// scratch buffers in one workspace (once per symbol values, cached), the workspaces lent to
// runs (WorkspacePool), and when each output is allocated and each input may be released
// (CompiledGraph::run_releasing).
//
// Buffers' lifetimes come from the launch order (compiled_graph.cpp's analyze_launches);
// plan_memory (memory_plan.h) places them.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "compiled_graph_impl.h"
#include "ember/support/error.h"
#include "memory_plan.h"

namespace ember {

using detail::Role;
using detail::RunPlan;
using detail::SymbolValues;

namespace {

constexpr size_t kMaxCachedPlans = 16;

int64_t bytes_of(const std::vector<int64_t>& dims, DType t) {
  int64_t n = dtype_size(t);
  for (int64_t d : dims) {
    EMBER_CHECK(!__builtin_mul_overflow(n, d, &n),
                "CompiledGraph.run: a " << dtype_name(t) << shape_str(concrete_shape(dims))
                                        << " buffer needs more bytes than int64 can count; the "
                                        << "graph cannot run on inputs of these shapes");
  }
  return n;
}

std::vector<int64_t> eval_shape(const Shape& shape, const SymbolValues& env,
                                const std::string& what) {
  std::vector<int64_t> dims;
  dims.reserve(shape.size());
  for (const auto& d : shape) {
    auto c = d.as_int();
    dims.push_back(c ? *c : ir::eval_int(d, env));
  }
  for (int64_t d : dims) {
    EMBER_CHECK(d >= 0, "CompiledGraph.run: with " << detail::symbols_text(env) << ", " << what
                                                   << " of shape " << shape_str(shape)
                                                   << " would have a negative dimension; the "
                                                   << "graph cannot run on inputs of these shapes");
  }
  return dims;
}

}  // namespace

// ---- births and deaths ---------------------------------------------------------------------

void CompiledGraph::Impl::find_births_and_deaths() {
  outputs_born.resize(plan.launches.size());
  inputs_dying.resize(plan.launches.size());
  std::map<int, int> slot_of;
  for (int v : plan.outputs) {
    auto [it, inserted] = slot_of.emplace(v, static_cast<int>(distinct_outputs.size()));
    if (inserted) {
      distinct_outputs.push_back(v);
      const int mem = memory_of[v];
      if (role[mem] == Role::Output) outputs_born[writer[mem]].push_back(it->second);
    }
    output_slot.push_back(it->second);
  }
  for (int i = 0; i < static_cast<int>(plan.inputs.size()); ++i) {
    int k = last_use[plan.inputs[i]];
    (k >= 0 ? inputs_dying[k] : inputs_unread).push_back(i);
  }
}

// ---- memory plans ------------------------------------------------------------------------------

std::shared_ptr<const RunPlan> CompiledGraph::Impl::make_plan(const SymbolValues& env) const {
  auto rp = std::make_shared<RunPlan>();
  const size_t n = plan.values.size();
  rp->dims.resize(n);
  rp->offsets.assign(n, -1);
  std::vector<BufferLife> buffers;
  std::vector<int64_t*> placed;  // where each buffer's offset goes
  rp->scratch_offsets.resize(plan.launches.size());
  for (size_t k = 0; k < plan.launches.size(); ++k) {
    rp->scratch_offsets[k].assign(plan.launches[k].scratch.size(), 0);
  }
  for (size_t v = 0; v < n; ++v) {
    if (role[v] == Role::Unused) continue;
    rp->dims[v] = eval_shape(plan.values[v].shape, env, "value " + std::to_string(v));
    if (role[v] != Role::Intermediate || memory_of[v] != static_cast<int>(v)) continue;
    // Its memory as its layout lays it out (a blocked value's padding lanes included).
    const Shape memory = plan.values[v].layout.physical_shape(concrete_shape(rp->dims[v]));
    buffers.push_back({bytes_of(shape_values(memory), plan.values[v].dtype), writer[v],
                       std::max(writer[v], last_use[v])});
    placed.push_back(&rp->offsets[v]);
  }
  for (const auto& [v, base] : plan.views) {
    const int mem = memory_of[v];
    EMBER_ASSERT(bytes_of(rp->dims[v], plan.values[v].dtype) ==
                     bytes_of(rp->dims[mem], plan.values[mem].dtype),
                 "ExecPlan: value "
                     << v << " " << shape_str(concrete_shape(rp->dims[v])) << " views value " << mem
                     << " " << shape_str(concrete_shape(rp->dims[mem])) << " of another size with "
                     << detail::symbols_text(env));
  }
  for (int k = 0; k < static_cast<int>(plan.launches.size()); ++k) {
    const KernelLaunch& l = plan.launches[k];
    for (size_t j = 0; j < l.scratch.size(); ++j) {
      std::string what = "scratch buffer " + std::to_string(j) + " of " + l.name;
      auto dims = eval_shape(l.scratch[j].shape, env, what);
      buffers.push_back({bytes_of(dims, l.scratch[j].dtype), k, k});
      placed.push_back(&rp->scratch_offsets[k][j]);
    }
  }
  MemoryLayout layout = plan_memory(buffers, static_cast<int>(plan.launches.size()));
  for (size_t b = 0; b < buffers.size(); ++b) *placed[b] = layout.offsets[b];
  rp->workspace_bytes = layout.workspace_bytes;
  rp->unshared_bytes = layout.unshared_bytes;
  rp->live_bytes = layout.live_bytes;
  return rp;
}

std::shared_ptr<const RunPlan> CompiledGraph::Impl::plan_for(const SymbolValues& env) {
  {
    std::lock_guard<std::mutex> lock(cache_mu);
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->first != env) continue;
      cache.splice(cache.begin(), cache, it);
      stats.workspace_bytes = it->second->workspace_bytes;
      stats.unshared_bytes = it->second->unshared_bytes;
      stats.live_bytes = it->second->live_bytes;
      return it->second;
    }
  }
  auto rp = make_plan(env);  // outside the lock: other runs go on meanwhile
  std::lock_guard<std::mutex> lock(cache_mu);
  bool present = std::any_of(cache.begin(), cache.end(),
                             [&](const auto& entry) { return entry.first == env; });
  if (!present) {
    cache.emplace_front(env, rp);
    if (cache.size() > kMaxCachedPlans) cache.pop_back();
    ++stats.plans_made;
  }
  stats.workspace_bytes = rp->workspace_bytes;
  stats.unshared_bytes = rp->unshared_bytes;
  stats.live_bytes = rp->live_bytes;
  return rp;
}

// ---- workspaces -----------------------------------------------------------------------------

std::shared_ptr<Storage> WorkspacePool::take(int64_t bytes) {
  const size_t need = static_cast<size_t>(bytes);
  std::shared_ptr<Storage> dropped;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->nbytes() >= need && (best == idle_.end() || (*it)->nbytes() < (*best)->nbytes())) {
        best = it;
      }
    }
    if (best != idle_.end()) {
      auto ws = std::move(*best);
      idle_.erase(best);
      return ws;
    }
    // None is large enough: drop the largest idle one, this run's will replace it.
    if (!idle_.empty()) {
      auto largest = std::max_element(idle_.begin(), idle_.end(), [](const auto& a, const auto& b) {
        return a->nbytes() < b->nbytes();
      });
      dropped = std::move(*largest);
      idle_.erase(largest);
    }
    ++allocations_;
  }
  dropped.reset();  // before allocating: the old and the new one are never both held
  return Storage::allocate(need, Device::cpu(), /*long_lived=*/true);  // reused run after run
}

void WorkspacePool::give_back(std::shared_ptr<Storage> workspace) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(workspace));
}

void WorkspacePool::clear() {
  std::vector<std::shared_ptr<Storage>> idle;
  std::lock_guard<std::mutex> lock(mu_);
  idle.swap(idle_);
}

WorkspacePool::Stats WorkspacePool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.idle = static_cast<int64_t>(idle_.size());
  for (const auto& ws : idle_) s.idle_bytes += static_cast<int64_t>(ws->nbytes());
  s.allocations = allocations_;
  return s;
}

std::shared_ptr<WorkspacePool> CompiledGraph::Impl::pool() const {
  std::lock_guard<std::mutex> lock(pool_mu);
  return workspaces;
}

// ---- outputs -------------------------------------------------------------------------------

// The distinct outputs no kernel writes (inputs and constants), copied: the caller gets
// tensors it may modify freely. The others stay undefined until allocate_outputs.
std::vector<Tensor> CompiledGraph::Impl::copied_outputs(const RunPlan& rp,
                                                        const std::vector<void*>& ptrs) const {
  std::vector<Tensor> made(distinct_outputs.size());
  for (size_t d = 0; d < distinct_outputs.size(); ++d) {
    int v = distinct_outputs[d];
    const int mem = memory_of[v];  // v itself, or what it views
    if (role[mem] != Role::Input && role[mem] != Role::Constant) continue;
    made[d] = Tensor::empty(concrete_shape(rp.dims[v]), plan.values[v].dtype);
    std::memcpy(made[d].data(), ptrs[mem], static_cast<size_t>(made[d].nbytes()));
  }
  return made;
}

void CompiledGraph::Impl::allocate_outputs(int launch, const RunPlan& rp, std::vector<Tensor>* made,
                                           std::vector<void*>* ptrs) const {
  for (int d : outputs_born[launch]) {
    int v = distinct_outputs[d];
    (*made)[d] = Tensor::empty(concrete_shape(rp.dims[v]), plan.values[v].dtype);
    (*ptrs)[memory_of[v]] = (*made)[d].data();  // the kernels write what v views, if a view
  }
}

std::vector<Tensor> CompiledGraph::Impl::gather_outputs(std::vector<Tensor>* made) const {
  std::vector<Tensor> outputs;
  outputs.reserve(output_slot.size());
  for (int d : output_slot) outputs.push_back((*made)[d]);
  return outputs;
}

MemoryPlanStats CompiledGraph::memory_stats() const {
  std::lock_guard<std::mutex> lock(impl_->cache_mu);
  return impl_->stats;
}

void CompiledGraph::set_workspace_pool(std::shared_ptr<WorkspacePool> pool) {
  EMBER_CHECK(pool != nullptr, "CompiledGraph.set_workspace_pool: the pool is null");
  std::lock_guard<std::mutex> lock(impl_->pool_mu);
  impl_->workspaces = std::move(pool);
}

std::shared_ptr<WorkspacePool> CompiledGraph::workspace_pool() const { return impl_->pool(); }

}  // namespace ember
