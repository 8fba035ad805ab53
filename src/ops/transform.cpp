// Transforms: operators that move elements without computing on them (Injective). Each
// compute maps the output index to the input index it reads.
//
// reshape, permute (transpose), flip, squeeze, unsqueeze, concat, slice, expand, to_layout.
// flatten is a reshape (ember::ops::flatten builds it).
#include <algorithm>
#include <string>
#include <utility>

#include "common.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

OpDef injective(const std::string& name, const std::string& title, int num_inputs) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Injective;
  d.num_inputs = num_inputs;
  return d;
}

// An injective operator that only reinterprets its input's shape (OpTraits::is_view).
OpDef view(const std::string& name, const std::string& title) {
  OpDef d = injective(name, title, 1);
  OpTraits t = default_traits(OpKind::Injective);
  t.is_view = true;
  d.declared_traits = t;
  return d;
}

// ---- reshape ----

std::string numel_str(const Shape& s) { return ir::to_string(shape_numel_expr(s)); }

// The target shape with its -1 (if any) solved.
Shape reshape_target(const TensorType& x, const Shape& given) {
  const Shape target = canonical_shape(given);
  int infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    auto c = target[i].as_int();
    if (!c || *c >= 0) continue;
    EMBER_CHECK(*c == -1, "reshape: invalid size " << *c << " in " << shape_str(target)
                                                   << "; sizes must be >= 0, or -1 (once) to "
                                                      "infer one from the others");
    EMBER_CHECK(infer_at < 0, "reshape: only one dimension can be -1, got " << shape_str(target));
    infer_at = static_cast<int>(i);
  }
  const Monomial in = monomial_of(x.shape);
  if (infer_at < 0) {
    EMBER_CHECK(monomial_equal(in, monomial_of(target)) || same_numel(x.shape, target),
                "reshape: cannot reshape " << x.str() << " (" << numel_str(x.shape)
                                           << " elements) into " << shape_str(target) << " ("
                                           << numel_str(target)
                                           << " elements); the number of elements must stay "
                                              "the same");
    return target;
  }
  Shape known = target;
  known.erase(known.begin() + infer_at);
  const Monomial k = monomial_of(known);
  EMBER_CHECK(k.coef != 0, "reshape: cannot infer the -1 in " << shape_str(target) << " for "
                                                              << x.str()
                                                              << ": the other sizes multiply "
                                                                 "to 0, so any size would do");
  Expr solved;
  EMBER_CHECK(monomial_divide(in, k, &solved) || solve_numel(x.shape, known, &solved),
              "reshape: cannot reshape "
                  << x.str() << " (" << numel_str(x.shape) << " elements) into "
                  << shape_str(target) << ": " << numel_str(x.shape) << " is not a multiple of "
                  << numel_str(known) << "; the number of elements must stay the same");
  Shape out = target;
  out[infer_at] = canonical_dim(solved);
  return out;
}

// ---- slice ----

// Per sliced axis: the first index read and the number of elements.
struct SliceBounds {
  Expr start, len;
};

// Stops at or beyond this mean "to the end" on a symbolic dimension (Python's sys.maxsize).
constexpr int64_t kToTheEnd = int64_t{1} << 62;

// Python slicing of a dimension of size n. Constant bounds of a constant n clamp like
// Python. Otherwise a bound is clamped into [0, n] at run time; a negative constant counts
// from the end and a symbolic bound is a position (>= 0).
SliceBounds clamped_bounds(const Expr& n, const Expr& start, const Expr& stop, int64_t step) {
  auto cn = n.as_int(), cb = start.as_int(), ce = stop.as_int();
  if (cn && cb && ce) {
    auto clamp = [&](int64_t v) {
      return v < 0 ? std::max<int64_t>(v + *cn, 0) : std::min(v, *cn);
    };
    const int64_t b = clamp(*cb), e = clamp(*ce);
    return {Expr(b), Expr(e > b ? (e - b + step - 1) / step : 0)};
  }
  auto clamped = [&](const Expr& v) -> Expr {
    auto c = v.as_int();
    if (!c) return same_dim(v, n) ? n : ir::min(v, n);
    if (*c >= kToTheEnd) return n;
    if (*c < 0) return ir::max(n + Expr(*c), Expr(0));
    return *c == 0 ? Expr(0) : ir::min(Expr(*c), n);
  };
  const Expr first = clamped(start);
  const Expr last = clamped(stop);
  Expr len = ir::max(last - first, Expr(0));
  if (step != 1) len = ir::floordiv(len + Expr(step - 1), Expr(step));
  return {first, len};
}

// Slicing with bounds the caller guarantees in range: the length is exact.
SliceBounds exact_bounds(const Expr& n, const Expr& start, const Expr& stop, int64_t step) {
  auto position = [&](const Expr& v) -> Expr {
    auto c = v.as_int();
    if (!c) return v;
    if (*c >= kToTheEnd) return n;
    return *c < 0 ? canonical_dim(n + Expr(*c)) : v;
  };
  const Expr first = canonical_dim(position(start));
  Expr len = position(stop) - first;
  if (step != 1) len = ir::floordiv(len + Expr(step - 1), Expr(step));
  return {first, canonical_dim(len)};
}

SliceBounds slice_bounds(const Expr& n, const Expr& start, const Expr& stop, int64_t step,
                         bool clamp) {
  return clamp ? clamped_bounds(n, start, stop, step) : exact_bounds(n, start, stop, step);
}

struct SliceSpec {
  std::vector<int64_t> axes;
  std::vector<Expr> starts, stops;
  std::vector<int64_t> steps;
};

SliceSpec check_slice(const SliceAttrs& a, int64_t rank) {
  SliceSpec s{a.axes, a.starts, a.stops, a.steps};
  if (s.steps.empty()) s.steps.assign(s.axes.size(), 1);
  EMBER_CHECK(s.starts.size() == s.axes.size() && s.stops.size() == s.axes.size() &&
                  s.steps.size() == s.axes.size(),
              "slice: axes, starts, stops and steps must have the same length, got "
                  << a.axes.size() << ", " << a.starts.size() << ", " << a.stops.size() << " and "
                  << a.steps.size());
  for (size_t i = 0; i < s.axes.size(); ++i) {
    s.axes[i] = normalize_dim("slice", s.axes[i], rank);
    EMBER_CHECK(rank > 0, "slice: cannot slice a 0-d tensor");
    for (size_t j = 0; j < i; ++j) {
      EMBER_CHECK(s.axes[j] != s.axes[i],
                  "slice: axis " << s.axes[i] << " is sliced twice; give each axis once");
    }
    EMBER_CHECK(s.steps[i] >= 1, "slice: step must be >= 1, got "
                                     << s.steps[i] << " for axis " << s.axes[i]
                                     << "; reversed (negative-step) slices are not supported");
    for (const Expr* b : {&s.starts[i], &s.stops[i]}) {
      EMBER_CHECK(b->defined() && b->dtype() == DType::int64,
                  "slice: the bounds of axis " << s.axes[i] << " must be int64 sizes");
    }
  }
  return s;
}

// ---- squeeze / unsqueeze ----

// The dimensions squeeze removes: the size-1 ones among `dims` (all size-1 ones if empty).
std::vector<int64_t> squeezed_dims(const TensorType& x, const DimsAttrs& a) {
  std::vector<int64_t> dims;
  if (x.rank() == 0) {
    normalize_dims("squeeze", a.dims, 0);
    return dims;
  }
  const std::vector<int64_t> asked =
      a.dims.empty() ? std::vector<int64_t>{} : normalize_dims("squeeze", a.dims, x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) {
    const bool listed = a.dims.empty() || std::find(asked.begin(), asked.end(), i) != asked.end();
    if (listed && is_const(x.shape[i], 1)) dims.push_back(i);
  }
  return dims;
}

