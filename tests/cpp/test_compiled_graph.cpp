// Tests for CompiledGraph and its memory planner, on plans built by hand whose kernels are
// plain C++ functions with the generated kernels' signature.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ember/runtime/compiled_graph.h"
#include "ember/support/error.h"
#include "ember/tensor/tensor.h"
#include "error_text.h"
#include "runtime/memory_plan.h"

namespace ember {
namespace {

std::atomic<int64_t> g_launches{0};

// Elements of an [n, 4] buffer; syms[0] is n.
int64_t rows4(const int64_t* syms) { return syms[0] * 4; }

// out = a + b, all [n, 4].
void add_kernel(void* const* args, const int64_t* syms, const ember_rt::LaunchContext* ctx) {
  ++g_launches;
  auto* a = static_cast<const float*>(args[0]);
  auto* b = static_cast<const float*>(args[1]);
  auto* out = static_cast<float*>(args[2]);
  int64_t n = rows4(syms);
  ember_rt::parallel_for(ctx, n, static_cast<double>(n), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
  });
}

// out = 2 * a, through a scratch buffer of the same shape: args are a, out, scratch.
void scale_kernel(void* const* args, const int64_t* syms, const ember_rt::LaunchContext* ctx) {
  ++g_launches;
  auto* a = static_cast<const float*>(args[0]);
  auto* out = static_cast<float*>(args[1]);
  auto* tmp = static_cast<float*>(args[2]);
  int64_t n = rows4(syms);
  ember_rt::parallel_for(ctx, n, static_cast<double>(n), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) tmp[i] = a[i] * 2.0f;
    for (int64_t i = lo; i < hi; ++i) out[i] = tmp[i];
  });
}

// out[i, j] = a[i, j] + bias[j]; bias is [4].
void bias_kernel(void* const* args, const int64_t* syms, const ember_rt::LaunchContext*) {
  ++g_launches;
  auto* a = static_cast<const float*>(args[0]);
  auto* bias = static_cast<const float*>(args[1]);
  auto* out = static_cast<float*>(args[2]);
  for (int64_t i = 0; i < rows4(syms); ++i) out[i] = a[i] + bias[i % 4];
}

TensorType f32(Shape shape) { return TensorType{DType::float32, std::move(shape), Device::cpu()}; }

KernelLaunch launch(const std::string& name, ember_kernel_fn fn, std::vector<int> args,
                    int num_inputs, std::vector<TensorType> scratch = {}) {
  KernelLaunch l;
  l.name = name;
  l.fn = fn;
  l.args = std::move(args);
  l.num_inputs = num_inputs;
  l.scratch = std::move(scratch);
  return l;
}

// x, y: [n, 4];  t1 = x + y;  t2 = 2 * t1;  t3 = t2 + x;  out = t3 + bias
const std::vector<float> kBias = {0.5f, 1.5f, 2.5f, 3.5f};

ExecPlan chain_plan() {
  ir::Expr n = ir::var("n");
  ExecPlan p;
  for (int i = 0; i < 6; ++i) p.values.push_back(f32({n, 4}));
  p.values.push_back(f32({4}));  // 6: bias
  p.inputs = {0, 1};
  p.outputs = {5};
  p.constants[6] = from_values({kBias.begin(), kBias.end()}, {4}, DType::float32);
  p.symbols = {"n"};
  p.launches.push_back(launch("add0", add_kernel, {0, 1, 2}, 2));
  p.launches.push_back(launch("scale1", scale_kernel, {2, 3}, 1, {f32({n, 4})}));
  p.launches.push_back(launch("add2", add_kernel, {3, 0, 4}, 2));
  p.launches.push_back(launch("bias3", bias_kernel, {4, 6, 5}, 2));
  return p;
}

std::vector<float> expected_chain(const Tensor& x, const Tensor& y) {
  std::vector<float> out(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    float xi = x.data_as<float>()[i], yi = y.data_as<float>()[i];
    out[i] = (xi + yi) * 2.0f + xi + kBias[i % 4];
  }
  return out;
}

std::vector<float> floats(const Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel());
}

TEST(CompiledGraphTest, RunsAChainWithSymbolicShapes) {
  CompiledGraph g(chain_plan());
  for (int64_t n : {3, 5, 3}) {
    Tensor x = randn({n, 4}, DType::float32, Device::cpu(), n);
    Tensor y = randn({n, 4}, DType::float32, Device::cpu(), n + 100);
    std::vector<Tensor> out = g.run({x, y});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(shape_values(out[0].shape()), (std::vector<int64_t>{n, 4}));
    EXPECT_EQ(floats(out[0]), expected_chain(x, y)) << "n = " << n;
  }
  // One plan per distinct value of n: the second n = 3 run reused the first plan.
  EXPECT_EQ(g.memory_stats().plans_made, 2);
}

TEST(CompiledGraphTest, ReusesMemoryAlongAChain) {
  CompiledGraph g(chain_plan());
  g.run({ones({64, 4}), ones({64, 4})});
  MemoryPlanStats s = g.memory_stats();
  // Intermediates t1..t3 and the scale kernel's scratch buffer take 1 KiB each. t1 and the
  // scratch die at launch 1, so t3 (born at launch 2) takes t1's place.
  EXPECT_EQ(s.unshared_bytes, 4 * 1024);
  EXPECT_EQ(s.workspace_bytes, 3 * 1024);
  EXPECT_LT(s.workspace_bytes, s.unshared_bytes);
}

TEST(CompiledGraphTest, OutputsAreFreshTensors) {
  CompiledGraph g(chain_plan());
  Tensor x = ones({2, 4}), y = ones({2, 4});
  auto a = g.run({x, y});
  auto b = g.run({x, y});
  EXPECT_NE(a[0].data(), b[0].data());
  EXPECT_EQ(floats(a[0]), floats(b[0]));
}

TEST(CompiledGraphTest, RejectsWrongInputs) {
  CompiledGraph g(chain_plan());
  EXPECT_EQ(error_of([&] {
              g.run({ones({4, 3}), ones({4, 4})});
            }),
            "CompiledGraph.run: input 0 has shape [4, 3] but the graph expects [n, 4]: "
            "dimension 1 must be 4");
  EXPECT_EQ(error_of([&] {
              g.run({ones({3, 4}), ones({5, 4})});
            }),
            "CompiledGraph.run: input 1 has shape [5, 4] but the graph expects [n, 4]: "
            "dimension 0 must be n = 3, as set by dimension 0 of input 0");
  EXPECT_EQ(error_of([&] {
              g.run({ones({3}), ones({3, 4})});
            }),
            "CompiledGraph.run: input 0 has shape [3] but the graph expects [n, 4]: the rank "
            "must be 2");
  EXPECT_EQ(error_of([&] {
              g.run({ones({3, 4}, DType::float16), ones({3, 4})});
            }),
            "CompiledGraph.run: input 0 has type float16[3, 4] but the graph expects "
            "float32[n, 4]: the dtype must be float32");
  EXPECT_EQ(error_of([&] {
              g.run({ones({3, 4})});
            }),
            "CompiledGraph.run: the graph takes 2 inputs but 1 were given");
  Tensor sym = Tensor::symbol({3, 4}, DType::float32);
  EXPECT_EQ(error_of([&] {
              g.run({ones({3, 4}), sym});
            }),
            "CompiledGraph.run: input 1 is a symbolic tensor (float32[3, 4]); run() needs "
            "tensors that hold values");
}

TEST(CompiledGraphTest, ChecksDimensionsThatAreExpressions) {
  ir::Expr n = ir::var("n");
  ExecPlan p;
  p.values = {f32({n, 4}), f32({n * 2, 4}), f32({n, 4})};
  p.inputs = {0, 1};
  p.outputs = {2};
  p.symbols = {"n"};
  // Reads only the first n rows of input 1.
  p.launches.push_back(launch("add", add_kernel, {0, 1, 2}, 2));
  CompiledGraph g(std::move(p));
  auto out = g.run({ones({2, 4}), ones({4, 4})});
  EXPECT_EQ(floats(out[0]), std::vector<float>(8, 2.0f));
  EXPECT_EQ(error_of([&] {
              g.run({ones({2, 4}), ones({5, 4})});
            }),
            "CompiledGraph.run: input 1 has shape [5, 4] but the graph expects [" +
                ir::to_string(n * 2) + ", 4]: dimension 0 must be " + ir::to_string(n * 2) +
                " = 4 with n = 2");
}

TEST(CompiledGraphTest, EmptyTensorsStillLaunchEveryKernel) {
  CompiledGraph g(chain_plan());
  int64_t before = g_launches;
  auto out = g.run({zeros({0, 4}), zeros({0, 4})});
  EXPECT_EQ(g_launches - before, 4);
  EXPECT_EQ(shape_values(out[0].shape()), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(g.memory_stats().workspace_bytes, 0);
}

TEST(CompiledGraphTest, InputsAndConstantsReturnedAsOutputsAreCopies) {
  ir::Expr n = ir::var("n");
  ExecPlan p;
  p.values = {f32({n, 4}), f32({4})};
  p.inputs = {0};
  p.outputs = {0, 1, 0};
  p.constants[1] = from_values({kBias.begin(), kBias.end()}, {4}, DType::float32);
  p.symbols = {"n"};
  CompiledGraph g(std::move(p));
  Tensor x = full({2, 4}, 3.0);
  auto out = g.run({x});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NE(out[0].data(), x.data());
  EXPECT_EQ(floats(out[0]), floats(x));
  EXPECT_NE(out[1].data(), g.plan().constants.at(1).data());
  EXPECT_EQ(floats(out[1]), kBias);
  EXPECT_EQ(out[2].data(), out[0].data());
}

TEST(CompiledGraphTest, ConcurrentRunsFromFourThreads) {
  CompiledGraph g(chain_plan());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 50; ++iter) {
        int64_t n = 1 + (t * 7 + iter) % 9;
        Tensor x = randn({n, 4}, DType::float32, Device::cpu(), t * 1000 + iter);
        Tensor y = randn({n, 4}, DType::float32, Device::cpu(), t * 1000 + iter + 500);
        if (floats(g.run({x, y})[0]) != expected_chain(x, y)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(g.memory_stats().plans_made, 9);
}

TEST(CompiledGraphTest, ConcurrentLargeRunsShareThePool) {
  // Large enough for parallel_for to split the work across the pool's threads.
  CompiledGraph g(chain_plan());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 5; ++iter) {
        int64_t n = 10000 + 1000 * t + iter;  // 40000+ elements: above parallel_for's threshold
        Tensor x = randn({n, 4}, DType::float32, Device::cpu(), t * 1000 + iter);
        Tensor y = randn({n, 4}, DType::float32, Device::cpu(), t * 1000 + iter + 500);
        if (floats(g.run({x, y})[0]) != expected_chain(x, y)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
}

TEST(CompiledGraphTest, ManySymbolValuesKeepABoundedCache) {
  CompiledGraph g(chain_plan());
  for (int64_t n = 1; n <= 40; ++n) g.run({ones({n, 4}), ones({n, 4})});
  g.run({ones({40, 4}), ones({40, 4})});
  EXPECT_EQ(g.memory_stats().plans_made, 40);  // n = 40 was still cached
  g.run({ones({1, 4}), ones({1, 4})});
  EXPECT_EQ(g.memory_stats().plans_made, 41);  // n = 1 had been evicted
}

// A copy of `t` whose memory records, when it is freed, how many launches had run by then.
Tensor watched(const Tensor& t, int64_t* launches_at_free) {
  auto keep = std::make_shared<Tensor>(t);
  std::shared_ptr<void> owner(nullptr, [keep, launches_at_free](void*) mutable {
    *launches_at_free = g_launches.load();
    keep.reset();
  });
  auto storage = Storage::borrow(t.data(), static_cast<size_t>(t.nbytes()), Device::cpu(), owner);
  return Tensor::from_storage(std::move(storage), t.shape(), t.dtype());
}

TEST(CompiledGraphTest, RunReleasingDropsEachInputAfterItsLastRead) {
  // chain_plan reads y last in launch 0 and x in launch 2 (of 4).
  CompiledGraph g(chain_plan());
  Tensor x = randn({3, 4}), y = randn({3, 4});
  const std::vector<float> expected = expected_chain(x, y);
  int64_t x_freed = -1, y_freed = -1;
  std::vector<Tensor> inputs = {watched(x, &x_freed), watched(y, &y_freed)};
  const int64_t before = g_launches.load();
  std::vector<Tensor> out = g.run_releasing(inputs);
  EXPECT_EQ(floats(out[0]), expected);
  EXPECT_EQ(y_freed - before, 1);
  EXPECT_EQ(x_freed - before, 3);
  EXPECT_FALSE(inputs[0].defined());
  EXPECT_FALSE(inputs[1].defined());

  // Checks come first: a bad input leaves every input in place.
  std::vector<Tensor> bad = {randn({3, 4}), randn({2, 4})};
  EXPECT_THROW(g.run_releasing(bad), Error);
  EXPECT_TRUE(bad[0].defined() && bad[1].defined());
}

TEST(CompiledGraphTest, GraphsSharingAPoolKeepOneWorkspace) {
  CompiledGraph small(chain_plan()), large(chain_plan());
  auto pool = std::make_shared<WorkspacePool>();
  small.set_workspace_pool(pool);
  large.set_workspace_pool(pool);
  EXPECT_EQ(large.workspace_pool(), pool);
  Tensor xs = randn({2, 4}), ys = randn({2, 4}), xl = randn({64, 4}), yl = randn({64, 4});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(floats(small.run({xs, ys})[0]), expected_chain(xs, ys));
    EXPECT_EQ(floats(large.run({xl, yl})[0]), expected_chain(xl, yl));
  }
  // The small graph's workspace was replaced by the large one's, which both then use.
  WorkspacePool::Stats s = pool->stats();
  EXPECT_EQ(s.idle, 1);
  EXPECT_EQ(s.idle_bytes, large.memory_stats().workspace_bytes);
  EXPECT_EQ(s.allocations, 2);
  pool->clear();
  EXPECT_EQ(pool->stats().idle, 0);
  small.run({xs, ys});
  EXPECT_EQ(pool->stats().allocations, 3);
}

TEST(CompiledGraphTest, GraphsSharingAPoolRunConcurrently) {
  CompiledGraph a(chain_plan()), b(chain_plan());
  auto pool = std::make_shared<WorkspacePool>();
  a.set_workspace_pool(pool);
  b.set_workspace_pool(pool);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const CompiledGraph& g = t % 2 ? a : b;
      for (int iter = 0; iter < 20; ++iter) {
        int64_t n = 5000 + 100 * t + iter;
        Tensor x = randn({n, 4}, DType::float32, Device::cpu(), t * 1000 + iter);
        Tensor y = randn({n, 4}, DType::float32, Device::cpu(), t * 1000 + iter + 500);
        if (floats(g.run({x, y})[0]) != expected_chain(x, y)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  EXPECT_LE(pool->stats().idle, 4);  // at most one per run that was in progress at once
}

TEST(CompiledGraphTest, SetNumThreads) {
  CompiledGraph g(chain_plan());
  EXPECT_GE(g.num_threads(), 1);
  g.set_num_threads(1);
  EXPECT_EQ(g.num_threads(), 1);
  Tensor x = randn({300, 4}), y = randn({300, 4});
  EXPECT_EQ(floats(g.run({x, y})[0]), expected_chain(x, y));
  EXPECT_EQ(error_of([&] { g.set_num_threads(0); }),
            "CompiledGraph.set_num_threads: the number of threads must be at least 1, got 0");
}

TEST(CompiledGraphTest, InvalidPlansAreInternalErrors) {
  ExecPlan bad_id = chain_plan();
  bad_id.launches[1].args = {2, 9};
  EXPECT_THROW(CompiledGraph{bad_id}, InternalError);

  ExecPlan read_first = chain_plan();
  std::swap(read_first.launches[0], read_first.launches[1]);  // t1 read before written
  EXPECT_THROW(CompiledGraph{read_first}, InternalError);

  ExecPlan writes_input = chain_plan();
  writes_input.launches[0].args = {2, 1, 0};
  EXPECT_THROW(CompiledGraph{writes_input}, InternalError);

  ExecPlan unwritten_output = chain_plan();
  unwritten_output.launches.pop_back();
  EXPECT_THROW(CompiledGraph{unwritten_output}, InternalError);

  // A symbol no input binds is the caller's graph (a size only inside expressions of the
  // inputs' sizes, or none): a user error that says what to do, not an internal one.
  ExecPlan unbound = chain_plan();
  unbound.values[3] = f32({ir::var("m"), 4});
  try {
    CompiledGraph{unbound};
    ADD_FAILURE() << "no error for an unbound symbol";
  } catch (const InternalError& e) {
    ADD_FAILURE() << "an internal error for an unbound symbol: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no input has a dimension that is 'm' itself"),
              std::string::npos)
        << e.what();
  }

  ExecPlan no_kernel = chain_plan();
  no_kernel.launches[2].fn = nullptr;
  EXPECT_THROW(CompiledGraph{no_kernel}, InternalError);
}

TEST(CompiledGraphTest, WithoutNumInputsTheFirstUseIsTheWrite) {
  ExecPlan p = chain_plan();
  for (auto& l : p.launches) l.num_inputs = -1;
  CompiledGraph g(std::move(p));
  Tensor x = randn({3, 4}), y = randn({3, 4});
  EXPECT_EQ(floats(g.run({x, y})[0]), expected_chain(x, y));
}

// ---- views (ExecPlan::views): values read in another value's memory --------------------------

// x, y: [n, 4];  t = x + y;  v = t viewed as [n, 2, 2];  u = 2 * v;  out = u + v, [n, 2, 2].
// Only v's readers keep t alive past launch 0: were t freed there, u would take its place.
ExecPlan view_plan() {
  ir::Expr n = ir::var("n");
  ExecPlan p;
  for (int i = 0; i < 3; ++i) p.values.push_back(f32({n, 4}));  // 0 x, 1 y, 2 t
  p.values.push_back(f32({n, 2, 2}));                           // 3 v
  p.values.push_back(f32({n, 2, 2}));                           // 4 u
  p.values.push_back(f32({n, 2, 2}));                           // 5 out
  p.inputs = {0, 1};
  p.outputs = {5};
  p.symbols = {"n"};
  p.views[3] = 2;
  p.launches.push_back(launch("add0", add_kernel, {0, 1, 2}, 2));
  p.launches.push_back(launch("scale1", scale_kernel, {3, 4}, 1, {f32({n, 4})}));
  p.launches.push_back(launch("add2", add_kernel, {4, 3, 5}, 2));
  return p;
}

TEST(CompiledGraphViewsTest, AViewsReadersKeepItsMemoryAlive) {
  CompiledGraph g(view_plan());
  Tensor x = randn({5, 4}, DType::float32, Device::cpu(), 1);
  Tensor y = randn({5, 4}, DType::float32, Device::cpu(), 2);
  std::vector<Tensor> out = g.run({x, y});
  EXPECT_EQ(shape_values(out[0].shape()), (std::vector<int64_t>{5, 2, 2}));
  for (int64_t i = 0; i < 20; ++i) {
    float t = x.data_as<float>()[i] + y.data_as<float>()[i];
    EXPECT_EQ(out[0].data_as<float>()[i], t * 2.0f + t) << i;
  }
  // t, u and the scratch buffer (80 bytes each, 128 aligned): v takes no memory of its own,
  // and t lives until launch 2, so none of the three share.
  EXPECT_EQ(g.memory_stats().workspace_bytes, 3 * 128);
}

TEST(CompiledGraphViewsTest, AViewOfAKernelsResultIsWrittenAsTheOutput) {
  ExecPlan p = view_plan();
  p.outputs = {3, 5};  // v too: t is written into v's output tensor
  CompiledGraph g(std::move(p));
  Tensor x = randn({3, 4}, DType::float32, Device::cpu(), 3);
  Tensor y = randn({3, 4}, DType::float32, Device::cpu(), 4);
  std::vector<Tensor> out = g.run({x, y});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(shape_values(out[0].shape()), (std::vector<int64_t>{3, 2, 2}));
  for (int64_t i = 0; i < 12; ++i) {
    float t = x.data_as<float>()[i] + y.data_as<float>()[i];
    EXPECT_EQ(out[0].data_as<float>()[i], t) << i;
    EXPECT_EQ(out[1].data_as<float>()[i], 3.0f * t) << i;
  }
  EXPECT_EQ(g.memory_stats().workspace_bytes, 2 * 64);  // u and the scratch, 48 bytes each
  // A second run writes fresh tensors: the first run's outputs keep their values.
  std::vector<float> first = floats(out[0]);
  std::vector<Tensor> again = g.run({y, x});
  EXPECT_NE(again[0].data(), out[0].data());
  EXPECT_EQ(floats(out[0]), first);
}

TEST(CompiledGraphViewsTest, AViewOfAnInputReturnedIsACopy) {
  ExecPlan p = view_plan();
  p.values[3] = f32({ir::var("n"), 2, 2});
  p.views = {{3, 0}};  // v views x
  p.outputs = {3, 5};
  CompiledGraph g(std::move(p));
  Tensor x = randn({2, 4}, DType::float32, Device::cpu(), 5);
  Tensor y = randn({2, 4}, DType::float32, Device::cpu(), 6);
  std::vector<Tensor> out = g.run({x, y});
  EXPECT_NE(out[0].data(), x.data());
  EXPECT_EQ(floats(out[0]), floats(x));
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(out[1].data_as<float>()[i], 3.0f * x.data_as<float>()[i]);
  out[0].data_as<float>()[0] += 1.0f;  // the caller's copy: x stays as it was
  EXPECT_NE(out[0].data_as<float>()[0], x.data_as<float>()[0]);
}

TEST(CompiledGraphViewsTest, RunReleasingKeepsAnInputUntilItsViewIsRead) {
  ExecPlan p = view_plan();
  p.views = {{3, 0}};  // v views x: x is read at launch 2, through v
  CompiledGraph g(std::move(p));
  Tensor x = randn({2, 4}, DType::float32, Device::cpu(), 7);
  Tensor y = randn({2, 4}, DType::float32, Device::cpu(), 8);
  std::vector<float> want = floats(x);
  for (float& w : want) w *= 3.0f;
  std::vector<Tensor> inputs = {x, y};
  std::vector<Tensor> out = g.run_releasing(inputs);
  EXPECT_FALSE(inputs[0].defined());
  EXPECT_EQ(floats(out[0]), want);
}

TEST(CompiledGraphViewsTest, InvalidViewsAreInternalErrors) {
  ExecPlan written = view_plan();
  written.launches[0].args = {0, 1, 3};  // a launch writes the view
  EXPECT_THROW(CompiledGraph{written}, InternalError);

  ExecPlan cycle = view_plan();
  cycle.views = {{3, 4}, {4, 3}};
  EXPECT_THROW(CompiledGraph{cycle}, InternalError);

  ExecPlan shared = view_plan();  // two outputs in t's memory
  shared.values.push_back(f32({ir::var("n"), 4}));
  shared.views[6] = 2;
  shared.outputs = {3, 6};
  EXPECT_THROW(CompiledGraph{shared}, InternalError);

  ExecPlan dtype = view_plan();
  dtype.values[3].dtype = DType::int32;
  EXPECT_THROW(CompiledGraph{dtype}, InternalError);

  ExecPlan size = view_plan();  // [n, 4] viewed as [n, 3]: caught at the run
  size.values[3] = f32({ir::var("n"), 3});
  CompiledGraph g(std::move(size));
  EXPECT_THROW(g.run({ones({2, 4}), ones({2, 4})}), InternalError);
}

TEST(CompiledGraphViewsTest, AnOutputTakesTheMemoryOfAnInputThatDiesAtItsLaunch) {
  ExecPlan p = chain_plan();
  p.launches[1].in_place = 0;  // t2 = 2 * t1 over t1, its last use
  CompiledGraph g(std::move(p));
  Tensor x = randn({64, 4}, DType::float32, Device::cpu(), 9);
  Tensor y = randn({64, 4}, DType::float32, Device::cpu(), 10);
  EXPECT_EQ(floats(g.run({x, y})[0]), expected_chain(x, y));
  // t1 and t2 in one KiB, the scratch buffer beside them; t3 then takes the scratch's place.
  // Without sharing (ReusesMemoryAlongAChain) launch 1 holds t1, t2 and the scratch: 3 KiB.
  EXPECT_EQ(g.memory_stats().workspace_bytes, 2 * 1024);
}

TEST(CompiledGraphViewsTest, AnInputStillReadLaterOrAGraphInputIsNotWrittenOver) {
  ExecPlan later = view_plan();  // scale1 reads v, a view of t that add2 reads again
  later.launches[1].in_place = 0;
  CompiledGraph g(std::move(later));
  Tensor x = randn({5, 4}, DType::float32, Device::cpu(), 11);
  Tensor y = randn({5, 4}, DType::float32, Device::cpu(), 12);
  std::vector<Tensor> out = g.run({x, y});
  for (int64_t i = 0; i < 20; ++i) {
    float t = x.data_as<float>()[i] + y.data_as<float>()[i];
    EXPECT_EQ(out[0].data_as<float>()[i], t * 2.0f + t) << i;
  }
  EXPECT_EQ(g.memory_stats().workspace_bytes, 3 * 128);

  ExecPlan input = chain_plan();  // add0 over x, a graph input
  input.launches[0].in_place = 0;
  CompiledGraph h(std::move(input));
  std::vector<float> before = floats(x);
  EXPECT_EQ(floats(h.run({x, y})[0]), expected_chain(x, y));
  EXPECT_EQ(floats(x), before);
}

// ---- the planner alone ----------------------------------------------------------------------

TEST(MemoryPlanTest, BestFitReusesFreedBlocks) {
  // a: [0, 1], b: [1, 2], c: [2, 2]; c fits in a's block, freed after launch 1.
  MemoryLayout m = plan_memory({{100, 0, 1}, {200, 1, 2}, {100, 2, 2}}, 3);
  EXPECT_EQ(m.offsets, (std::vector<int64_t>{0, 128, 0}));
  EXPECT_EQ(m.workspace_bytes, 384);
  EXPECT_EQ(m.unshared_bytes, 512);
}

TEST(MemoryPlanTest, PicksTheSmallestBlockThatFits) {
  // Launch 0 places 256 bytes at 0, then 64 at 256 (live until 3) and 64 at 320; those at
  // 0 and 320 are freed at 1. A 64-byte buffer born at 2 takes the 64-byte hole.
  MemoryLayout m = plan_memory({{256, 0, 1}, {64, 0, 3}, {64, 0, 1}, {64, 2, 3}}, 4);
  EXPECT_EQ(m.offsets[0], 0);
  EXPECT_EQ(m.offsets[1], 256);
  EXPECT_EQ(m.offsets[2], 320);
  EXPECT_EQ(m.offsets[3], 320);
  EXPECT_EQ(m.workspace_bytes, 384);
}

TEST(MemoryPlanTest, GrowsFromAFreeTailAndMergesNeighbours) {
  MemoryLayout m = plan_memory({{64, 0, 0}, {64, 0, 0}, {256, 1, 1}, {0, 1, 1}}, 2);
  EXPECT_EQ(m.offsets, (std::vector<int64_t>{0, 64, 0, 0}));
  EXPECT_EQ(m.workspace_bytes, 256);
  EXPECT_EQ(m.unshared_bytes, 384);
}

TEST(MemoryPlanTest, BuffersLiveDuringOneLaunchDoNotShare) {
  MemoryLayout m = plan_memory({{64, 0, 1}, {64, 1, 1}, {64, 1, 2}}, 3);
  EXPECT_NE(m.offsets[0], m.offsets[1]);
  EXPECT_NE(m.offsets[0], m.offsets[2]);
  EXPECT_NE(m.offsets[1], m.offsets[2]);
  EXPECT_EQ(m.workspace_bytes, 192);
}

TEST(MemoryPlanTest, PlacementBySizeAvoidsTheHoleOfLaunchOrder) {
  // a [0, 0] and b [0, 2] are placed at 0 and 64 in launch order; c (128 bytes, born at 1)
  // does not fit in a's freed 64 bytes and goes above b: 256 bytes. By size, c goes first at
  // 0 and b above it: 192, the most live at once (b and c).
  MemoryLayout m = plan_memory({{64, 0, 0}, {64, 0, 2}, {128, 1, 1}}, 3);
  EXPECT_EQ(m.offsets, (std::vector<int64_t>{0, 128, 0}));
  EXPECT_EQ(m.workspace_bytes, 192);
  EXPECT_EQ(m.live_bytes, 192);
  EXPECT_EQ(m.unshared_bytes, 256);
}

}  // namespace
}  // namespace ember
