#include "common.h"

#include <algorithm>

#include "ember/ir/simplify.h"
#include "ember/support/error.h"

namespace ember::opdefs {

// ---- shapes ----

Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {  // i counts from the end
    const bool in_a = i < a.size(), in_b = i < b.size();
    const Expr da = in_a ? a[a.size() - 1 - i] : Expr(1);
    const Expr db = in_b ? b[b.size() - 1 - i] : Expr(1);
    Expr d;
    if (!in_b || is_const(db, 1) || same_dim(da, db)) {
      d = da;
    } else if (!in_a || is_const(da, 1)) {
      d = db;
    } else {
      EMBER_THROW(op << ": cannot broadcast shapes " << shape_str(a) << " and " << shape_str(b)
                     << ": dimension -" << (i + 1) << " is " << ir::to_string(da) << " vs "
                     << ir::to_string(db) << "; sizes must be equal or 1");
    }
    out[rank - 1 - i] = d;
  }
  return out;
}

Index broadcast_index(const Index& out_idx, const Shape& in) {
  EMBER_ASSERT(out_idx.size() >= in.size(), "broadcast to a lower rank");
  const size_t lead = out_idx.size() - in.size();
  Index idx(in.size());
  for (size_t i = 0; i < in.size(); ++i) idx[i] = is_const(in[i], 1) ? Expr(0) : out_idx[lead + i];
  return idx;
}

int64_t normalize_dim(const std::string& op, int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);  // a 0-d tensor accepts 0 and -1
  EMBER_CHECK(dim >= -r && dim < r,
              op << ": dimension " << dim << " is out of range for a tensor of rank " << rank
                 << " (expected a dimension in [" << -r << ", " << r - 1 << "])");
  return dim < 0 ? dim + r : dim;
}

std::vector<int64_t> normalize_dims(const std::string& op, const std::vector<int64_t>& dims,
                                    int64_t rank) {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.push_back(normalize_dim(op, d, rank));
  std::sort(out.begin(), out.end());
  for (size_t i = 1; i < out.size(); ++i) {
    EMBER_CHECK(out[i] != out[i - 1], op << ": dimension " << out[i]
                                         << " appears more than once; give each dimension once");
  }
  return out;
}

std::string vec_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool is_const(const Expr& e, int64_t v) {
  if (!e.defined()) return false;
  auto c = e.as_int();
  return c.has_value() && *c == v;
}

bool same_dim(const Expr& a, const Expr& b) {
  return ir::equal(a, b) || ir::equal(canonical_dim(a), canonical_dim(b));
}

// ---- row-major index arithmetic ----

Index row_major_strides(const Shape& shape) {
  Index strides(shape.size());
  Expr s(1);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s = s * shape[i];
  }
  return strides;
}

Expr flat_offset(const Index& idx, const Shape& shape) {
  EMBER_ASSERT(idx.size() == shape.size(), "index rank differs from shape rank");
  const Index strides = row_major_strides(shape);
  Expr flat(0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (is_const(shape[i], 1)) continue;  // its index is always 0
    flat = flat + idx[i] * strides[i];
  }
  return flat;
}

Index unravel(const Expr& flat, const Shape& shape) {
  const Index strides = row_major_strides(shape);
  Index idx(shape.size());
  bool outermost = true;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (is_const(shape[i], 1)) {
      idx[i] = Expr(0);
      continue;
    }
    const Expr q = ir::floordiv(flat, strides[i]);
    idx[i] = outermost ? q : ir::mod(q, shape[i]);  // flat < numel: no mod for the outermost
    outermost = false;
  }
  return idx;
}

Index reshape_index(const Index& out_idx, const Shape& out, const Shape& in) {
  // Groups of dimensions with equal products map to each other (ir::reindex), so a
  // reshape that splits or merges dimensions stays affine where it can.
  return ir::reindex(out_idx, out, in);
}

// ---- products of dimensions ----