bool has(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// squeeze and unsqueeze (LayoutRule::Own) keep a channel-blocked or channels-last layout
// where they only remove or add size-1 dimensions after the channel, the memory staying the
// same ([N, C, L] blocked is [N, CB, L, b], [N, C, 1, L] is [N, CB, 1, L, b]): a conv1d's
// blocked values pass through the unsqueeze and squeeze around a 2-d pool. Any other
// non-plain input is an error (the layout pass then keeps the view plain).
TensorType unit_dims_view(const std::string& op, const TensorType& x, TensorType out,
                          const std::vector<int64_t>& dims) {
  out.layout = x.layout;
  if (x.layout.is_plain()) return out;
  const bool after_channel =
      std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 2; });
  EMBER_CHECK(after_channel && out.rank() >= 3 && out.rank() <= 5,
              op << ": on " << x.str() << " it may only remove or add size-1 dimensions after "
                 << "the channel, keeping 3 to 5 dimensions; convert it with "
                    "to_layout(x, 'plain') first");
  return out;
}

// ---- expand ----

Shape expand_shape(const TensorType& x, const Shape& given) {
  const Shape target = canonical_shape(given);
  EMBER_CHECK(target.size() >= x.shape.size(),
              "expand: the target shape " << shape_str(target) << " has fewer dimensions than "
                                          << x.str() << "; expand cannot remove dimensions");
  const size_t lead = target.size() - x.shape.size();
  Shape out(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    const Expr& t = target[i];
    auto c = t.as_int();
    EMBER_CHECK(!c || *c >= -1, "expand: invalid size " << *c << " in " << shape_str(target)
                                                        << "; sizes must be >= 0, or -1 to "
                                                           "keep a dimension");
    if (i < lead) {
      EMBER_CHECK(!is_const(t, -1), "expand: -1 is not allowed for the new leading dimension "
                                        << i << " of " << shape_str(target) << "; give its size");
      out[i] = t;
      continue;
    }
    const Expr& d = x.shape[i - lead];
    if (is_const(t, -1) || same_dim(d, t)) {
      out[i] = d;
    } else {
      EMBER_CHECK(is_const(d, 1), "expand: cannot expand "
                                      << x.str() << " to " << shape_str(target) << ": dimension "
                                      << (i - lead) << " has size " << ir::to_string(d)
                                      << "; only size-1 dimensions can be expanded");
      out[i] = t;
    }
  }
  return out;
}

}  // namespace

EMBER_REGISTER_OP {
  OpDef d = view("reshape", "Reshape");
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("reshape", in, 1);
    const Shape s = reshape_target(in[0], attrs_as<ShapeAttrs>(a).shape);
    return std::vector<TensorType>{TensorType{in[0].dtype, s, in[0].device}};
  };
  d.compute = [](const ComputeArgs& a) {
    return a.load(0, reshape_index(a.idx, a.output.shape, a.inputs[0].shape));
  };
  return d;
}

EMBER_REGISTER_OP {
  OpDef d = injective("permute", "Permute", 1);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("permute", in, 1);
    const TensorType& x = in[0];
    const std::vector<int64_t>& perm = attrs_as<DimsAttrs>(a).dims;
    EMBER_CHECK(static_cast<int64_t>(perm.size()) == x.rank(),
                "permute: the permutation " << vec_str(perm) << " has " << perm.size()
                                            << " dimensions but " << x.str() << " has " << x.rank()
                                            << "; list every dimension once");
    normalize_dims("permute", perm, x.rank());  // range and duplicates
    TensorType out = x;
    for (size_t i = 0; i < perm.size(); ++i) {
      out.shape[i] = x.shape[normalize_dim("permute", perm[i], x.rank())];
    }
    return std::vector<TensorType>{out};
  };
  d.compute = [](const ComputeArgs& a) {
    const std::vector<int64_t>& perm = attrs_as<DimsAttrs>(a.attrs).dims;
    const int64_t rank = a.inputs[0].rank();
    Index idx(rank);
    for (size_t i = 0; i < perm.size(); ++i)
      idx[normalize_dim("permute", perm[i], rank)] = a.idx[i];
    return a.load(0, idx);
  };
  return d;
}

// flip: the elements of each listed dimension in reverse order, out[..., i, ...] =
// x[..., size - 1 - i, ...] (torch.flip; a convolution's weight turned for its transpose).
EMBER_REGISTER_OP {
  OpDef d = injective("flip", "Flip", 1);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("flip", in, 1);
    normalize_dims("flip", attrs_as<DimsAttrs>(a).dims, in[0].rank());  // range and duplicates
    return std::vector<TensorType>{in[0]};
  };
  d.compute = [](const ComputeArgs& a) {
    const TensorType& x = a.inputs[0];
    Index idx = a.idx;
    for (int64_t d : attrs_as<DimsAttrs>(a.attrs).dims) {
      const size_t i = static_cast<size_t>(normalize_dim("flip", d, x.rank()));
      idx[i] = x.shape[i] - Expr(1) - idx[i];
    }
    return a.load(0, idx);
  };
  return d;
}

EMBER_REGISTER_OP {
  OpDef d = view("squeeze", "Squeeze");
  d.declared_traits->layouts = LayoutRule::Own;  // unit_dims_view
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("squeeze", in, 1);
    const std::vector<int64_t> dims = squeezed_dims(in[0], attrs_as<DimsAttrs>(a));
    TensorType out = in[0];
    out.shape.clear();
    for (int64_t i = 0; i < in[0].rank(); ++i) {
      if (!has(dims, i)) out.shape.push_back(in[0].shape[i]);
    }
    return std::vector<TensorType>{unit_dims_view("squeeze", in[0], out, dims)};
  };
  d.compute = [](const ComputeArgs& a) {
    const std::vector<int64_t> dims = squeezed_dims(a.inputs[0], attrs_as<DimsAttrs>(a.attrs));
    Index idx;
    size_t j = 0;
    for (int64_t i = 0; i < a.inputs[0].rank(); ++i)
      idx.push_back(has(dims, i) ? Expr(0) : a.idx[j++]);
    return a.load(0, idx);
  };
  return d;
}

EMBER_REGISTER_OP {
  OpDef d = view("unsqueeze", "Unsqueeze");
  d.declared_traits->layouts = LayoutRule::Own;  // unit_dims_view
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("unsqueeze", in, 1);
    const std::vector<int64_t>& asked = attrs_as<DimsAttrs>(a).dims;
    const int64_t rank = in[0].rank() + static_cast<int64_t>(asked.size());
    const std::vector<int64_t> dims = normalize_dims("unsqueeze", asked, rank);
    TensorType out = in[0];
    out.shape.clear();
    for (int64_t i = 0, j = 0; i < rank; ++i)
      out.shape.push_back(has(dims, i) ? Expr(1) : in[0].shape[j++]);
    return std::vector<TensorType>{unit_dims_view("unsqueeze", in[0], out, dims)};
  };
  d.compute = [](const ComputeArgs& a) {
    const std::vector<int64_t>& asked = attrs_as<DimsAttrs>(a.attrs).dims;
    const int64_t rank = a.output.rank();
    const std::vector<int64_t> dims = normalize_dims("unsqueeze", asked, rank);
    Index idx;
    for (int64_t i = 0; i < rank; ++i) {
      if (!has(dims, i)) idx.push_back(a.idx[i]);
    }
    return a.load(0, idx);
  };
  return d;
}

