// Tuning: the candidate spaces, builds with search_space 1 / 2 and parallel_k (results must equal a
// reference), the tuning records (reused, and a malformed one ignored), dumps and progress, and
// option errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/compile/build.h"
#include "ember/graph/pipeline.h"
#include "ember/jit/cache.h"
#include "ember/ops/ops.h"
#include "ember/support/error.h"
#include "ember/tune/tune.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

using tune::ParallelK;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// relu(x @ w + b) for x [M, K], as a traced and optimized graph with x symbolic.
struct Linear {
  int64_t M, N, K;
  Tensor w, b;
  FlowGraph graph;
  Linear(int64_t m, int64_t n, int64_t k, Shape x_shape) : M(m), N(n), K(k) {
    w = randn({K, N});
    b = randn({N});
    Tensor x = Tensor::symbol(x_shape, DType::float32, Device::cpu(), "x");
    graph = optimize(trace_from({ops::relu(ops::add(ops::matmul(x, w), b))}, {x}));
  }
  // The largest |got - reference| over the output, the reference summed in double.
  double max_error(const Tensor& x, const Tensor& got) const {
    double worst = 0.0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = element_as_double(b, j);
        for (int64_t k = 0; k < K; ++k)
          s += element_as_double(x, i * K + k) * element_as_double(w, k * N + j);
        worst = std::max(worst, std::abs(std::max(s, 0.0) - element_as_double(got, i * N + j)));
      }
    return worst;
  }
};

class TuneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_tune_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace

TEST(TuneCandidates, DefaultFirstAndLevelsGrow) {
  std::vector<tune::KernelShape> ks = {{6, 16}};
  auto none = tune::gemm_candidates(512, 512, 512, ks, 0, {});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_TRUE(none[0].is_default());
  auto small = tune::gemm_candidates(512, 512, 512, ks, 1, {});
  auto large = tune::gemm_candidates(512, 512, 512, ks, 2, {});
  EXPECT_TRUE(small[0].is_default());
  EXPECT_TRUE(large[0].is_default());
  EXPECT_EQ(small.size(),
            4u);  // the default + one micro-kernel x three K blocks
  EXPECT_GT(large.size(), 40u);
}

TEST(TuneCandidates, BlocksLargerThanTheProblemCollapse) {
  std::vector<tune::KernelShape> ks = {{6, 16}};
  // A 5x7x9 GEMM: every block clamps to the problem, so the large space shrinks to a few.
  auto tiny = tune::gemm_candidates(5, 7, 9, ks, 2, {});
  EXPECT_LE(tiny.size(), 8u);
  for (const auto& c : tiny) {
    EXPECT_LE(c.mc, 6);
    EXPECT_LE(c.nc, 16);
    EXPECT_LE(c.kc, 9);
  }
}

TEST(TuneCandidates, ParallelKModes) {
  std::vector<tune::KernelShape> ks = {{6, 16}};
  ParallelK search{ParallelK::Mode::Search, 0};
  auto s = tune::gemm_candidates(64, 64, 4096, ks, 0, search);
  std::set<int> splits;
  for (const auto& c : s) splits.insert(c.split_k);
  EXPECT_EQ(splits, (std::set<int>{0, 1, 2, 4}));
  // K too short to split in 4: that candidate is dropped.
  auto shallow = tune::gemm_candidates(64, 64, 6, ks, 0, search);
  for (const auto& c : shallow) EXPECT_LT(c.split_k, 4);
  ParallelK fixed{ParallelK::Mode::Fixed, 3};
  for (const auto& c : tune::gemm_candidates(64, 64, 4096, ks, 1, fixed)) EXPECT_EQ(c.split_k, 3);
  ParallelK off{ParallelK::Mode::Disabled, 0};
  EXPECT_EQ(off.fixed_split_k(), 1);
}

