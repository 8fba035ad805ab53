// Typed attributes of operators, one struct per family (DESIGN.md principle 11).
//
// Each struct can describe itself as (name, value) text pairs, for printing graphs and for
// hashing them, and compares by value.
#pragma once

#include <cstdint>
#include <memory>
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

// slice: per axis, start / stop / step after normalization (0 <= start, step >= 1).
struct SliceAttrs {
  std::vector<int64_t> axes, starts, stops, steps;
  AttrFields fields() const;
  bool operator==(const SliceAttrs&) const = default;
};

struct CastAttrs {
  DType dtype = DType::float32;
  AttrFields fields() const;
  bool operator==(const CastAttrs&) const = default;
};

// A fused operator: the subgraph it runs as one kernel, and which of its nodes is the
// anchor (the reduction or matmul the others were fused around; -1 for none).
struct FusedAttrs {
  std::shared_ptr<const FlowGraph> graph;
  int anchor = -1;
  AttrFields fields() const;
  bool operator==(const FusedAttrs& o) const { return graph == o.graph && anchor == o.anchor; }
};

using OpAttrs = std::variant<NoAttrs, ReduceAttrs, AxisAttrs, ShapeAttrs, DimsAttrs,
                             SliceAttrs, CastAttrs, FusedAttrs>;

AttrFields attr_fields(const OpAttrs& a);

// The attributes as the given struct; ember::InternalError if they are not.
template <class T>
const T& attrs_as(const OpAttrs& a) {
  if (auto* p = std::get_if<T>(&a)) return *p;
  throw InternalError("operator attributes of an unexpected kind");
}

}  // namespace ember
