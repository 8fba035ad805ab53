// ember quick start in C++: tensors, operators, symbolic tensors, flow graphs, compiled graphs.
//
// Built as `ember_quickstart` in the C++ tree: bash scripts/setup.sh && build/cpp/ember_quickstart
// Set EMBER_CACHE_DIR to an empty directory to see a cold compile.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/jit/cache.h"
#include "ember/ops/ops.h"
#include "ember/runtime/compiled_graph.h"
#include "ember/support/error.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void section(const std::string& title) { std::cout << "\n--- " << title << " ---\n"; }

ember::Tensor linear_bias(const ember::Tensor& x, const ember::Tensor& b, const ember::Tensor& c) {
  return ember::ops::add(ember::ops::matmul(x, b), c);
}

// Builds `graph`, printing how long it took and where the kernels came from.
std::shared_ptr<ember::CompiledGraph> timed_build(const ember::FlowGraph& graph,
                                                  const char* label) {
  ember::CacheStats before = ember::cache_stats();
  auto start = Clock::now();
  std::shared_ptr<ember::CompiledGraph> compiled = graph.build();
  double ms = ms_since(start);
  ember::CacheStats after = ember::cache_stats();
  std::printf("%s: %8.1f ms (compiled %lld module(s), %lld from the disk cache, %lld in memory)\n",
              label, ms, static_cast<long long>(after.builds - before.builds),
              static_cast<long long>(after.disk_hits - before.disk_hits),
              static_cast<long long>(after.memory_hits - before.memory_hits));
  return compiled;
}

// Largest |x - y| over two concrete tensors of the same shape.
double max_abs_diff(const ember::Tensor& x, const ember::Tensor& y) {
  double worst = 0.0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    worst =
        std::max(worst, std::abs(ember::element_as_double(x, i) - ember::element_as_double(y, i)));
  }
  return worst;
}

int run() {
  std::cout << "ember " << EMBER_VERSION << ", kernel cache in " << ember::cache_dir() << "\n";

  section("Define tensors");
  ember::Tensor a = ember::randn({2, 3});
  std::cout << a.str() << "\n";

  section("Run operators (imperative)");
  ember::Tensor b = ember::randn({3, 2});
  ember::Tensor c = ember::randn({2});
  ember::Tensor d = ember::ops::add(ember::ops::matmul(a, b), c);
  std::cout << d.str() << "\n";

  section("Symbolic tensors and flow graphs");
  ember::Tensor x = ember::Tensor::symbol(a.shape(), a.dtype(), a.device(), "x");
  ember::Tensor y = linear_bias(x, b, c);
  std::cout << "x: " << x.str() << "\ny: " << y.str() << "\n";
  ember::FlowGraph graph = ember::trace_from({y}, {x});
  std::cout << graph.str() << "\n";

  section("Optimize the flow graph");
  std::vector<ember::PassTiming> timings;
  ember::FlowGraph optimized = ember::optimize(graph, {}, &timings);
  std::cout << optimized.str() << "\n";
  for (const ember::PassTiming& t : timings) {
    std::printf("  %-28s %8.3f ms  nodes %d -> %d\n", t.pass.c_str(), t.seconds * 1e3,
                t.nodes_before, t.nodes_after);
  }

  section("Build and run");
  std::shared_ptr<ember::CompiledGraph> compiled = timed_build(optimized, "first build");
  ember::Tensor y1 = optimized({a})[0];
  std::cout << y1.str() << "\n";
  ember::Tensor y2 = compiled->run({a})[0];
  std::cout << y2.str() << "\n";
  std::printf("max |graph - imperative| = %.2e, max |compiled - imperative| = %.2e\n",
              max_abs_diff(y1, d), max_abs_diff(y2, d));

  section("Warm start");
  // Drop every reference to the kernels so the next build finds them on disk, as a new
  // process would: a hash of the generated source and a dlopen.
  compiled.reset();
  optimized = ember::FlowGraph();
  ember::clear_memory_cache();
  timed_build(ember::optimize(ember::trace_from({y}, {x})), " warm build");
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const ember::Error& e) {
    std::cerr << "ember error: " << e.what() << "\n";
  } catch (const ember::InternalError& e) {
    std::cerr << e.what() << "\n";
  }
  return 1;
}
