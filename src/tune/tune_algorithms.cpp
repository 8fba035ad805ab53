// Choosing a node's algorithm by measuring every one that applies: passes::measure_algorithms
// (declared in ember/graph/passes.h for the choose_algorithms pass; see ember/tune/tune.h).
#include <algorithm>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "ember/graph/passes.h"
#include "ember/jit/cache.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "ember/support/log.h"
#include "ember/tune/tune.h"
#include "measure.h"
#include "records.h"

namespace ember {

using passes::AlgorithmProblem;
using passes::AlgorithmResult;

namespace tune {
namespace {

// Rounds of the candidates together: enough for this many seconds, within these bounds.
constexpr double kRoundsBudget = 0.25;  // seconds
constexpr int kMinRounds = 3, kMaxRounds = 15;

struct Job {
  size_t problem = 0;
  std::string key;
  std::vector<std::string> kernels;  // each candidate's kernel name
  std::vector<size_t> same;          // other problems with the same key: they share the result
};

std::string ms(double seconds) {
  std::ostringstream os;
  os << std::setprecision(3) << seconds * 1e3 << " ms";
  return os.str();
}

void log_choice(const AlgorithmProblem& p, const AlgorithmResult& r) {
  if (!log_enabled("tune")) return;
  std::ostringstream os;
  os << p.what << ": ";
  if (r.from_record) {
    os << p.names[r.chosen] << " (" << ms(r.best_seconds) << "; " << p.names[0] << " "
       << ms(r.default_seconds) << "), from the tuning records";
  } else {
    for (size_t i = 0; i < p.names.size(); ++i)
      os << (i ? ", " : "") << p.names[i] << " " << ms(r.seconds[i]);
    os << ": chose " << p.names[r.chosen] << " (the rules': " << p.names[0] << ")";
  }
  log_message("tune", os.str());
}

// Each candidate once to warm up, then rounds of all of them interleaved; the fastest wins
// when it is clearly faster than the rules' choice.
AlgorithmResult measure(const AlgorithmProblem& p, const Job& job, const Module& module,
                        const std::vector<std::string>& symbols, const TuneOptions& options) {
  std::vector<std::unique_ptr<TaskBuffers>> buffers;
  std::vector<KernelRun> runs;
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    buffers.push_back(std::make_unique<TaskBuffers>(p.tasks[i], symbols, options.symbol_values));
    runs.push_back({module.symbol(job.kernels[i]), buffers.back().get()});
  }
  const std::vector<double> first = interleaved_medians(runs, 1);  // first touch, packing
  double round = 0.0;
  for (double t : first) round += t;
  const int rounds =
      std::clamp(static_cast<int>(kRoundsBudget / std::max(round, 1e-7)), kMinRounds, kMaxRounds);
  AlgorithmResult r;
  r.seconds = interleaved_medians(runs, rounds);
  const auto best = std::min_element(r.seconds.begin(), r.seconds.end()) - r.seconds.begin();
  if (r.seconds[best] < (1.0 - kMinGain) * r.seconds[0]) r.chosen = static_cast<size_t>(best);
  r.default_seconds = r.seconds[0];
  r.best_seconds = r.seconds[r.chosen];
  return r;
}

std::optional<AlgorithmResult> from_record(const std::string& key, const AlgorithmProblem& p) {
  std::optional<Record> rec = read_record(key, "algorithm");
  if (!rec) return std::nullopt;
  const auto it = std::find(p.names.begin(), p.names.end(), rec->choice);
  if (it == p.names.end()) {
    ignore_record(key, "'" + rec->choice + "' is not one of the algorithms that apply");
    return std::nullopt;
  }
  AlgorithmResult r;
  r.chosen = static_cast<size_t>(it - p.names.begin());
  r.default_seconds = rec->default_seconds;
  r.best_seconds = rec->best_seconds;
  r.from_record = true;
  return r;
}

}  // namespace
}  // namespace tune

std::vector<AlgorithmResult> passes::measure_algorithms(
    const std::vector<AlgorithmProblem>& problems, const std::vector<std::string>& symbols,
    const AlgorithmTuning& tuning) {
  using namespace tune;
  TuneOptions options;
  options.search_space = tuning.search_space;
  options.symbol_values = tuning.symbol_values;
  validate(options);
  std::vector<AlgorithmResult> results(problems.size());
  if (options.search_space <= 0) {
    for (AlgorithmResult& r : results) r.skipped = "tuning is off (search_space 0)";
    return results;
  }
  const std::string context = record_context(options, symbols);
  // The analytic blocking (tuned later for the winner); no names, so that a record serves
  // every layer of the same shapes.
  const codegen::KernelConfig config = [] {
    codegen::KernelConfig c;
    c.name_comments = false;
    return c;
  }();
  std::vector<Job> jobs;
  std::map<std::string, size_t> job_of_key;
  std::vector<std::string> kernels;
  std::set<std::string> generated;
  for (size_t i = 0; i < problems.size(); ++i) {
    const AlgorithmProblem& p = problems[i];
    EMBER_ASSERT(!p.names.empty() && p.names.size() == p.tasks.size(),
                 "an algorithm choice without candidates: " << p.what);
    for (const ir::Task& t : p.tasks) {
      std::string why = why_not_measurable(t, options.symbol_values);
      if (!why.empty()) results[i].skipped = why;
    }
    if (!results[i].skipped.empty()) continue;
    // The key covers every candidate's source: a change to any lowering measures again.
    std::vector<std::string> bodies;
    std::string measured = "algorithm of " + p.what + "\n";
    for (size_t c = 0; c < p.tasks.size(); ++c) {
      bodies.push_back(codegen::generate_kernel(p.tasks[c], "KERNEL_NAME", symbols, config));
      measured += "candidate " + p.names[c] + "\n" + bodies.back();
    }
    const std::string key = record_key(measured, context);
    if (std::optional<AlgorithmResult> rec = from_record(key, p)) {
      results[i] = *rec;
      log_choice(p, results[i]);
      continue;
    }
    if (auto it = job_of_key.find(key); it != job_of_key.end()) {
      jobs[it->second].same.push_back(i);
      continue;
    }
    Job job;
    job.problem = i;
    job.key = key;
    for (size_t c = 0; c < bodies.size(); ++c) {
      std::string name = "ember_a_" + sha256_hex(bodies[c]).substr(0, 16);
      job.kernels.push_back(name);
      if (!generated.insert(name).second) continue;  // the same kernel in another problem
      std::string src = bodies[c];
      src.replace(src.find("KERNEL_NAME"), 11, name);
      kernels.push_back("// " + p.names[c] + " for " + p.what + "\n" + src);
    }
    job_of_key[key] = jobs.size();
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return results;

  BuildRequest req;
  req.name = "tuning algorithms";
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  req.sources = codegen::make_translation_units(
      kernels, std::min<int>(cores, (static_cast<int>(kernels.size()) + 5) / 6));
  req.isa = isa_from_env();
  std::shared_ptr<Module> module = get_or_build(req);
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    const AlgorithmProblem& p = problems[job.problem];
    AlgorithmResult r = measure(p, job, *module, symbols, options);
    write_record(job.key,
                 {"algorithm", p.names[r.chosen], r.default_seconds, r.best_seconds,
                  static_cast<int>(p.names.size())},
                 p.what);
    log_choice(p, r);
    results[job.problem] = r;
    for (size_t other : job.same) results[other] = r;
    if (options.progress) options.progress(static_cast<int>(j + 1), static_cast<int>(jobs.size()));
  }
  return results;
}

}  // namespace ember
