// The GEMM tuning spaces (search_space 1 and 2) and the split-K modes.
#include <algorithm>
#include <set>
#include <tuple>

#include "ember/support/error.h"
#include "ember/tune/tune.h"

namespace ember::tune {

using codegen::GemmConfig;

int ParallelK::fixed_split_k() const {
  switch (mode) {
    case Mode::Disabled: return 1;
    case Mode::Fixed: return parts;
    default: return 0;
  }
}

void validate(const TuneOptions& o) {
  EMBER_CHECK(o.search_space >= 0 && o.search_space <= 2,
              "search_space must be 0, 1 or 2 (got "
                  << o.search_space << "): 0 uses the analytic schedules, 1 and 2 measure a "
                  << "small and a large space of them.");
  EMBER_CHECK(o.parallel_k.mode != ParallelK::Mode::Fixed || o.parallel_k.parts >= 2,
              "parallel_k must split K into at least 2 parts (got " << o.parallel_k.parts
                                                                    << "); use 'disabled' for 1.");
  for (const auto& [name, value] : o.symbol_values)
    EMBER_CHECK(value >= 0, "symbol_values: the size " << name << " = " << value << " is negative");
}

bool wants_tuning(const TuneOptions& options) {
  return options.search_space > 0 || options.parallel_k.mode == ParallelK::Mode::Search;
}

namespace {

int64_t round_up(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

// Blocks larger than the problem behave like the problem's size: clamp them, so candidates that
// would run identically are measured once.
GemmConfig clamp_to_problem(GemmConfig c, int64_t M, int64_t N, int64_t K, KernelShape ks) {
  if (c.mc > 0) c.mc = std::min(c.mc, round_up(M, ks.mr));
  if (c.nc > 0) c.nc = std::min(c.nc, round_up(N, ks.nr));
  if (c.kc > 0) c.kc = std::min(c.kc, K);
  return c;
}

// Level 1: each micro-kernel forced with the analytic blocking and with K blocks of 128 and 512
// (shallower and deeper than AVX2's default of 256; both shallower than AVX-512's 768). Level
// 2: a grid over the three cache blocks for each micro-kernel.
void blocking_space(int level, int kernel, KernelShape ks, std::vector<GemmConfig>& out) {
  if (level == 1) {
    for (int64_t kc : {0, 128, 512}) out.push_back({0, 0, kc, kernel, 0});
    return;
  }
  for (int64_t kc : {64, 128, 256, 384, 512, 768})
    for (int64_t mc_tiles : {4, 8, 16, 24, 48})
      for (int64_t nc_tiles : {8, 32, 128})
        out.push_back({mc_tiles * ks.mr, nc_tiles * ks.nr, kc, kernel, 0});
}

}  // namespace

std::vector<GemmConfig> gemm_candidates(int64_t M, int64_t N, int64_t K,
                                        const std::vector<KernelShape>& kernels, int search_space,
                                        const ParallelK& parallel_k) {
  const int fixed_split = parallel_k.fixed_split_k();
  std::vector<GemmConfig> blockings = {GemmConfig{}};
  if (search_space > 0)
    for (size_t i = 0; i < kernels.size(); ++i)
      blocking_space(search_space, static_cast<int>(i), kernels[i], blockings);
  std::vector<int> splits = {fixed_split};
  if (parallel_k.mode == ParallelK::Mode::Search) splits = {0, 1, 2, 4};
  std::vector<GemmConfig> out;
  std::set<std::tuple<int64_t, int64_t, int64_t, int, int>> seen;
  for (int split : splits) {
    for (GemmConfig c : blockings) {
      if (c.kernel >= 0) c = clamp_to_problem(c, M, N, K, kernels[c.kernel]);
      c.split_k = split;
      if (split >= 2 && K < 2 * split) continue;  // nothing to split
      if (seen.insert({c.mc, c.nc, c.kc, c.kernel, c.split_k}).second) out.push_back(c);
    }
  }
  return out;
}

}  // namespace ember::tune
