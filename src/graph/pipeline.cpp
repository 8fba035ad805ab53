// The graph optimizer's pass list: the first file a newcomer reads (docs/principles.md,
// principle 2).
//
// Order matters:
//   1. eliminate_dead_code  - first, so later passes do not work on nodes nobody needs;
//   2. fold_constants       - before fusion: a node fed only by constants disappears instead
//                             of being fused into a kernel that recomputes it every run;
//   3. choose_algorithms    - after folding: a rule may depend on an input being a constant
//                             (Winograd transforms a constant weight once: the transform
//                             is a node that the build prepares, OpDef::constant_preparation);
//   4. choose_layouts       - after choose_algorithms, which converts around each operator that
//                             runs on another layout (a blocked convolution): chains of them
//                             and the elementwise operators between them stay in that layout;
//   5. rewrite_patterns     - after folding, so that masks and scales built from constants
//                             are constants the rules can read (a causal tril mask);
//                             before fusion, which would hide the patterns in fused groups;
//   6. fuse_operators       - last: it turns groups of nodes into kernels, and passes that
//                             match single operators would no longer see them.
#include "ember/graph/pipeline.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "ember/graph/passes.h"
#include "ember/support/error.h"

namespace ember {

namespace {

struct PassEntry {
  const char* name;
  FlowGraph (*run)(const FlowGraph&, const PassOptions&);
};

// A pass that takes no options.
template <FlowGraph (*Pass)(const FlowGraph&)>
FlowGraph plain(const FlowGraph& g, const PassOptions&) {
  return Pass(g);
}

FlowGraph choose_algorithms(const FlowGraph& g, const PassOptions& o) {
  return passes::choose_algorithms(g, o.tuning);
}

const std::vector<PassEntry>& pipeline() {
  static const std::vector<PassEntry> passes = {
      {"eliminate_dead_code", plain<passes::eliminate_dead_code>},
      {"fold_constants", plain<passes::fold_constants>},
      {"choose_algorithms", choose_algorithms},
      {"choose_layouts", plain<passes::choose_layouts>},
      {"rewrite_patterns", plain<passes::rewrite_patterns>},
      {"fuse_operators", plain<passes::fuse_operators>},
  };
  return passes;
}

void dump(const std::string& dir, int index, const std::string& name, const FlowGraph& g) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  EMBER_CHECK(!ec, "optimize: cannot create dump directory '" << dir << "': " << ec.message());
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%02d_", index);
  std::ofstream f(fs::path(dir) / (prefix + name + ".txt"));
  EMBER_CHECK(f.good(), "optimize: cannot write into dump directory '" << dir << "'");
  f << g.str() << "\n";
}

}  // namespace

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const auto& p : pipeline()) names.push_back(p.name);
  return names;
}

FlowGraph optimize(const FlowGraph& graph, const PassOptions& options,
                   std::vector<PassTiming>* timings) {
  FlowGraph g = graph;
  g.verify();
  if (!options.dump_dir.empty()) dump(options.dump_dir, 0, "input", g);
  int index = 1;
  for (const auto& pass : pipeline()) {
    auto start = std::chrono::steady_clock::now();
    int before = static_cast<int>(g.nodes.size());
    g = pass.run(g, options);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    g.verify();
    if (timings) timings->push_back({pass.name, secs, before, static_cast<int>(g.nodes.size())});
    if (!options.dump_dir.empty()) dump(options.dump_dir, index, pass.name, g);
    ++index;
  }
  return g;
}

}  // namespace ember