EMBER_REGISTER_OP {
  OpDef d = injective("concat", "Concat", -1);
  // It indexes its inputs logically, so on channel-blocked inputs it writes the blocked
  // output directly (a UNet's skip joined to its upsampled path stays blocked).
  OpTraits traits = default_traits(OpKind::Injective);
  traits.layouts = LayoutRule::Keep;
  d.declared_traits = traits;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("concat", in, -1);
    const Device device = common_device("concat", in);
    const TensorType& x = in[0];
    EMBER_CHECK(x.rank() >= 1, "concat: cannot concatenate 0-d tensors; unsqueeze them first");
    const int64_t axis = normalize_dim("concat", attrs_as<AxisAttrs>(a).axis, x.rank());
    TensorType out{x.dtype, x.shape, device};
    for (size_t i = 1; i < in.size(); ++i) {
      check_same_dtype("concat", x, in[i]);
      EMBER_CHECK(in[i].rank() == x.rank(), "concat: input " << i << " has rank " << in[i].rank()
                                                             << " but input 0 has rank " << x.rank()
                                                             << "; every input needs the same "
                                                                "rank");
      for (int64_t j = 0; j < x.rank(); ++j) {
        EMBER_CHECK(j == axis || same_dim(in[i].shape[j], x.shape[j]),
                    "concat: input " << i << " has shape " << shape_str(in[i].shape)
                                     << " but input 0 has shape " << shape_str(x.shape)
                                     << "; sizes must match in every dimension except the "
                                        "concat axis "
                                     << axis);
      }
      out.shape[axis] = canonical_dim(out.shape[axis] + in[i].shape[axis]);
    }
    return std::vector<TensorType>{out};
  };
  // Input i holds positions [offset_i, offset_i+1) of the axis; a chain of selects picks it.
  d.compute = [](const ComputeArgs& a) {
    const size_t n = a.inputs.size();
    const int64_t axis =
        normalize_dim("concat", attrs_as<AxisAttrs>(a.attrs).axis, a.output.rank());
    std::vector<Expr> offset(n);
    offset[0] = Expr(0);
    for (size_t i = 1; i < n; ++i) offset[i] = offset[i - 1] + a.inputs[i - 1].shape[axis];
    auto load_from = [&](size_t i) {
      Index idx = a.idx;
      idx[axis] = idx[axis] - offset[i];
      return a.load(static_cast<int>(i), idx);
    };
    Expr v = load_from(n - 1);
    for (size_t i = n - 1; i-- > 0;) {
      v = ir::select(ir::binary(ir::BinaryOp::Lt, a.idx[axis], offset[i + 1]), load_from(i), v);
    }
    return v;
  };
  return d;
}

EMBER_REGISTER_OP {
  OpDef d = injective("slice", "Slice", 1);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("slice", in, 1);
    const SliceAttrs& sa = attrs_as<SliceAttrs>(a);
    const SliceSpec s = check_slice(sa, in[0].rank());
    TensorType out = in[0];
    for (size_t i = 0; i < s.axes.size(); ++i) {
      Expr& dim = out.shape[s.axes[i]];
      dim = slice_bounds(dim, s.starts[i], s.stops[i], s.steps[i], sa.clamp).len;
    }
    return std::vector<TensorType>{out};
  };
  d.compute = [](const ComputeArgs& a) {
    const TensorType& x = a.inputs[0];
    const SliceAttrs& sa = attrs_as<SliceAttrs>(a.attrs);
    const SliceSpec s = check_slice(sa, x.rank());
    Index idx = a.idx;
    for (size_t i = 0; i < s.axes.size(); ++i) {
      const int64_t ax = s.axes[i];
      const SliceBounds b =
          slice_bounds(x.shape[ax], s.starts[i], s.stops[i], s.steps[i], sa.clamp);
      idx[ax] = idx[ax] * Expr(s.steps[i]) + b.start;
    }
    return a.load(0, idx);
  };
  return d;
}

EMBER_REGISTER_OP {
  OpDef d = injective("expand", "Expand", 1);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("expand", in, 1);
    const Shape s = expand_shape(in[0], attrs_as<ShapeAttrs>(a).shape);
    return std::vector<TensorType>{TensorType{in[0].dtype, s, in[0].device}};
  };
  d.compute = [](const ComputeArgs& a) {
    return a.load(0, broadcast_index(a.idx, a.inputs[0].shape));
  };
  return d;
}

// ---- to_layout ----

// The same tensor in another layout (ember/ir/layout.h). Its compute is the identity on the
// logical index: the kernel's addressing of its input and output buffers comes from their
// layouts, and a kernel writing a blocked buffer writes zeros into the channel-padding lanes.
EMBER_REGISTER_OP {
  OpDef d = injective("to_layout", "ToLayout", 1);
  OpTraits t = default_traits(OpKind::Injective);
  t.layouts = LayoutRule::Own;
  d.declared_traits = t;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("to_layout", in, 1);
    TensorType out = in[0];
    out.layout = attrs_as<LayoutAttrs>(a).layout;
    out.layout.check_rank(out.shape.size(), "to_layout");
    return std::vector<TensorType>{out};
  };
  d.compute = [](const ComputeArgs& a) { return a.load(0, a.idx); };
  return d;
}

}  // namespace ember::opdefs