TEST_F(TuneTest, TunedBuildMatchesTheReferenceAndIsRecorded) {
  Linear lin(70, 130, 300, {70, 300});
  Tensor x = randn({70, 300});
  BuildOptions o;
  o.search_space = 1;
  o.dump_dir = (dir_ / "dump").string();
  std::map<std::string, int> last;
  o.progress = [&](const std::string& phase, int done, int total) {
    EXPECT_LE(done, total);
    last[phase] = done;
  };
  auto tuned = build_graph(lin.graph, o);
  EXPECT_LT(lin.max_error(x, tuned->run({x})[0]), 1e-3);
  EXPECT_EQ(last["tuning"], 1);
  EXPECT_EQ(last["generating kernels"], 1);
  std::string summary = read_text(dir_ / "dump" / "tuning.txt");
  // Level 1: the default plus 3 K blockings for each micro-kernel of this machine's ISA (one
  // on AVX2, more on AVX-512).
  const size_t at = summary.rfind(" candidates");
  ASSERT_NE(at, std::string::npos) << summary;
  const size_t from = summary.rfind(' ', at - 1) + 1;
  const int candidates = std::stoi(summary.substr(from, at - from));
  EXPECT_GE(candidates, 4) << summary;
  EXPECT_EQ((candidates - 1) % 3, 0) << summary;
  EXPECT_EQ(summary.find("from the tuning records"), std::string::npos) << summary;
  EXPECT_TRUE(fs::exists(dir_ / "dump" / "kernels" / "unit_0.cpp"));

  // The second build reads the record and measures nothing.
  last.clear();
  auto again = build_graph(lin.graph, o);
  EXPECT_EQ(last.count("tuning"), 0u);
  EXPECT_NE(read_text(dir_ / "dump" / "tuning.txt").find("from the tuning records"),
            std::string::npos);
  EXPECT_LT(lin.max_error(x, again->run({x})[0]), 1e-3);
}

TEST_F(TuneTest, MalformedRecordIsIgnoredAndReplaced) {
  Linear lin(33, 50, 70, {33, 70});
  BuildOptions o;
  o.search_space = 1;
  build_graph(lin.graph, o);
  int records = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(cache_dir()) / "tuning")) {
    // Only this test's record: other tests may run at the same time on the same cache.
    if (!e.is_regular_file() || read_text(e.path()).find(" 33x50x70") == std::string::npos)
      continue;
    std::ofstream(e.path()) << "ember-tuning 1\nconfig -5 x\n";
    ++records;
  }
  ASSERT_GT(records, 0);
  std::map<std::string, int> last;
  o.progress = [&](const std::string& phase, int done, int) { last[phase] = done; };
  auto g = build_graph(lin.graph, o);
  EXPECT_EQ(last["tuning"], 1);  // measured again
  Tensor x = randn({33, 70});
  EXPECT_LT(lin.max_error(x, g->run({x})[0]), 1e-3);
}

TEST_F(TuneTest, SymbolicShapesTuneAtTheGivenValuesAndStayGeneric) {
  Linear lin(40, 48, 64, {ir::var("n"), 64});
  BuildOptions o;
  o.search_space = 1;
  o.parallel_k = {ParallelK::Mode::Search, 0};
  o.dump_dir = (dir_ / "sym").string();
  build_graph(lin.graph,
              o);  // no value for n: the kernel keeps its default blocking
  EXPECT_NE(read_text(dir_ / "sym" / "tuning.txt").find("the symbolic size n has no value"),
            std::string::npos);
  o.symbol_values = {{"n", 40}};
  auto g = build_graph(lin.graph, o);
  EXPECT_NE(read_text(dir_ / "sym" / "tuning.txt").find("candidates"), std::string::npos);
  for (int64_t rows : {40, 7}) {  // tuned at n = 40, runs at any n
    Linear same = lin;
    same.M = rows;
    Tensor x = randn({rows, 64});
    EXPECT_LT(same.max_error(x, g->run({x})[0]), 1e-3) << rows;
  }
}

TEST_F(TuneTest, FixedSplitKIsExact) {
  Linear lin(8, 24, 1000, {8, 1000});
  BuildOptions o;
  o.parallel_k = {ParallelK::Mode::Fixed, 3};
  auto g = build_graph(lin.graph, o);
  Tensor x = randn({8, 1000});
  EXPECT_LT(lin.max_error(x, g->run({x})[0]), 1e-3);
}

TEST(TuneOptions, OutOfRangeValuesAreErrors) {
  BuildOptions o;
  o.search_space = 3;
  try {
    validate(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("search_space must be 0, 1 or 2 (got 3)"),
              std::string::npos)
        << e.what();
  }
  o.search_space = 0;
  o.parallel_k = {ParallelK::Mode::Fixed, 1};
  EXPECT_THROW(validate(o), Error);
}

TEST_F(TuneTest, UnwritableDumpDirIsAnError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "a_file") << "not a directory";
  Linear lin(4, 8, 16, {4, 16});
  BuildOptions o;
  o.dump_dir = (dir_ / "a_file").string();
  try {
    build_graph(lin.graph, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(dump_dir): choose a writable directory"),
              std::string::npos)
        << e.what();
  }
  o.dump_dir.clear();
  o.parallel_k = {ParallelK::Mode::Fixed, 1};
  try {
    validate(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel_k must split K into at least 2 parts (got 1)"),
              std::string::npos)
        << e.what();
  }
}
