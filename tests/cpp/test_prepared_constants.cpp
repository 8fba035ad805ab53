// Constant GEMM operands prepared once when the graph is built (ExecPlan::prepared): results
// against a float64 loop for every ISA this CPU runs, the source dropped unless something
// else reads it, the bytes reported, and saved models loaded with the same or another ISA.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/jit/isa.h"
#include "ember/ops/nn.h"
#include "ember/ops/ops.h"
#include "ember/runtime/artifact.h"
#include "jit_fixture.h"

namespace ember {
namespace {

Tensor filled(const std::vector<int64_t>& dims, double seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(seed + 0.37 * static_cast<double>(i)));
  Shape s;
  for (int64_t d : dims) s.push_back(d);
  return from_values(v, s, DType::float32);
}

// out[m, n] = relu(sum_k a[m, k] * w(k, n) + 1), w [N, K] when transposed, else [K, N].
void expect_linear(const Tensor& out, const Tensor& a, const Tensor& w, bool transposed, int64_t M,
                   int64_t N, int64_t K, const std::string& what) {
  ASSERT_EQ(out.numel(), M * N) << what;
  int bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 1.0;
      for (int64_t p = 0; p < K; ++p)
        want += element_as_double(a, i * K + p) *
                element_as_double(w, transposed ? j * K + p : p * N + j);
      want = std::max(want, 0.0);
      const double got = element_as_double(out, i * N + j);
      if (std::fabs(got - want) > 1e-4 * (1 + std::fabs(want)) && bad++ < 5)
        ADD_FAILURE() << what << ": out[" << i << ", " << j << "] = " << got << ", expected "
                      << want;
    }
}

std::vector<std::string> isas() {
  std::vector<std::string> v = {"scalar"};
  if (static_cast<int>(detect_isa()) >= static_cast<int>(Isa::Avx2)) v.push_back("avx2");
  if (detect_isa() == Isa::Avx512) v.push_back("avx512");
  return v;
}

TEST(PreparedConstants, LinearAndMatmulMatchFloat64OnEveryIsa) {
  const int64_t K = 129, N = 65;
  for (const std::string& isa : isas()) {
    jit_test::ScopedEnv env("EMBER_ISA", isa);
    for (bool transposed : {true, false}) {
      Tensor w = transposed ? filled({N, K}, 0.3) : filled({K, N}, 0.3);
      Tensor x = Tensor::symbol({ir::var("m"), K}, DType::float32, Device::cpu(), "x");
      Tensor prod = transposed ? ops::matmul_nt(x, w) : ops::matmul(x, w);
      Tensor y = ops::relu(ops::add(prod, from_values({1.0}, {}, DType::float32)));
      auto g = optimize(trace_from({y}, {x})).build();
      const ExecPlan& plan = g->plan();
      ASSERT_EQ(plan.prepared.size(), 1u) << isa;
      const PreparedConstant& pc = plan.prepared[0];
      EXPECT_EQ(pc.K, K);
      EXPECT_EQ(pc.N, N);
      EXPECT_EQ(pc.transposed, transposed);
      EXPECT_EQ(plan.constants.count(pc.source), 0u) << "the source has no other reader";
      EXPECT_EQ(g->prepared_weight_bytes(), 4 * K * ((N + pc.nr - 1) / pc.nr * pc.nr));
      for (int64_t M : {1, 2, 5, 7, 17, 63, 65, 300}) {
        Tensor a = filled({M, K}, 0.1 * static_cast<double>(M));
        expect_linear(g->run({a})[0], a, w, transposed, M, N, K,
                      isa + (transposed ? " x @ w^T" : " x @ w") + " M=" + std::to_string(M));
      }
    }
  }
}

// A weight read by a gather and by a product (GPT-2's tied embedding): stored once, plus its
// panels.
TEST(PreparedConstants, ASourceWithAnotherReaderIsKept) {
  const int64_t V = 37, D = 20;
  Tensor w = filled({V, D}, 0.9);
  Tensor ids = Tensor::symbol({ir::var("t")}, DType::int64, Device::cpu(), "ids");
  Tensor h = ops::embedding(w, ids);
  Tensor logits = ops::matmul_nt(h, w);
  auto g = optimize(trace_from({logits}, {ids})).build();
  const ExecPlan& plan = g->plan();
  ASSERT_EQ(plan.prepared.size(), 1u);
  EXPECT_EQ(plan.constants.count(plan.prepared[0].source), 1u);
  Tensor in = from_values({3, 0, 36, 5}, {4}, DType::int64);
  Tensor out = g->run({in})[0];
  const int64_t rows[] = {3, 0, 36, 5};
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < V; ++j) {
      double want = 0;
      for (int64_t p = 0; p < D; ++p)
        want += element_as_double(w, rows[i] * D + p) * element_as_double(w, j * D + p);
      EXPECT_NEAR(element_as_double(out, i * V + j), want, 1e-4) << i << ", " << j;
    }
}

