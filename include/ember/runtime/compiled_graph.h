// CompiledGraph: a graph's kernels, linked, with a memory plan; run in one call.
//
// The compiler (FlowGraph::build) produces an ExecPlan: the graph's values, which kernel
// to launch on which values, and scratch buffers per launch. CompiledGraph binds the
// symbolic dimensions from the input shapes, plans intermediate memory once per set of
// symbol values (liveness-based reuse inside one workspace), and runs every kernel.
// It owns no global state: several threads may call run() at once (each run takes its own
// workspace from a WorkspacePool: the graph's own, or one its owner shares between graphs).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "ember/tensor/tensor.h"
#include "ember_rt/kernel.h"

namespace ember {

struct KernelLaunch {
  std::string name;  // the kernel's symbol in its module
  std::string op;    // what it computes, for messages: "Fused[Embedding, Mul]"
  ember_kernel_fn fn = nullptr;
  std::vector<int> args;            // graph values: the task's inputs, then its outputs
  std::vector<TensorType> scratch;  // the task's scratch buffers (shapes may use symbols)
  // How many of `args` are the task's inputs (the rest are its outputs). -1: not given; the
  // runtime then takes a value's first appearance as its write and cannot check the order.
  int num_inputs = -1;
  // Which input (its place in `args`) the launch's first output may be written over, or -1:
  // where that input is an intermediate that dies at this launch, of the output's type, and
  // no other argument is in its memory, the output takes its memory (OpTraits::
  // in_place_input: the kernel copies or reads each element before writing it).
  int in_place = -1;
  // What one launch does, in the graph's symbols (codegen::task_cost): floating-point
  // operations (undefined when its routine cannot say) and bytes read and written
  // (undefined when not known, e.g. a model saved before they were recorded).
  ir::Expr flops;
  ir::Expr bytes;
};

// The machine code of a plan's kernels and what it was built from: what saving a compiled
// model writes (ember/runtime/artifact.h). Filled by the compiler, or by the loader.
struct KernelBinary {
  std::string isa;                        // isa_name() of the ISA it was generated for
  std::vector<std::string> cpu_features;  // isa_features() when it was built
  std::string module_path;                // the shared object on disk (a kernel cache entry)
  // When set, the shared object's bytes (a loaded model keeps them in its file's mapping).
  const char* module_data = nullptr;
  size_t module_size = 0;
  std::shared_ptr<const void> module_data_owner;
  std::vector<std::string> sources;  // the translation units it was compiled from
};

// How a prepared constant is made from its source (PreparedConstant::kind): a known,
// deterministic preparation, so that a saved model can store one form and make the other at
// load (ember/runtime/artifact.h). The numbers are written in the file.
enum class Preparation : int64_t {
  // A GEMM's constant B operand packed in its micro-kernel's panel order
  // (ember_rt/gemm_prepared.h) by the kernel module's own ember_rt::kPrepareGemmB: depends on
  // the ISA and blocking the module was compiled with; the source can be unpacked again.
  GemmPanels = 0,
  // A 3x3 convolution's weight [O, C, 3, 3] transformed for Winograd F(4x4, 3x3), [36, O, C]
  // (ember_rt/winograd_filter.h, run on the host): the same on every ISA; not invertible, so
  // the source is always kept.
  WinogradFilter = 1,
  // A convolution's weight [O, C, KH, KW] (conv1d's [O, C, K]: KH = 1) reordered for the
  // direct convolution on the channel-blocked layout, [ceil(O / b), ceil(C / b), KH, KW, b, b]
  // (ember_rt/conv_blocked.h, run on the host), zero past O and C: the block b is the
  // kernels' vector width, so a saved model keeps the source and prepares it again at load
  // (for the block its type names).
  ConvBlockedFilter = 2,
};

// A constant prepared once for the kernels that read it. The plan's constant `value` holds
// the prepared form of `source`; `source` stays a constant where another launch (or an
// output) reads it, or where the preparation cannot be undone (WinogradFilter).
struct PreparedConstant {
  Preparation kind = Preparation::GemmPanels;
  int value = -1, source = -1;
  // GemmPanels only:
  int64_t batches = 1, K = 0, N = 0;  // source: batches x K x N, or batches x N x K transposed
  bool transposed = false;            // a Linear layer's weight, [N, K]
  std::vector<int64_t> tuning;        // the reading kernel's {mc, nc, kc, kernel, split_k}
  int64_t kc = 0, nr = 0;             // the layout the module chose
  // ConvBlockedFilter only: the channel block b (the prepared type's last dimension).
  int64_t block = 0;
};

struct ExecPlan {
  std::vector<TensorType> values;  // every value of the graph, by id
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::map<int, Tensor> constants;
  std::vector<std::string> symbols;  // order of the kernels' `syms` array
  std::vector<KernelLaunch> launches;
  std::shared_ptr<void> modules;               // keeps the loaded shared objects alive
  std::shared_ptr<const KernelBinary> binary;  // null when the plan has no kernels
  std::vector<PreparedConstant> prepared;      // constants that are prepared forms of others
  // Values that no launch writes: each is another value's memory read with its own shape (a
  // reshape of a plain value, which then runs no kernel). view -> the value it views; both
  // plain, of one dtype and byte size. A view that is an output is its own tensor: viewing
  // an input or a constant, it is copied; viewing a kernel's result, that result is written
  // into the output's memory (no other output may then share it).
  std::map<int, int> views;
};

// Makes pc's prepared form of `source` (the plan's value pc->source): GemmPanels with
// `prepare` (a module's kPrepareGemmB), setting pc's layout (the panels, batches * floats
// per batch); WinogradFilter and ConvBlockedFilter on the host (`prepare` unused). ember::Error
// when `source` does not have the type the preparation takes.
Tensor prepare_constant(void* prepare, const Tensor& source, PreparedConstant* pc);
// Whether `blocks` is the type of a ConvBlockedFilter of `weight` (float32 [O, C, KH, KW] or
// [O, C, K], static) in blocks of b: [ceil(O/b), ceil(C/b), KH, KW, b, b] (KH = 1 for K).
bool conv_blocked_filter_fits(const TensorType& weight, const TensorType& blocks, int64_t b);
// Whether a preparation can be undone (unprepare_constant).
bool preparation_reversible(Preparation kind);
// The source of a reversible preparation (of type `type`): the matrix of GemmPanels `panels`
// (prepared as pc says), the weight of a ConvBlockedFilter (pc.block).
Tensor unprepare_constant(const Tensor& panels, const PreparedConstant& pc, const TensorType& type);
// Drops from the plan's constants each source of a reversible prepared constant that no
// launch or output reads (those read only through their prepared form).
void drop_unread_sources(ExecPlan* plan);
// The values a launch or an output reads.
std::set<int> values_read(const ExecPlan& plan);
// Moves the plan's prepared constants that it alone holds into one long-lived buffer
// (Storage::allocate), in the order the launches first read them: a model's weights are
// then one stream of huge pages, those under 2 MiB included. Nothing moves when they total
// less than 2 MiB, and borrowed memory (a mapped file) stays where it is.
void pack_prepared_constants(ExecPlan* plan);
// Prepares the plan's GemmPanels constants again with `prepare` (kernels compiled for
// another ISA than the panels were packed for), from their sources, kept or unpacked.
void reprepare_constants(ExecPlan* plan, void* prepare);

// CompiledGraph::profile: how long each launch takes, and what it does in that time.
struct LaunchProfile {
  std::string name;                                 // the kernel
  std::string op;                                   // what it computes (the ops it fused)
  double seconds = 0.0;                             // median over the profiled runs
  std::vector<std::vector<int64_t>> output_shapes;  // of its outputs, at the profiled sizes
  double flops = -1.0;  // floating-point operations per launch; -1: unknown
  double bytes = -1.0;  // bytes read and written per launch; -1: unknown
};
struct GraphProfile {
  std::vector<LaunchProfile> launches;  // in launch order
  double run_seconds = 0.0;             // median of whole runs without the per-launch timers
  int runs = 0;
  int threads = 0;  // the threads the kernels ran with
};

// Idle workspaces lent to the runs of CompiledGraphs. A graph has a pool of its own unless it
// is given one to share (CompiledGraph::set_workspace_pool): graphs that run one after the
// other (a training step's forward and backward, the segments of a model) then keep one
// workspace between calls, the largest any of them needs, instead of one each. A run takes
// the smallest idle workspace that is large enough (when none is, it drops the largest idle
// one and allocates), and gives it back when it ends: runs in several threads at once each
// hold their own, and a run that follows another of the same size allocates nothing.
// Thread-safe.
class WorkspacePool {
 public:
  struct Stats {
    int64_t idle = 0;         // workspaces held between runs
    int64_t idle_bytes = 0;   // their total size
    int64_t allocations = 0;  // workspaces allocated since the pool was made
  };

