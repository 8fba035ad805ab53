// Typed attributes of operators, one struct per family (docs/principles.md, principle 11).
//
// Each struct can describe itself as (name, value) text pairs, for printing graphs and for
// hashing them, and compares by value.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ember/support/error.h"
#include "ember/tensor/tensor.h"

namespace ember {

class FlowGraph;

using AttrFields = std::vector<std::pair<std::string, std::string>>;

struct NoAttrs {
  AttrFields fields() const { return {}; }
  bool operator==(const NoAttrs&) const = default;
};

// Reductions: the dimensions reduced (non-negative, sorted) and whether they are kept.
struct ReduceAttrs {
  std::vector<int64_t> dims;
  bool keepdim = false;
  AttrFields fields() const;
  bool operator==(const ReduceAttrs&) const = default;
};

// Operators along one axis: softmax, concat.
struct AxisAttrs {
  int64_t axis = 0;
  AttrFields fields() const;
  bool operator==(const AxisAttrs&) const = default;
};

// reshape, expand: the target shape.
struct ShapeAttrs {
  Shape shape;
  AttrFields fields() const;
  bool operator==(const ShapeAttrs& o) const;
};

// permute (transpose is a permute); squeeze and unsqueeze use `dims` as the axes.
struct DimsAttrs {
  std::vector<int64_t> dims;
  AttrFields fields() const;
  bool operator==(const DimsAttrs&) const = default;
};

// slice: per axis, start / stop / step (step >= 1). Bounds are integers or size
// expressions of symbols ("n - 1").
// clamp: Python's slicing: negative constants count from the end, bounds are clamped into
// the dimension. Without clamp, the caller guarantees 0 <= start <= stop <= size (negative
// constants still count from the end), so a slice's length is exactly (stop - start) / step
// rounded up: the torch backend slices so, since torch's own shapes (guarded by Dynamo) say
// the bounds are in range, and x[:, :n] of an [b, n] tensor then has size n, not min(n, n).
struct SliceAttrs {
  std::vector<int64_t> axes;
  std::vector<ir::Expr> starts, stops;
  std::vector<int64_t> steps;
  bool clamp = true;
  AttrFields fields() const;
  bool operator==(const SliceAttrs& o) const;
};

struct CastAttrs {
  DType dtype = DType::float32;
  AttrFields fields() const;
  bool operator==(const CastAttrs&) const = default;
};

// conv1d, conv2d: one entry per spatial dimension (1 for conv1d, 2 for conv2d), and the
// number of groups the channels are split into (groups == channels: depthwise). `algo` is
// the algorithm the choose_algorithms pass picked (src/ops/conv.cpp lists them); empty
// until then, and lowering then applies the same rules.
struct ConvAttrs {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  std::string algo;
  // conv2d_blocked only: the output channels O (its prepared weight holds ceil(O / b) blocks
  // of b, so O is not in its shape); 0 elsewhere.
  int64_t out_channels = 0;
  // conv2d_weight_grad only: the weight's kernel size (KH, KW), which its inputs (the output's
  // gradient and the convolution's input) do not determine; empty elsewhere.
  std::vector<int64_t> kernel;
  AttrFields fields() const;
  bool operator==(const ConvAttrs&) const = default;
};

// max_pool2d, avg_pool2d: one entry per spatial dimension. dilation is max_pool2d's only;
// count_include_pad is avg_pool2d's only (whether padded zeros count in the divisor).
struct PoolAttrs {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode = false;
  bool count_include_pad = true;
  AttrFields fields() const;
  bool operator==(const PoolAttrs&) const = default;
};

// adaptive_avg_pool2d: the output's spatial size.
struct AdaptivePoolAttrs {
  std::vector<int64_t> output_size;
  AttrFields fields() const;
  bool operator==(const AdaptivePoolAttrs&) const = default;
};

// upsample_nearest2d, upsample_bilinear2d: the output's spatial size; align_corners is
// bilinear's only.
struct UpsampleAttrs {
  std::vector<int64_t> size;
  bool align_corners = false;
  AttrFields fields() const;
  bool operator==(const UpsampleAttrs&) const = default;
};

// arange: the values start, start + step, ... below stop (above it for a negative step).
// sym_start / sym_stop, when defined, are integer bounds known only at run time (size
// expressions such as "n" or "n - 1") that replace start / stop; the step is then an
// integer and the bounds are taken as consistent with its sign (torch checks that).
struct ArangeAttrs {
  double start = 0, stop = 0, step = 1;
  DType dtype = DType::int64;
  ir::Expr sym_start = {}, sym_stop = {};
  AttrFields fields() const;
  bool operator==(const ArangeAttrs& o) const;
};

// full: a tensor of `shape` holding `value`. Symbols in the shape must be bound by the
// graph's inputs (full has none of its own). `in_graph`: traced, and computed by the graph
// where it is read, even where the shape is known (a large fill that a constant would keep
// in memory for the graph's lifetime: a training backward's zeros to scatter into).
struct FullAttrs {
  Shape shape;
  double value = 0;
  DType dtype = DType::float32;
  bool in_graph = false;
  AttrFields fields() const;
  bool operator==(const FullAttrs& o) const;
};

// tril, triu: the diagonal kept last (tril) or first (triu); 0 is the main diagonal,
// positive ones lie above it.
struct TriAttrs {
  int64_t diagonal = 0;
  AttrFields fields() const;
  bool operator==(const TriAttrs&) const = default;
};

// clamp: either bound may be absent (not both).
struct ClampAttrs {
  std::optional<double> min, max;
  AttrFields fields() const;
  bool operator==(const ClampAttrs&) const = default;
};

// layer_norm, batch_norm: epsilon, and which optional inputs (weight, then bias) follow the
// required ones. normalized_ndim is layer_norm's: how many trailing dimensions it normalizes.
struct NormAttrs {
  int64_t normalized_ndim = 0;
  double eps = 1e-5;
  bool has_weight = false;
  bool has_bias = false;
  AttrFields fields() const;
  bool operator==(const NormAttrs&) const = default;
};

// attention: the scale of the scores (none: 1 / sqrt(E)), torch's is_causal, whether a mask
// input follows q, k and v, the value a masked score takes (a bool mask's false entries and
// the keys past the causal diagonal; -inf unless attention written out with masked_fill
// used another), and what a row whose every score is -inf gives: 0 (torch's
// scaled_dot_product_attention) or NaN (empty_nan: softmax over a row of -inf).
struct AttentionAttrs {
  std::optional<double> scale;
  bool causal = false;
  bool has_mask = false;
  bool empty_nan = false;
  double fill = -std::numeric_limits<double>::infinity();
  AttrFields fields() const;
  bool operator==(const AttentionAttrs&) const = default;
};

// to_layout: the layout of its output (ember/ir/layout.h).
struct LayoutAttrs {
  Layout layout;
  AttrFields fields() const;
  bool operator==(const LayoutAttrs&) const = default;
};

// A fused operator: the subgraph it runs as one kernel, and which of its nodes is the
// anchor (the reduction or matmul the others were fused around; -1 for none). The
// subgraph's outputs are the node's: its last value first, then the intermediates it also
// stores.
struct FusedAttrs {
  std::shared_ptr<const FlowGraph> graph;
  int anchor = -1;
  // Defined beside FlowGraph (src/graph/flow_graph.cpp): it names the subgraph's nodes.
  AttrFields fields() const;
  bool operator==(const FusedAttrs& o) const { return graph == o.graph && anchor == o.anchor; }
};

using OpAttrs =
    std::variant<NoAttrs, ReduceAttrs, AxisAttrs, ShapeAttrs, DimsAttrs, SliceAttrs, CastAttrs,
                 ConvAttrs, PoolAttrs, AdaptivePoolAttrs, UpsampleAttrs, ArangeAttrs, FullAttrs,
                 TriAttrs, ClampAttrs, NormAttrs, AttentionAttrs, LayoutAttrs, FusedAttrs>;

AttrFields attr_fields(const OpAttrs& a);
// The size expressions the attributes hold (slice bounds, target shapes, arange bounds;
// not a fused operator's subgraph): where a symbol may appear outside every value's shape.
std::vector<ir::Expr> attr_size_exprs(const OpAttrs& a);
// Whether the attributes name symbols (a symbolic bound or size): such an operator can only
// run inside a graph whose inputs bind them, so it is traced even without symbolic inputs.
bool attrs_use_symbols(const OpAttrs& a);
// Whether the attributes ask for the operator to be traced even on concrete inputs
// (FullAttrs::in_graph).
bool attrs_in_graph(const OpAttrs& a);

// The attributes as the given struct; ember::InternalError if they are not.
template <class T>
const T& attrs_as(const OpAttrs& a) {
  if (auto* p = std::get_if<T>(&a)) return *p;
  throw InternalError("operator attributes of an unexpected kind");
}

}  // namespace ember