// Three 1 MiB weights, none a huge page on its own: built into one buffer that starts on a
// huge page, in the order the launches read them, and the chain still matches float64.
TEST(PreparedConstants, PreparedWeightsArePackedInRunOrder) {
  const int64_t D = 512, M = 3;
  std::vector<Tensor> ws;
  for (int l = 0; l < 3; ++l) {
    std::vector<double> v;
    for (int64_t i = 0; i < D * D; ++i)
      v.push_back(std::sin(0.3 * l + 0.37 * static_cast<double>(i)) / std::sqrt(D));
    ws.push_back(from_values(v, {D, D}, DType::float32));
  }
  Tensor x = Tensor::symbol({ir::var("m"), D}, DType::float32, Device::cpu(), "x");
  Tensor h = x;
  for (const Tensor& w : ws)
    h = ops::relu(ops::add(ops::matmul_nt(h, w), from_values({0.5}, {}, DType::float32)));
  auto g = optimize(trace_from({h}, {x})).build();
  const ExecPlan& plan = g->plan();
  ASSERT_EQ(plan.prepared.size(), 3u);
  std::vector<std::pair<size_t, const Tensor*>> by_launch;  // (first launch reading it, tensor)
  for (const PreparedConstant& pc : plan.prepared)
    for (size_t k = 0; k < plan.launches.size(); ++k)
      if (std::count(plan.launches[k].args.begin(), plan.launches[k].args.end(), pc.value)) {
        by_launch.emplace_back(k, &plan.constants.at(pc.value));
        break;
      }
  ASSERT_EQ(by_launch.size(), 3u);
  std::sort(by_launch.begin(), by_launch.end());
  const auto* first = static_cast<const char*>(by_launch[0].second->data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % (uintptr_t{2} << 20), 0u);
  size_t at = 0;
  for (const auto& [k, t] : by_launch) {
    EXPECT_EQ(static_cast<const char*>(t->data()), first + at) << "launch " << k;
    at += (static_cast<size_t>(t->nbytes()) + 63) / 64 * 64;
  }
  Tensor a = filled({M, D}, 0.7);
  std::vector<double> cur(static_cast<size_t>(M * D));
  for (int64_t i = 0; i < M * D; ++i) cur[static_cast<size_t>(i)] = element_as_double(a, i);
  for (const Tensor& w : ws) {
    std::vector<double> next(cur.size());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < D; ++j) {
        double sum = 0.5;
        for (int64_t p = 0; p < D; ++p)
          sum += cur[static_cast<size_t>(i * D + p)] * element_as_double(w, j * D + p);
        next[static_cast<size_t>(i * D + j)] = std::max(sum, 0.0);
      }
    cur = next;
  }
  Tensor out = g->run({a})[0];
  for (int64_t i = 0; i < M * D; ++i)
    ASSERT_NEAR(element_as_double(out, i), cur[static_cast<size_t>(i)],
                1e-4 * (1 + std::fabs(cur[static_cast<size_t>(i)])))
        << i;
}

// Saved with the panels: loaded as they are (same bits), or prepared again when the kernels
// are compiled for another ISA.
TEST(PreparedConstants, SavedModelsReloadWithTheSameOrAnotherIsa) {
  const int64_t K = 70, N = 33;
  Tensor w = filled({N, K}, 0.5);
  Tensor x = Tensor::symbol({ir::var("m"), K}, DType::float32, Device::cpu(), "x");
  Tensor y = ops::relu(ops::add(ops::matmul_nt(x, w), from_values({1.0}, {}, DType::float32)));
  auto model = std::make_shared<CompiledModel>(optimize(trace_from({y}, {x})).build());
  EXPECT_GT(model->info().prepared_weight_bytes, 0);
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ember-prepared-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "m.ember").string();
  model->save(path);
  Tensor a = filled({9, K}, 0.2);
  Tensor expected = model->run({a})[0];
  auto same = load(path);
  EXPECT_EQ(same->info().prepared_weight_bytes, model->info().prepared_weight_bytes);
  Tensor got = same->run({a})[0];
  ASSERT_EQ(got.nbytes(), expected.nbytes());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), static_cast<size_t>(got.nbytes())), 0);
  for (const std::string& isa : isas()) {
    if (isa == model->info().isa) continue;
    jit_test::ScopedEnv env("EMBER_ISA", isa);
    auto other = load(path);
    if (other->info().rebuilt.empty()) continue;  // a narrower file loads as it is
    EXPECT_EQ(other->info().isa, isa);
    expect_linear(other->run({a})[0], a, w, true, 9, N, K, "loaded for " + isa);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember
