// CompiledGraph::Impl: what a CompiledGraph derives once from its ExecPlan (each value's role,
// writer and last use, where each symbol is bound, when each output is born and each input
// dies) and the state its concurrent runs share (the plan cache, the statistics, the
// workspace pool).
//
// Private to the runtime (src/runtime). compiled_graph.cpp checks the plan and the inputs and
// launches the kernels; workspace.cpp plans each run's memory and lends it its workspace.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ember/runtime/compiled_graph.h"

namespace ember {
namespace detail {

// A View has no memory of its own (ExecPlan::views); an Intermediate whose view is an output
// becomes an Output: it is written into the output's memory.
enum class Role : uint8_t { Unused, Input, Constant, Intermediate, Output, View };

using SymbolValues = std::map<std::string, int64_t>;

// Everything about a run that depends on the symbols' values.
struct RunPlan {
  std::vector<std::vector<int64_t>> dims;             // per value; empty when unused
  std::vector<int64_t> offsets;                       // per value; -1 when not in the workspace
  std::vector<std::vector<int64_t>> scratch_offsets;  // per launch, per scratch buffer
  int64_t workspace_bytes = 0;
  int64_t unshared_bytes = 0;
  int64_t live_bytes = 0;
};

// Where a symbol's value comes from: a dimension of an input.
struct SymbolSource {
  int input = 0;
  int dim = 0;
};

// "a = 1, b = 4": the symbols' values, for messages.
std::string symbols_text(const SymbolValues& env);

}  // namespace detail

struct CompiledGraph::Impl {
  explicit Impl(const ExecPlan& p);

  void assign_roles();
  void resolve_views();
  void share_in_place();
  void analyze_launches();
  void check_constants() const;
  void find_symbol_sources();

  detail::SymbolValues bind(const std::vector<Tensor>& inputs) const;
  void check_input(size_t i, const Tensor& t, detail::SymbolValues* env) const;
  std::shared_ptr<const detail::RunPlan> plan_for(const detail::SymbolValues& env);
  std::shared_ptr<const detail::RunPlan> make_plan(const detail::SymbolValues& env) const;
  void find_births_and_deaths();
  std::vector<Tensor> copied_outputs(const detail::RunPlan& rp,
                                     const std::vector<void*>& ptrs) const;
  void allocate_outputs(int launch, const detail::RunPlan& rp, std::vector<Tensor>* made,
                        std::vector<void*>* ptrs) const;
  std::vector<Tensor> gather_outputs(std::vector<Tensor>* made) const;

  std::shared_ptr<WorkspacePool> pool() const;

  const ExecPlan& plan;
  std::vector<detail::Role> role;  // per value
  std::vector<int> writer;         // per value: the launch that writes it, -1 if none
  std::vector<int> last_use;       // per value: the last launch that uses it (or a view of it),
                                   // -1 if none
  std::vector<int> memory_of;      // per value: the value whose memory it is (itself unless a
                                   // view, or written over another: KernelLaunch::in_place)
  std::map<std::string, detail::SymbolSource> sources;
  // The distinct values among the outputs (an output listed twice is returned twice, as one
  // tensor); per output, its place among them.
  std::vector<int> distinct_outputs;
  std::vector<int> output_slot;
  // Per launch: the distinct outputs it writes first (allocated just before it runs, so an
  // output takes memory only from then on); the inputs it reads last (run_releasing drops
  // them after it). Inputs no launch reads are dropped before the first.
  std::vector<std::vector<int>> outputs_born;
  std::vector<std::vector<int>> inputs_dying;
  std::vector<int> inputs_unread;

  std::mutex cache_mu;
  // The plans made, most recent first (at most workspace.cpp's kMaxCachedPlans).
  std::list<std::pair<detail::SymbolValues, std::shared_ptr<const detail::RunPlan>>> cache;
  MemoryPlanStats stats;

  mutable std::mutex pool_mu;
  std::shared_ptr<WorkspacePool> workspaces = std::make_shared<WorkspacePool>();
};

}  // namespace ember