  explicit WorkspacePool(size_t max_idle = 8) : max_idle_(max_idle) {}

  std::shared_ptr<Storage> take(int64_t bytes);
  void give_back(std::shared_ptr<Storage> workspace);
  // Frees the idle workspaces (those lent to runs in progress come back later).
  void clear();
  Stats stats() const;

 private:
  size_t max_idle_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Storage>> idle_;
  int64_t allocations_ = 0;
};

struct MemoryPlanStats {
  int64_t workspace_bytes = 0;  // intermediate values + scratch, after reuse
  int64_t unshared_bytes = 0;   // what they would take without reuse
  int64_t live_bytes = 0;       // the most of them live at one launch: no placement needs less
  int64_t plans_made = 0;       // number of distinct plans (one per symbol values)
};

class CompiledGraph {
 public:
  explicit CompiledGraph(ExecPlan plan);
  ~CompiledGraph();

  // Runs every kernel. Inputs must match the graph's input types (dtype, rank, constant
  // dimensions, consistent symbols): otherwise ember::Error naming the input, the expected
  // and the actual type. Outputs are new tensors.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // run(), dropping each of `inputs` (resetting it to an undefined Tensor) right after the
  // last kernel that reads it: when the caller gave up its own references, an input's memory
  // is freed during the run, not after it (a training step's backward frees the activations
  // the forward saved as it goes, as eager PyTorch does). The inputs are checked before any
  // is dropped: when a check fails (ember::Error), `inputs` is left whole. A kernel's bad
  // data (ember::DataError) may come after some were dropped.
  std::vector<Tensor> run_releasing(std::vector<Tensor>& inputs) const;

