// Reductions: sum, mean, max, min, prod, argmax, argmin (ReduceAttrs), and softmax, a
// composite of two reductions and an elementwise stage.
//
// Accumulation types follow torch: sums and products of bool and integers accumulate and
// return int64; float16 / bfloat16 accumulate in float32 and are cast back at the end.
#include <string>

#include "common.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

using ir::ReduceOp;

enum class Family {
  SumLike,  // sum, prod: integers and bool give int64
  Mean,     // floating point only
  MinMax,   // max, min: the input dtype
  Arg,      // argmax, argmin: one dimension, int64 indices
};

// The reduced dimensions, normalized and sorted (all of them when attrs.dims is empty).
std::vector<int64_t> reduced_dims(const std::string& op, const ReduceAttrs& attrs, int64_t rank) {
  std::vector<int64_t> dims = normalize_dims(op, attrs.dims, rank);
  if (rank == 0) return {};  // a 0-d tensor accepts dim 0 / -1 and reduces nothing
  if (attrs.dims.empty()) {
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  }
  return dims;
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t y : v) {
    if (y == x) return true;
  }
  return false;
}

DType output_dtype(Family f, DType in) {
  if (f == Family::Arg) return DType::int64;
  if (f == Family::SumLike && !is_float(in)) return DType::int64;
  return in;
}

DType acc_dtype(Family f, DType in) {
  if (f == Family::SumLike && !is_float(in)) return DType::int64;
  if (in == DType::boolean) return DType::int32;  // max / min of bool
  return compute_dtype(in);
}

void check_reduce_input(const std::string& op, Family f, const TensorType& t,
                        const ReduceAttrs& attrs, const std::vector<int64_t>& dims) {
  if (f == Family::Mean) check_float(op, t);
  if (f == Family::Arg) {
    check_not_bool(op, t);
    EMBER_CHECK(attrs.dims.size() == 1,
                op << ": expected exactly one dimension, got " << attrs.dims.size()
                   << "; flatten the tensor first to reduce several dimensions at once");
  }
  if (f == Family::MinMax || f == Family::Arg) {
    for (int64_t d : dims) {
      EMBER_CHECK(!is_const(t.shape[d], 0),
                  op << ": cannot reduce over a zero-size dimension (dimension " << d << " of "
                     << t.str() << "): " << op
                     << " of no elements is undefined; only sum, mean and prod accept it");
    }
  }
}

std::vector<TensorType> infer_reduce(const std::string& op, Family f,
                                     const std::vector<TensorType>& in, const OpAttrs& a) {
  check_arity(op, in, 1);
  const ReduceAttrs& attrs = attrs_as<ReduceAttrs>(a);
  const TensorType& x = in[0];
  const std::vector<int64_t> dims = reduced_dims(op, attrs, x.rank());
  check_reduce_input(op, f, x, attrs, dims);
  // The output keeps a non-plain input's layout (LayoutRule::Keep): it must keep the rank and
  // the channel dimension 1 (a mean over H and W with keepdim, ResNet's global pool).
  EMBER_CHECK(x.layout.is_plain() || (attrs.keepdim && !contains(dims, 1)),
              op << ": the input " << x.str() << " has the layout " << x.layout.name(x.shape.size())
                 << ", which the result keeps only with keepdim and dimension 1 (the channel) "
                    "not reduced; convert it first with to_layout(x, 'plain')");
  Shape shape;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!contains(dims, i)) {
      shape.push_back(x.shape[i]);
    } else if (attrs.keepdim) {
      shape.push_back(Expr(1));
    }
  }
  return {TensorType{output_dtype(f, x.dtype), shape, x.device}};
}

ReduceDef reduce_def(const std::string& op, Family f, ReduceOp rop,
                     const std::vector<TensorType>& in, const TensorType& out, const OpAttrs& a) {
  const ReduceAttrs& attrs = attrs_as<ReduceAttrs>(a);
  const TensorType x = in.at(0);
  const std::vector<int64_t> dims = reduced_dims(op, attrs, x.rank());
  ReduceDef r;
  r.op = rop;
  r.acc_dtype = acc_dtype(f, x.dtype);
  for (int64_t d : dims) r.rextents.push_back(x.shape[d]);
  const DType acc = r.acc_dtype;
  const bool keep = attrs.keepdim;
  r.value = [x, dims, acc, keep](const Index& idx, const Index& ridx, const Loader& load) {
    Index in_idx;
    size_t j = 0, k = 0;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (contains(dims, i)) {
        in_idx.push_back(ridx.at(k++));
        if (keep) ++j;
      } else {
        in_idx.push_back(idx.at(j++));
      }
    }
    return cast_to(to_compute(load(0, in_idx)), acc);
  };
  const DType out_dtype = out.dtype;
  if (f == Family::Mean) {
    const Expr count = shape_numel_expr(r.rextents);
    r.finalize = [count, acc, out_dtype](const Expr& v) {
      return cast_to(ir::binary(ir::BinaryOp::Div, v, ir::cast(count, acc)), out_dtype);
    };
  } else if (f != Family::Arg && acc != out_dtype) {
    r.finalize = [out_dtype](const Expr& v) { return cast_to(v, out_dtype); };
  }
  return r;
}

