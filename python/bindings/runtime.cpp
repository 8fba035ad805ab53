// ember.CompiledGraph, threads, the kernel cache and the instruction set.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/jit/cache.h"
#include "ember/jit/compiler.h"
#include "ember/jit/isa.h"
#include "ember/ops/ops.h"
#include "ember/runtime/compiled_graph.h"
#include "ember/runtime/thread_pool.h"
#include "ember/tune/peak.h"

namespace ember::py {

namespace {

std::vector<TensorType> plan_types(const ExecPlan& plan, const std::vector<int>& ids) {
  std::vector<TensorType> out;
  for (int id : ids) out.push_back(plan.values[static_cast<size_t>(id)]);
  return out;
}

nb::dict memory_stats(const CompiledGraph& g) {
  MemoryPlanStats s = g.memory_stats();
  nb::dict d;
  d["workspace_bytes"] = s.workspace_bytes;
  d["unshared_bytes"] = s.unshared_bytes;
  d["live_bytes"] = s.live_bytes;
  d["plans_made"] = s.plans_made;
  return d;
}

// CompiledGraph.run(inputs, release_inputs=True): `inputs` is a list the caller gives up.
// It is emptied before the run, so the graph's references are the only ones this call
// adds; when the run fails before dropping any (a bad input), the list is refilled.
std::vector<Tensor> run_releasing(const CompiledGraph& g, nb::handle inputs) {
  EMBER_CHECK(PyList_Check(inputs.ptr()), "CompiledGraph.run: release_inputs=True takes a list "
                                              << "of tensors (it is emptied), got an object of "
                                              << "type " << Py_TYPE(inputs.ptr())->tp_name);
  std::vector<Tensor> list = tensor_list(inputs, "CompiledGraph.run");
  PyList_SetSlice(inputs.ptr(), 0, PyList_GET_SIZE(inputs.ptr()), nullptr);
  try {
    nb::gil_scoped_release release;
    return g.run_releasing(list);
  } catch (...) {
    if (std::all_of(list.begin(), list.end(), [](const Tensor& t) { return t.defined(); })) {
      for (const Tensor& t : list) nb::cast<nb::list>(inputs).append(nb::cast(t));
    }
    throw;
  }
}

nb::dict pool_stats(const WorkspacePool& pool) {
  WorkspacePool::Stats s = pool.stats();
  nb::dict d;
  d["idle"] = s.idle;
  d["idle_bytes"] = s.idle_bytes;
  d["allocations"] = s.allocations;
  return d;
}

nb::dict stats_dict() {
  CacheStats s = cache_stats();
  nb::dict d;
  d["memory_hits"] = s.memory_hits;
  d["disk_hits"] = s.disk_hits;
  d["builds"] = s.builds;
  d["build_seconds"] = s.build_seconds;
  return d;
}

std::string usage_repr(const CacheUsage& u) {
  std::string out = "CacheUsage(dir='" + u.dir + "'";
  for (const CacheCategoryUsage& c : u.categories) {
    out += ", " + c.name + "=(" + std::to_string(c.entries) + " entries, " +
           std::to_string(c.bytes) + " bytes)";
  }
  return out + ", total_bytes=" + std::to_string(u.total_bytes) + ")";
}

// ember.cache_usage(), clear_cache(), prune_cache() and what they return.
void bind_cache_admin(nb::module_& m) {
  nb::class_<CacheCategoryUsage>(m, "CacheCategoryUsage",
                                 "What one kind of file takes in the kernel cache.")
      .def_ro("name", &CacheCategoryUsage::name, "'kernels', 'pch', 'tuning' or 'tmp'.")
      .def_ro("entries", &CacheCategoryUsage::entries)
      .def_ro("bytes", &CacheCategoryUsage::bytes, "Total size of its files.")
      .def("__repr__", [](const CacheCategoryUsage& c) {
        return "CacheCategoryUsage(name='" + c.name + "', entries=" + std::to_string(c.entries) +
               ", bytes=" + std::to_string(c.bytes) + ")";
      });
  nb::class_<CacheUsage>(m, "CacheUsage", "The disk cache's contents, by category.")
      .def_ro("dir", &CacheUsage::dir, "The cache directory (ember.cache_dir()).")
      .def_ro("categories", &CacheUsage::categories,
              "kernels (compiled modules), pch (precompiled headers), tuning (GEMM tuning "
              "records), tmp (builds in progress and leftovers), in that order.")
      .def_ro("total_bytes", &CacheUsage::total_bytes)
      .def("category", &CacheUsage::category, nb::arg("name"), nb::rv_policy::copy,
           "The category called `name`.")
      .def("__repr__", &usage_repr);
  nb::class_<PruneResult>(m, "PruneResult", "What clear_cache() or prune_cache() removed.")
      .def_ro("kernels_removed", &PruneResult::kernels_removed)
      .def_ro("pch_removed", &PruneResult::pch_removed)
      .def_ro("tuning_removed", &PruneResult::tuning_removed)
      .def_ro("temporaries_removed", &PruneResult::temporaries_removed)
      .def_ro("bytes_freed", &PruneResult::bytes_freed)
      .def_ro("bytes_left", &PruneResult::bytes_left, "The cache's total size afterwards.")
      .def("__repr__", [](const PruneResult& r) {
        return "PruneResult(kernels_removed=" + std::to_string(r.kernels_removed) +
               ", pch_removed=" + std::to_string(r.pch_removed) +
               ", tuning_removed=" + std::to_string(r.tuning_removed) +
               ", temporaries_removed=" + std::to_string(r.temporaries_removed) +
               ", bytes_freed=" + std::to_string(r.bytes_freed) +
               ", bytes_left=" + std::to_string(r.bytes_left) + ")";
      });
  m.def("cache_usage", &cache_usage, nb::call_guard<nb::gil_scoped_release>(),
        "Entries and bytes of the disk cache by category (only ember's files are counted).");
  m.def("clear_cache", &clear_cache, nb::call_guard<nb::gil_scoped_release>(),
        "Removes every compiled kernel module, precompiled header and tuning record from the "
        "disk cache, and stale temporaries; builds in progress and files that are not "
        "ember's are left. Safe while other processes use the cache. Modules already loaded "
        "stay usable.");
  m.def("prune_cache", &prune_cache, nb::arg("max_bytes"), nb::call_guard<nb::gil_scoped_release>(),
        "Removes stale temporaries, then the least recently used kernel modules and "
        "precompiled headers until the disk cache takes at most `max_bytes` (tuning records "
        "are kept).");
  m.def("parse_size", &parse_size, nb::arg("text"), nb::arg("what") = "size",
        "Bytes in a size such as '500M' or '2G' (suffix k, M, G or T, powers of 1024), as "
        "EMBER_CACHE_MAX_SIZE is read; ember.EmberError naming `what` otherwise.");
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<WorkspacePool>(
      m, "WorkspacePool",
      "Idle workspaces (the memory of a graph's intermediate values) lent to the runs of "
      "CompiledGraphs. Graphs given one pool (CompiledGraph.workspace_pool) that run one "
      "after the other keep one workspace between calls, the largest any of them needs; runs "
      "in several threads at once each take their own.")
      .def(nb::init<size_t>(), nb::arg("max_idle") = 8,
           "A pool that keeps at most `max_idle` idle workspaces.")
      .def_prop_ro("stats", &pool_stats,
                   "{'idle', 'idle_bytes', 'allocations'}: the workspaces held between runs, "
                   "their bytes, and how many were allocated since the pool was made.")
      .def("clear", &WorkspacePool::clear,
           "Frees the idle workspaces (the next run allocates one again).");

  nb::class_<CompiledGraph>(m, "CompiledGraph",
                            "A graph's compiled kernels with a memory plan; run() takes one call. "
                            "Several threads may run it at once.")
      .def(
          "run",
          [](const CompiledGraph& g, nb::handle inputs, bool release_inputs) {
            if (release_inputs) return run_releasing(g, inputs);
            // One tensor is one input (not a sequence of its rows).
            std::vector<Tensor> list = tensor_list(inputs, "CompiledGraph.run");
            nb::gil_scoped_release release;
            return g.run(list);
          },
          nb::arg("inputs"), nb::arg("release_inputs") = false,
          nb::sig("def run(self, inputs: Tensor | collections.abc.Sequence[Tensor], "
                  "release_inputs: bool = False) -> list[Tensor]"),
          "Runs every kernel on the input tensors (a list, or one tensor); returns a list of "
          "new output tensors. With release_inputs=True, `inputs` must be a list: it is "
          "emptied, and each input is dropped right after the last kernel that reads it, so "
          "one the caller holds no other reference to is freed during the run (refilled when "
          "the run fails before dropping any).")
      .def(
          "__call__",
          [](const CompiledGraph& g, nb::args args) {
            std::vector<Tensor> inputs = tensor_list(args, "CompiledGraph.__call__");
            std::vector<Tensor> outputs;
            {
              nb::gil_scoped_release release;
              outputs = g.run(inputs);
            }
            return tensors_to_python(outputs);
          },
          nb::sig("def __call__(self, *args: Tensor) -> Tensor | tuple[Tensor, ...]"),
          "run() with the inputs as arguments; returns a tensor, or a tuple for several outputs.")
      .def_prop_ro(
          "memory_stats", &memory_stats,
          "{'workspace_bytes', 'unshared_bytes', 'live_bytes', 'plans_made'} of the memory "
          "planner: the workspace, the intermediate values and scratch buffers without "
          "reuse, the most of them live at one launch (no placement needs less).")
      .def_prop_rw("workspace_pool", &CompiledGraph::workspace_pool,
                   &CompiledGraph::set_workspace_pool,
                   "The WorkspacePool its runs take their workspace from: by default one of "
                   "its own; set one shared by graphs that run one after the other.")
      .def_prop_ro("prepared_weight_bytes", &CompiledGraph::prepared_weight_bytes,
                   "Bytes of the constants prepared once for the kernels (GEMM weights packed "
                   "in their micro-kernel's order), part of the graph's constants.")
      .def_prop_ro("constant_bytes", &CompiledGraph::constant_bytes,
                   "Bytes of the constants the graph holds for its lifetime (weights, values "
                   "folded at compile time, prepared weights).")
      .def("set_num_threads", &CompiledGraph::set_num_threads, nb::arg("n"),
           "Threads the kernels of this graph may use.")
      .def_prop_ro("num_threads", &CompiledGraph::num_threads)
      .def_prop_ro("inputs",
                   [](const CompiledGraph& g) { return plan_types(g.plan(), g.plan().inputs); })
      .def_prop_ro("outputs",
                   [](const CompiledGraph& g) { return plan_types(g.plan(), g.plan().outputs); })
      .def_prop_ro(
          "kernel_names",
          [](const CompiledGraph& g) {
            std::vector<std::string> names;
            for (const KernelLaunch& k : g.plan().launches) names.push_back(k.name);
            return names;
          },
          "The kernels launched by one run, in order.");

  m.def("set_num_threads", &set_num_threads, nb::arg("n"),
        "Resizes ember's thread pool (default: EMBER_NUM_THREADS, else one per hardware thread).");
  m.def("get_num_threads", &get_num_threads);
  m.def(
      "wake_workers", []() { default_pool().prewake(); },
      "Wakes the thread pool's sleeping workers and keeps them spinning for about 100 us, so "
      "that a run starting within that time does not wait for them to wake up (call it before "
      "work of your own that precedes a run, such as converting its inputs).");
  m.def(
      "use_openmp", [](bool on) { return default_pool().use_openmp(on); }, nb::arg("on"),
      "Runs ember's parallel kernels on the threads of the OpenMP runtime the process has "
      "loaded already (PyTorch's) instead of ember's own pool (on=True), or on its own pool "
      "again (on=False). Returns whether the OpenMP runtime is in use: False when none is "
      "loaded. The torch backend turns it on for training unless EMBER_OPENMP=0.");
  m.def(
      "uses_openmp", []() { return default_pool().uses_openmp(); },
      "Whether ember's parallel kernels run on the process's OpenMP runtime (use_openmp).");
  m.def("cache_dir", &cache_dir,
        "The kernel cache: EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else ~/.cache/ember.");
  m.def("cache_stats", &stats_dict,
        "Kernel cache counters of this process: {'memory_hits', 'disk_hits', 'builds', "
        "'build_seconds'}.");
  m.def("reset_cache_stats", &reset_cache_stats);
  bind_cache_admin(m);
  m.def(
      "clear_memory_cache",
      []() {
        ops::clear_imperative_cache();
        clear_memory_cache();
      },
      "Forgets the kernel modules and the compiled imperative operators held in memory (the "
      "disk cache stays).");
  m.def(
      "isa", []() { return isa_name(isa_from_env()); },
      "The instruction set kernels are generated for: 'scalar', 'avx2' or 'avx512' (EMBER_ISA).");
  m.def(
      "machine_peak",
      [](int threads, bool remeasure) {
        MachinePeak p;
        {
          nb::gil_scoped_release release;
          p = machine_peak(threads, remeasure);
        }
        nb::dict d;
        d["gflops"] = p.gflops;
        d["gbps"] = p.gbps;
        d["gbps_l2"] = p.gbps_l2;
        d["gbps_llc"] = p.gbps_llc;
        d["l2_bytes"] = p.l2_bytes;
        d["llc_bytes"] = p.llc_bytes;
        d["threads"] = p.threads;
        d["isa"] = p.isa;
        d["cpu"] = p.cpu;
        d["from_record"] = p.from_record;
        d["record"] = p.record;
        return d;
      },
      nb::arg("threads") = 0, nb::arg("remeasure") = false,
      nb::sig("def machine_peak(threads: int = 0, remeasure: bool = False) -> "
              "dict[str, typing.Any]"),
      "This machine's peaks with `threads` threads (0: get_num_threads()), measured once and "
      "kept in the cache directory (ember/tune/peak.h): {'gflops' (float32 FMA throughput with "
      "the kernels' ISA), 'gbps' (triad bandwidth from memory), 'gbps_l2' and 'gbps_llc' (from "
      "the level-2 and last-level caches), 'l2_bytes' and 'llc_bytes' (their sizes), "
      "'threads', 'isa', 'cpu', 'from_record', 'record' (its path)}. With `remeasure`, "
      "measured again, each figure the larger of that and the record's.");
  m.def("runtime_include_dir", &runtime_include_dir,
        "Where generated kernels find ember_rt/*.h (EMBER_RUNTIME_INCLUDE overrides it).");
}

}  // namespace ember::py