  // Runs `runs` times (after one warm-up run) timing each launch, then `runs` times without
  // the timers; medians. `runs` >= 1.
  GraphProfile profile(const std::vector<Tensor>& inputs, int runs = 20) const;

  const ExecPlan& plan() const { return plan_; }
  MemoryPlanStats memory_stats() const;
  // Where runs take their workspace: by default a pool of the graph's own. Runs already
  // started give theirs back to the pool they took it from.
  void set_workspace_pool(std::shared_ptr<WorkspacePool> pool);
  std::shared_ptr<WorkspacePool> workspace_pool() const;
  // Bytes of the constants prepared for the kernels (ExecPlan::prepared), counted in the
  // plan's constants too.
  int64_t prepared_weight_bytes() const;
  // Bytes of the constants the graph holds for its lifetime (weights, folded values).
  int64_t constant_bytes() const;
  // Threads the kernels may use (default: ember::get_num_threads() when it runs).
  void set_num_threads(int n);
  // set_num_threads' value, else the process-wide ember::get_num_threads() at run time.
  int num_threads() const;

 private:
  struct Impl;
  std::vector<Tensor> run_timed(const std::vector<Tensor>& inputs,
                                std::vector<double>* launch_seconds,
                                std::vector<Tensor>* release) const;
  ExecPlan plan_;
  int num_threads_;  // 0: follow get_num_threads()
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember
