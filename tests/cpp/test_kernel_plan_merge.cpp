// Merging an elementwise stage's trailing axes (src/codegen/row_split.cpp, merge_last_axes):
// which stages merge, what the plan says, and that the merged kernels compute the same.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ember/codegen/kernel_plan.h"
#include "ember/ops/ops.h"
#include "ember/tensor/tensor.h"

using namespace ember;
using namespace ember::ir;
using namespace ember::codegen;

// Trailing axes that are one run of memory in every buffer read at them merge into one axis
// (merge_last_axes): a permute of [6, 4, 3, 5] to [4, 6, 3, 5] copies rows of 15, a flip of
// both trailing axes reads them reversed as one, a per-channel add on [2, 5, 7, 7] runs rows of
// 49; a buffer read wider than the output's row, or an axis used outside a load, keeps them.
TEST(KernelPlan, TrailingAxesThatAreOneRunOfMemoryMerge) {
  auto plan_of = [](const Shape& in_shape, const Shape& out_shape, auto value_of, int extra = -1) {
    Task t;
    t.name = "merge";
    const int x = t.add_buffer("x", DType::float32, in_shape, BufferRole::Input);
    if (extra > 0) t.add_buffer("b", DType::float32, {Expr(extra)}, BufferRole::Input);
    const int o = t.add_buffer("y", DType::float32, out_shape, BufferRole::Output);
    Stage s;
    s.out = o;
    for (size_t d = 0; d < out_shape.size(); ++d) s.axes.push_back(var("a" + std::to_string(d)));
    s.value = value_of(x, s.axes);
    t.stages.push_back(s);
    return std::make_pair(plan_kernel(t), t);
  };
  auto a = [](const std::vector<Expr>& ax, size_t d) { return ax[d]; };
  {  // permute (1, 0, 2, 3)
    auto [plan, t] =
        plan_of({Expr(6), Expr(4), Expr(3), Expr(5)}, {Expr(4), Expr(6), Expr(3), Expr(5)},
                [&](int x, const std::vector<Expr>& ax) {
                  return load(x, DType::float32, {a(ax, 1), a(ax, 0), a(ax, 2), a(ax, 3)});
                });
    EXPECT_EQ(plan.stages[0].merged_axes, 1);
    const std::string text = plan.str();
    for (const char* line : {"merged: the last 2 axes into one", "__m0_a3 < 15 (blocks, vector)",
                             "load b0 (x)[a1, a0, __m0_a3]: contiguous along __m0_a3"})
      EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  {  // flip of both trailing axes, after the permute
    auto [plan, t] =
        plan_of({Expr(6), Expr(4), Expr(3), Expr(5)}, {Expr(4), Expr(6), Expr(3), Expr(5)},
                [&](int x, const std::vector<Expr>& ax) {
                  return load(x, DType::float32,
                              {a(ax, 1), a(ax, 0), Expr(2) - a(ax, 2), ax[3] * Expr(-1) + Expr(4)});
                });
    EXPECT_EQ(plan.stages[0].merged_axes, 1);
    EXPECT_NE(plan.str().find("load b0 (x)[a1, a0, (14 - __m0_a3)]"), std::string::npos)
        << plan.str();
  }
  {  // x + b[c] on [2, 5, 7, 7]: rows of 49, b read per row
    auto [plan, t] = plan_of(
        {Expr(2), Expr(5), Expr(7), Expr(7)}, {Expr(2), Expr(5), Expr(7), Expr(7)},
        [&](int x, const std::vector<Expr>& ax) {
          return load(x, DType::float32, ax) + load(1, DType::float32, {a(ax, 1)});
        },
        5);
    EXPECT_EQ(plan.stages[0].merged_axes, 1);
    EXPECT_NE(plan.str().find("__m0_a3 < 49 (blocks, vector)"), std::string::npos) << plan.str();
  }
  {  // only a flip of the last axis: the pair is not one reversed run
    auto [plan, t] =
        plan_of({Expr(4), Expr(3), Expr(5)}, {Expr(4), Expr(3), Expr(5)},
                [&](int x, const std::vector<Expr>& ax) {
                  return load(x, DType::float32, {a(ax, 0), a(ax, 1), Expr(4) - a(ax, 2)});
                });
    EXPECT_EQ(plan.stages[0].merged_axes, 0) << plan.str();
  }
  {  // the first 5 of rows of 8: rows of x are not rows of y
    auto [plan, t] =
        plan_of({Expr(3), Expr(4), Expr(8)}, {Expr(3), Expr(4), Expr(5)},
                [&](int x, const std::vector<Expr>& ax) { return load(x, DType::float32, ax); });
    EXPECT_EQ(plan.stages[0].merged_axes, 0) << plan.str();
  }
  {  // the value uses the last axis outside a load
    auto [plan, t] = plan_of({Expr(3), Expr(4), Expr(5)}, {Expr(3), Expr(5), Expr(4)},
                             [&](int x, const std::vector<Expr>& ax) {
                               return load(x, DType::float32, {a(ax, 0), a(ax, 2), a(ax, 1)}) +
                                      cast(a(ax, 2), DType::float32);
                             });
    EXPECT_EQ(plan.stages[0].merged_axes, 0) << plan.str();
  }
}

// The merged kernels compute what the unmerged ones did: permutes and flips of random values
// against the index arithmetic.
TEST(KernelPlan, MergedAxesKernelsRun) {
  const Shape shape = {Expr(3), Expr(4), Expr(3), Expr(5)};
  std::vector<double> v(3 * 4 * 3 * 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 37) % 101) - 50.0;
  const Tensor x = from_values(v, shape, DType::float32);
  const Tensor p = ops::permute(x, {1, 0, 2, 3});                  // [4, 3, 3, 5]
  const Tensor f = ops::flip(p, {2, 3});                           // reversed trailing pair
  const Tensor g = ops::flip(ops::permute(x, {1, 0, 3, 2}), {3});  // [4, 3, 5, 3]
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 3; ++k)
        for (int64_t l = 0; l < 5; ++l) {
          const double want = v[static_cast<size_t>(((j * 4 + i) * 3 + k) * 5 + l)];
          EXPECT_EQ(element_as_double(p, ((i * 3 + j) * 3 + k) * 5 + l), want);
          EXPECT_EQ(element_as_double(f, ((i * 3 + j) * 3 + (2 - k)) * 5 + (4 - l)), want);
          EXPECT_EQ(element_as_double(g, ((i * 3 + j) * 5 + l) * 3 + (2 - k)), want);
        }
}