OpDef make_reduce(const std::string& name, const std::string& title, Family f, ReduceOp rop) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Reduce;
  d.num_inputs = 1;
  if (f != Family::Arg) {
    // Each output reduces its own channel's elements, indexed logically: a reduction that
    // keeps the channel dimension keeps its input's layout (infer_reduce checks that).
    OpTraits t = default_traits(OpKind::Reduce);
    t.layouts = LayoutRule::Keep;
    d.declared_traits = t;
  }
  d.infer = [name, f](const std::vector<TensorType>& in, const OpAttrs& a) {
    return infer_reduce(name, f, in, a);
  };
  d.reduce = [name, f, rop](const std::vector<TensorType>& in, const TensorType& out,
                            const OpAttrs& a) { return reduce_def(name, f, rop, in, out, a); };
  return d;
}

// x's index with `r` inserted at `axis` (idx has rank - 1 entries).
Index with_axis(const Index& idx, int64_t axis, const Expr& r) {
  Index full = idx;
  full.insert(full.begin() + axis, r);
  return full;
}

// out = exp(x - max(x)) / sum(exp(x - max(x))) along the axis, in three stages.
ir::Task lower_softmax(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                       const OpAttrs& attrs) {
  const TensorType& x = in.at(0);
  const int64_t axis = normalize_dim("softmax", attrs_as<AxisAttrs>(attrs).axis, x.rank());
  const DType ct = compute_dtype(x.dtype);
  Shape row_shape = x.shape;
  row_shape.erase(row_shape.begin() + axis);

  ir::Task t;
  t.name = "softmax";
  const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input);
  const int ob = t.add_buffer("out", out.at(0).dtype, out.at(0).shape, ir::BufferRole::Output);
  const int mb = t.add_buffer("row_max", ct, row_shape, ir::BufferRole::Scratch);
  const int sb = t.add_buffer("row_sum", ct, row_shape, ir::BufferRole::Scratch);

  const Index rows = make_vars("i", row_shape.size());
  const Expr k = ir::var("__k");  // loop variables start with "__": never a symbol
  const Expr xk = to_compute(ir::load(xb, x.dtype, with_axis(rows, axis, k)));
  const Expr row_max = ir::load(mb, ct, rows);

  ir::Stage max_stage;
  max_stage.kind = ir::StageKind::Reduce;
  max_stage.out = mb;
  max_stage.axes = rows;
  max_stage.value = xk;
  max_stage.reduce_op = ReduceOp::Max;
  max_stage.raxes = {k};
  max_stage.rextents = {x.shape[axis]};
  max_stage.acc_dtype = ct;

  ir::Stage sum_stage = max_stage;
  sum_stage.out = sb;
  sum_stage.value = ir::unary(ir::UnaryOp::Exp, ir::binary(ir::BinaryOp::Sub, xk, row_max));
  sum_stage.reduce_op = ReduceOp::Sum;

  ir::Stage norm;
  norm.kind = ir::StageKind::Compute;
  norm.out = ob;
  norm.axes = make_vars("i", x.shape.size());
  Index row_of = norm.axes;
  row_of.erase(row_of.begin() + axis);
  const Expr xi = to_compute(ir::load(xb, x.dtype, norm.axes));
  const Expr e =
      ir::unary(ir::UnaryOp::Exp, ir::binary(ir::BinaryOp::Sub, xi, ir::load(mb, ct, row_of)));
  norm.value = cast_to(ir::binary(ir::BinaryOp::Div, e, ir::load(sb, ct, row_of)), out.at(0).dtype);

  t.stages = {max_stage, sum_stage, norm};
  return t;
}

}  // namespace

EMBER_REGISTER_OP { return make_reduce("sum", "Sum", Family::SumLike, ReduceOp::Sum); }
EMBER_REGISTER_OP { return make_reduce("prod", "Prod", Family::SumLike, ReduceOp::Prod); }
EMBER_REGISTER_OP { return make_reduce("mean", "Mean", Family::Mean, ReduceOp::Sum); }
EMBER_REGISTER_OP { return make_reduce("max", "Max", Family::MinMax, ReduceOp::Max); }
EMBER_REGISTER_OP { return make_reduce("min", "Min", Family::MinMax, ReduceOp::Min); }
EMBER_REGISTER_OP { return make_reduce("argmax", "ArgMax", Family::Arg, ReduceOp::ArgMax); }
EMBER_REGISTER_OP { return make_reduce("argmin", "ArgMin", Family::Arg, ReduceOp::ArgMin); }

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "softmax";
  d.title = "Softmax";
  d.kind = OpKind::Composite;
  d.num_inputs = 1;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity("softmax", in, 1);
    const TensorType& x = in[0];
    check_float("softmax", x);
    EMBER_CHECK(x.rank() >= 1,
                "softmax: expected a tensor with at least one dimension, got a "
                "0-d tensor; unsqueeze it first");
    normalize_dim("softmax", attrs_as<AxisAttrs>(a).axis, x.rank());
    return std::vector<TensorType>{x};
  };
  d.lower = lower_softmax;
  return d;
}

}  // namespace ember::opdefs
