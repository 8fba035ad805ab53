// Tuning the GEMM blocking of a graph's matmul kernels (see ember/tune/tune.h).
#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "ember/jit/cache.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "ember/tune/tune.h"
#include "measure.h"
#include "records.h"

namespace ember::tune {

using codegen::GemmConfig;

namespace {

// Measuring stops narrowing the space once a task's first round would take longer than this.
constexpr double kFirstRoundBudget = 2.0;  // seconds
constexpr size_t kFinalists = 6;

const char* kProbe =
    "extern \"C\" int ember_gemm_kernel_shapes(int* mr, int* nr, int cap) {\n"
    "  const int n = ember_rt::gemm_kernel_count();\n"
    "  for (int i = 0; i < n && i < cap; ++i) {\n"
    "    mr[i] = ember_rt::gemm_kernel_mr(i);\n"
    "    nr[i] = ember_rt::gemm_kernel_nr(i);\n"
    "  }\n"
    "  return n;\n"
    "}\n";

struct Job {
  size_t task = 0;
  std::string name, source, key;
  int64_t M = 0, N = 0, K = 0;
  std::vector<size_t> same;  // other tasks with the same kernel: they share the result
};

const ir::Stage* first_matmul(const ir::Task& task) {
  for (const ir::Stage& s : task.stages)
    if (s.kind == ir::StageKind::Matmul) return &s;
  return nullptr;
}

// Why `task` keeps the default blocking without measuring, or "" when it can be measured.
std::string why_not_tunable(const ir::Task& task, const TuneOptions& options) {
  if (first_matmul(task) == nullptr) return "no matmul stage";
  return why_not_measurable(task, options.symbol_values);
}

// A GEMM blocking as a record ("config <mc> <nc> <kc> <kernel> <split_k>") and back.
Record to_record(const TuneResult& r) {
  const GemmConfig& c = r.config;
  std::ostringstream os;
  os << c.mc << " " << c.nc << " " << c.kc << " " << c.kernel << " " << c.split_k;
  return {"config", os.str(), r.default_seconds, r.best_seconds, r.candidates};
}

std::optional<TuneResult> from_record(const std::string& key) {
  std::optional<Record> rec = read_record(key, "config");
  if (!rec) return std::nullopt;
  TuneResult r;
  GemmConfig& c = r.config;
  std::istringstream in(rec->choice);
  if (!(in >> c.mc >> c.nc >> c.kc >> c.kernel >> c.split_k) || c.mc < 0 || c.nc < 0 || c.kc < 0 ||
      c.split_k < 0) {
    ignore_record(key, "the blocking '" + rec->choice + "' is not one");
    return std::nullopt;
  }
  r.default_seconds = rec->default_seconds;
  r.best_seconds = rec->best_seconds;
  r.candidates = rec->candidates;
  r.from_record = true;
  return r;
}

std::vector<KernelShape> probe_kernels(const Module& module) {
  using Probe = int (*)(int*, int*, int);
  auto probe = reinterpret_cast<Probe>(module.find_symbol("ember_gemm_kernel_shapes"));
  EMBER_ASSERT(probe != nullptr, "the tuning module has no kernel probe");
  int mr[16], nr[16];
  int n = std::min(probe(mr, nr, 16), 16);
  std::vector<KernelShape> shapes;
  for (int i = 0; i < n; ++i) shapes.push_back({mr[i], nr[i]});
  return shapes;
}

TuneResult measure(const Job& job, const ir::Task& task, const std::vector<std::string>& symbols,
                   ember_kernel_fn fn, int64_t* global, const std::vector<KernelShape>& shapes,
                   const TuneOptions& options) {
  TaskBuffers buffers(task, symbols, options.symbol_values);
  std::vector<GemmConfig> cands =
      gemm_candidates(job.M, job.N, job.K, shapes, options.search_space, options.parallel_k);
  auto select = [&](size_t i) {
    const GemmConfig& c = cands[i];
    global[0] = c.mc, global[1] = c.nc, global[2] = c.kc, global[3] = c.kernel;
    global[4] = c.split_k;
  };
  select(0);
  median_seconds(fn, buffers,
                 1);  // first touch of the buffers and the packing scratch
  const double t0 = std::max(median_seconds(fn, buffers, 3), 1e-7);
  int reps = std::clamp(static_cast<int>(0.004 / t0), 1, 5);
  // A large GEMM with a large space: measure an even sample of it, the default included.
  size_t affordable = std::max<size_t>(8, static_cast<size_t>(kFirstRoundBudget / (t0 * reps)));
  if (cands.size() > affordable) {
    std::vector<GemmConfig> sample;
    for (size_t i = 0; i < affordable; ++i) sample.push_back(cands[i * cands.size() / affordable]);
    cands = std::move(sample);
  }
  std::vector<double> first = interleaved_medians(fn, buffers, cands.size(), select, reps);
  std::vector<size_t> order(cands.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  order.resize(std::min(order.size(), kFinalists));
  if (std::find(order.begin(), order.end(), 0) == order.end()) order.push_back(0);
  int rounds = std::clamp(static_cast<int>(0.02 / t0), 5, 15);
  std::vector<double> second = interleaved_medians(
      fn, buffers, order.size(), [&](size_t i) { select(order[i]); }, rounds);
  size_t best = 0, def = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (second[i] < second[best]) best = i;
    if (order[i] == 0) def = i;
  }
  if (second[best] > (1.0 - kMinGain) * second[def]) best = def;
  TuneResult r;
  r.config = cands[order[best]];
  r.default_seconds = second[def];
  r.best_seconds = second[best];
  r.candidates = static_cast<int>(cands.size());
  select(0);
  return r;
}

}  // namespace

std::vector<TuneResult> tune_gemm_tasks(const std::vector<ir::Task>& tasks,
                                        const std::vector<std::string>& symbols,
                                        const TuneOptions& options) {
  std::vector<TuneResult> results(tasks.size());
  for (TuneResult& r : results) r.config.split_k = options.parallel_k.fixed_split_k();
  if (!wants_tuning(options)) {
    for (TuneResult& r : results) r.skipped = "tuning is off (search_space 0)";
    return results;
  }
  const std::string context = record_context(options, symbols);
  std::vector<Job> jobs;
  std::map<std::string, size_t> job_of_key;
  codegen::KernelConfig tunable;
  tunable.gemm_from_global = true;
  tunable.name_comments = false;  // a record serves every layer of the same shapes
  for (size_t i = 0; i < tasks.size(); ++i) {
    results[i].skipped = why_not_tunable(tasks[i], options);
    if (!results[i].skipped.empty()) continue;
    std::string src = codegen::generate_kernel(tasks[i], "KERNEL_NAME", symbols, tunable);
    std::string key = record_key(src, context);
    if (std::optional<TuneResult> rec = from_record(key)) {
      results[i] = *rec;
      continue;
    }
    if (auto it = job_of_key.find(key); it != job_of_key.end()) {
      jobs[it->second].same.push_back(i);
      continue;
    }
    Job job;
    job.task = i;
    job.key = key;
    job.name = "ember_t_" + key.substr(0, 16);
    job.source = src.replace(src.find("KERNEL_NAME"), 11, job.name);
    const ir::Stage& s = *first_matmul(tasks[i]);
    const Shape& a = tasks[i].buffers[s.a].shape;
    const Shape& c = tasks[i].buffers[s.out].shape;
    job.M = ir::eval_int(c[c.size() - 2], options.symbol_values);
    job.N = ir::eval_int(c[c.size() - 1], options.symbol_values);
    job.K = ir::eval_int(a[a.size() - 1], options.symbol_values);
    job_of_key[key] = jobs.size();
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return results;

  std::vector<std::string> kernels = {kProbe};
  for (const Job& j : jobs) kernels.push_back("// tuning " + tasks[j.task].name + "\n" + j.source);
  BuildRequest req;
  req.name = "tuning";
  int cores = std::max(1u, std::thread::hardware_concurrency());
  req.sources = codegen::make_translation_units(
      kernels, std::min<int>(cores, (static_cast<int>(kernels.size()) + 5) / 6));
  req.isa = isa_from_env();
  std::shared_ptr<Module> module = get_or_build(req);
  auto* global = static_cast<int64_t*>(module->find_symbol(codegen::kTuningGlobal));
  EMBER_ASSERT(global != nullptr, "the tuning module has no " << codegen::kTuningGlobal);
  const std::vector<KernelShape> shapes = probe_kernels(*module);
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    TuneResult r =
        measure(job, tasks[job.task], symbols, module->symbol(job.name), global, shapes, options);
    write_record(job.key, to_record(r),
                 tasks[job.task].name + " " + std::to_string(job.M) + "x" + std::to_string(job.N) +
                     "x" + std::to_string(job.K));
    results[job.task] = r;
    for (size_t other : job.same) results[other] = r;
    if (options.progress) options.progress(static_cast<int>(j + 1), static_cast<int>(jobs.size()));
  }
  return results;
}

}  // namespace ember::tune