namespace {

void collect_factors(const Expr& e, Monomial* m) {
  if (auto c = e.as_int()) {
    m->coef *= *c;
  } else if (e.kind() == ir::ExprKind::Binary && e->op == static_cast<uint8_t>(ir::BinaryOp::Mul)) {
    collect_factors(e->args[0], m);
    collect_factors(e->args[1], m);
  } else {
    m->factors.push_back(e);
  }
}

// Removes one factor equal to f from fs; false when there is none.
bool remove_factor(std::vector<Expr>* fs, const Expr& f) {
  for (auto it = fs->begin(); it != fs->end(); ++it) {
    if (ir::equal(*it, f)) {
      fs->erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace

Monomial monomial_of(const Shape& dims) {
  Monomial m;
  for (const Expr& d : dims) collect_factors(d, &m);
  std::stable_sort(m.factors.begin(), m.factors.end(),
                   [](const Expr& a, const Expr& b) { return a.hash() < b.hash(); });
  return m;
}

bool monomial_equal(const Monomial& a, const Monomial& b) {
  if (a.coef == 0 && b.coef == 0) return true;  // both empty
  if (a.coef != b.coef || a.factors.size() != b.factors.size()) return false;
  std::vector<Expr> rest = a.factors;
  for (const Expr& f : b.factors) {
    if (!remove_factor(&rest, f)) return false;
  }
  return true;
}

bool monomial_divide(const Monomial& a, const Monomial& b, Expr* quotient) {
  if (b.coef == 0 || a.coef % b.coef != 0) return false;
  std::vector<Expr> rest = a.factors;
  for (const Expr& f : b.factors) {
    if (!remove_factor(&rest, f)) return false;
  }
  Expr q(a.coef / b.coef);
  for (const Expr& f : rest) q = q * f;
  *quotient = q;
  return true;
}

// ---- inputs, dtypes and devices ----

void check_arity(const std::string& op, const std::vector<TensorType>& in, int n) {
  if (n < 0) {
    EMBER_CHECK(!in.empty(), op << ": expected at least one input, got none");
  } else {
    EMBER_CHECK(in.size() == static_cast<size_t>(n), op << ": expected " << n << " input"
                                                        << (n == 1 ? "" : "s") << ", got "
                                                        << in.size());
  }
}

void check_same_dtype(const std::string& op, const TensorType& a, const TensorType& b) {
  EMBER_CHECK(a.dtype == b.dtype, op << ": dtypes differ: " << dtype_name(a.dtype) << " vs "
                                     << dtype_name(b.dtype)
                                     << "; cast one operand with ember.ops.cast (both operands "
                                        "must have the same dtype)");
}

void check_float(const std::string& op, const TensorType& t) {
  EMBER_CHECK(is_float(t.dtype), op << ": expected a floating-point tensor (float16, bfloat16, "
                                       "float32 or float64), got "
                                    << dtype_name(t.dtype)
                                    << "; cast it first with ember.ops.cast(x, ember.float32)");
}

void check_not_bool(const std::string& op, const TensorType& t) {
  EMBER_CHECK(t.dtype != DType::boolean,
              op << ": bool tensors are not supported; cast to an integer or floating-point "
                    "dtype first with ember.ops.cast");
}

Device common_device(const std::string& op, const std::vector<TensorType>& inputs) {
  EMBER_ASSERT(!inputs.empty(), op << " has no inputs");
  const Device d = inputs[0].device;
  for (const TensorType& t : inputs) {
    EMBER_CHECK(t.device == d, op << ": inputs are on different devices: " << d.str() << " vs "
                                  << t.device.str() << "; move them to one device first");
  }
  return d;
}

DType compute_dtype(DType t) {
  return (t == DType::float16 || t == DType::bfloat16) ? DType::float32 : t;
}

Expr to_compute(const Expr& e) { return cast_to(e, compute_dtype(e.dtype())); }

Expr cast_to(const Expr& e, DType t) { return e.dtype() == t ? e : ir::cast(e, t); }

// ---- composite tasks ----

Index make_vars(const std::string& prefix, size_t n) {
  Index vars;
  vars.reserve(n);
  // Loop variables start with "__", which symbol names may not (Tensor::symbol checks).
  for (size_t i = 0; i < n; ++i) vars.push_back(ir::var("__" + prefix + std::to_string(i)));
  return vars;
}

ir::Stage call_stage(const std::string& routine, std::vector<int> in, std::vector<int> out,
                     std::vector<Expr> params, Expr flops) {
  ir::Stage s;
  s.flops = std::move(flops);
  s.kind = ir::StageKind::Call;
  s.routine = routine;
  s.call_inputs = std::move(in);
  s.call_outputs = std::move(out);
  s.out = s.call_outputs.at(0);
  s.params = std::move(params);
  return s;
}

Loader buffer_loader(const ir::Task& t, const std::vector<int>& buffers) {
  std::vector<std::pair<int, DType>> bufs;
  for (int b : buffers) bufs.emplace_back(b, t.buffers.at(b).dtype);
  return [bufs](int i, const Index& idx) {
    const auto& [b, dtype] = bufs.at(i);
    return ir::load(b, dtype, idx);
  };
}

ir::Stage reduce_stage(const ReduceDef& r, int out, const Index& axes, const Loader& load,
                       const std::string& rprefix) {
  ir::Stage s;
  s.kind = ir::StageKind::Reduce;
  s.out = out;
  s.axes = axes;
  s.raxes = make_vars(rprefix, r.rextents.size());
  s.rextents = r.rextents;
  s.reduce_op = r.op;
  s.acc_dtype = r.acc_dtype;
  s.value = r.value(axes, s.raxes, load);
  const bool arg = r.op == ir::ReduceOp::ArgMax || r.op == ir::ReduceOp::ArgMin;
  const Expr acc = ir::acc(arg ? DType::int64 : r.acc_dtype);
  if (r.finalize_at) {
    s.epilogue = r.finalize_at(acc, axes);
  } else if (r.finalize) {
    s.epilogue = r.finalize(acc);
  }
  return s;
}

}  // namespace ember::opdefs
