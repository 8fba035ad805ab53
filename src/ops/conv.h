// The convolutions' shared internals: their geometry (conv.cpp) and the table of their
// algorithms with the lowerings (conv_algos.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "ember/ir/task.h"

namespace ember::opdefs {

// A convolution's dimensions, conv1d read as conv2d with H = KH = 1.
struct ConvGeom {
  int spatial = 2;  // 1: conv1d, 2: conv2d
  Expr n, c, h, w;  // input (c is a constant)
  int64_t o = 0, cg = 0, kh = 1, kw = 1, groups = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  Expr oh, ow;  // output
};

// The geometry of `op` on x and a weight of type w, checked (the error names op).
ConvGeom conv_geom(const std::string& op, int spatial, const TensorType& x, const TensorType& w,
                   const ConvAttrs& a);

// Index helpers: conv1d drops the height index.
Index spatial_index(const ConvGeom& g, Expr a, Expr b, Expr hi, Expr wi);
// 0 <= i < hi as a bool expression.
Expr in_range(const Expr& i, const Expr& hi);

// What an algorithm's rule sees.
struct ConvProblem {
  const ConvGeom& g;
  DType dtype;
  bool weight_constant;  // the weight is a constant of the graph (its transform folds)
};

// A convolution algorithm: where it can run a convolution, where the fixed rules prefer it,
// how it lowers, and, when it runs as another operator on a prepared weight, that operator
// and the preparation.
struct ConvAlgo {
  const char* name;                       // ConvAttrs::algo
  bool (*applies)(const ConvProblem& p);  // it computes this convolution
  // Where it applies, whether the rules take it (null: wherever it applies). The rules'
  // choice is the first algorithm that applies and wins; tuning measures all that apply.
  bool (*wins)(const ConvProblem& p);
  ir::Task (*lower)(const ConvGeom& g, const TensorType& x, const TensorType& out);
  const char* op = nullptr;              // the operator it runs as; null: the convolution
  const char* prepare_weight = nullptr;  // applied to the weight first; null: none
  // Where it applies and wins, the algorithms after it that apply would compute the same
  // product with extra copies: tuning measures none of them (it is the only candidate).
  bool dominates = false;
  // It runs on the channel-blocked layout (ember/ir/layout.h, block = the ISA's float lanes):
  // the input is converted to it first and the output back (choose_algorithms inserts the
  // conversions, the layout pass removes those between blocked operators).
  bool blocked = false;
  // A blocked algorithm that reads an input of fewer channels than a block as it is (plain)
  // where the input is one of the graph's (AlgorithmChoice::reads_plain): a network's first
  // convolution on its 3-channel image, which blocked would take a conversion of its own and
  // block / 3 times the memory (ember_rt/conv_blocked.h).
  bool reads_plain_few_channels = false;
};

// Whether `algo` reads the input of the convolution g plain where it is a graph input.
bool reads_plain(const ConvAlgo& algo, const ConvGeom& g);

// In order of preference: a convolution takes the first algorithm that applies and wins.
const std::vector<ConvAlgo>& conv_algos();

// The channel-blocked layout of this ISA's vectors (block = its float lanes: 16 on AVX-512,
// 8 on AVX2), which blocked algorithms run on.
Layout conv_block_layout();

// Winograd F(4x4, 3x3): conv2d_winograd's lowering on the transformed filter u [36, O, C].
constexpr int64_t kWinogradPoints = 36;  // 6x6 transformed values per tile
ir::Task lower_winograd(const ConvGeom& g, const TensorType& x, const TensorType& out);

// The direct convolution on the channel-blocked layout (ember_rt/conv_blocked.h):
// conv2d_blocked's lowering, x and out blocked (block b), wp the weight prepared by
// conv_blocked_filter, [ceil(O / b), ceil(C / b), KH, KW, b, b].
ir::Task lower_blocked(const ConvGeom& g, const TensorType& x, const TensorType& out);

// The depthwise convolution on the channel-blocked layout (ember_rt/depthwise_blocked.h):
// conv2d_depthwise_blocked's lowering, x and out blocked (block b), w [C, 1, KH, KW] as it is.
ir::Task lower_depthwise_blocked(const ConvGeom& g, const TensorType& x, const TensorType& out);

}  // namespace ember::opdefs
