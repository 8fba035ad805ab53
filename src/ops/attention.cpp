// attention(q, k, v, [mask]): scaled-dot-product attention as one operator (AttentionAttrs),
//
//   out = softmax(scale * q k^T (+ mask), over the keys) v,
//
// q [B.., Lq, E], k [B.., Lk, E], v [B.., Lk, Ev] -> [B.., Lq, Ev], float32. The optional
// mask is float32 (added to the scaled scores) or bool (true keeps the key, as torch's
// scaled_dot_product_attention), broadcastable to [B.., Lq, Lk]; `causal` keeps key j for
// query i when j <= i (torch's is_causal).
//
// It is a Composite whose task is one Call stage: ember_rt::lib::attention (or
// attention_masked), runtime_include/ember_rt/attention.h, which never stores the Lq x Lk
// scores (an online softmax over blocks of keys). The routine reads materialized buffers, so
// the operator takes neither a prologue nor an epilogue. The graph rewrite that finds
// attention written out (matmul, scale, mask, softmax, matmul) is
// src/graph/passes/recognize_attention.cpp.
#include <limits>
#include <string>

#include "common.h"
#include "ember/ops/nn.h"
#include "ember/support/error.h"

namespace ember {
namespace opdefs {
namespace {

constexpr const char* kOp = "attention";

// The mask's view for the routine: the batch as three runs b0 x b1 x b2 whose mask strides
// are m0, m1, m2 (0: broadcast), and the strides mq, mk of the query and key dimensions.
struct MaskLayout {
  Expr b[3] = {Expr(1), Expr(1), Expr(1)};
  Expr m[3] = {Expr(0), Expr(0), Expr(0)};
  Expr mq = Expr(0), mk = Expr(0);
};

// The mask's dimensions, padded on the left with 1 to the rank of target ([B.., Lq, Lk]),
// each 1 or equal to target's; more than three runs of batch dimensions that alternate
// between broadcast and not is an error (expand the mask).
MaskLayout mask_layout(const Shape& mask, const Shape& target) {
  const size_t r = target.size();
  EMBER_CHECK(mask.size() <= r, kOp << ": the mask " << shape_str(mask)
                                    << " has more dimensions than the scores "
                                    << shape_str(target));
  Shape md(r - mask.size(), Expr(1));
  md.insert(md.end(), mask.begin(), mask.end());
  for (size_t d = 0; d < r; ++d)
    EMBER_CHECK(is_const(md[d], 1) || same_dim(md[d], target[d]),
                kOp << ": the mask " << shape_str(mask) << " does not broadcast to the scores "
                    << shape_str(target) << " (dimension " << d << ")");
  const Index strides = row_major_strides(md);
  MaskLayout l;
  l.mq = is_const(md[r - 2], 1) ? Expr(0) : strides[r - 2];
  l.mk = is_const(md[r - 1], 1) ? Expr(0) : strides[r - 1];
  // Runs of batch dimensions, each all broadcast or all full; size-1 dimensions join any run.
  struct Run {
    bool full;
    Expr size, stride;
  };
  std::vector<Run> runs;
  for (size_t d = 0; d + 2 < r; ++d) {
    if (is_const(target[d], 1)) continue;
    const bool full = !is_const(md[d], 1);
    if (!runs.empty() && runs.back().full == full) {
      runs.back().size = runs.back().size * target[d];
      runs.back().stride = full ? strides[d] : Expr(0);
    } else {
      runs.push_back({full, target[d], full ? strides[d] : Expr(0)});
    }
  }
  EMBER_CHECK(runs.size() <= 3, kOp << ": the mask " << shape_str(mask)
                                    << " alternates between broadcast and full batch "
                                    << "dimensions more than three times; expand it first");
  const size_t first = 3 - runs.size();
  for (size_t i = 0; i < runs.size(); ++i) {
    l.b[first + i] = runs[i].size;
    l.m[first + i] = runs[i].stride;
  }
  return l;
}

std::vector<TensorType> infer_attention(const std::vector<TensorType>& in, const OpAttrs& attrs) {
  const AttentionAttrs& a = attrs_as<AttentionAttrs>(attrs);
  check_arity(kOp, in, a.has_mask ? 4 : 3);
  const Device device = common_device(kOp, in);
  const TensorType &q = in[0], &k = in[1], &v = in[2];
  for (size_t i = 0; i < 3; ++i)
    EMBER_CHECK(in[i].dtype == DType::float32, kOp << ": takes float32 q, k and v, got "
                                                   << dtype_name(in[i].dtype) << " for "
                                                   << "qkv"[i] << "; cast them first");
  EMBER_CHECK(q.rank() >= 2 && k.rank() == q.rank() && v.rank() == q.rank(),
              kOp << ": q " << shape_str(q.shape) << ", k " << shape_str(k.shape) << " and v "
                  << shape_str(v.shape) << " must have one rank, at least 2");
  const size_t r = q.shape.size();
  for (size_t d = 0; d + 2 < r; ++d)
    EMBER_CHECK(same_dim(q.shape[d], k.shape[d]) && same_dim(q.shape[d], v.shape[d]),
                kOp << ": q " << shape_str(q.shape) << ", k " << shape_str(k.shape) << " and v "
                    << shape_str(v.shape) << " must have the same batch dimensions");
  EMBER_CHECK(same_dim(q.shape[r - 1], k.shape[r - 1]),
              kOp << ": q " << shape_str(q.shape) << " and k " << shape_str(k.shape)
                  << " must have one head size (last dimension)");
  EMBER_CHECK(same_dim(k.shape[r - 2], v.shape[r - 2]),
              kOp << ": k " << shape_str(k.shape) << " and v " << shape_str(v.shape)
                  << " must have one number of keys (second-to-last dimension)");
  if (a.has_mask) {
    const TensorType& m = in[3];
    EMBER_CHECK(m.dtype == DType::float32 || m.dtype == DType::boolean,
                kOp << ": the mask is float32 (added to the scores) or bool (true keeps), got "
                    << dtype_name(m.dtype));
    Shape scores(q.shape.begin(), q.shape.end() - 1);
    scores.push_back(k.shape[r - 2]);
    mask_layout(m.shape, scores);
  }
  Shape out = q.shape;
  out.back() = v.shape.back();
  return {TensorType{DType::float32, out, device}};
}

ir::Task lower_attention(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                         const OpAttrs& attrs) {
  const AttentionAttrs& a = attrs_as<AttentionAttrs>(attrs);
  const TensorType &q = in.at(0), &k = in.at(1), &v = in.at(2);
  const size_t r = q.shape.size();
  ir::Task t;
  t.name = kOp;
  const char* names[] = {"q", "k", "v", "mask"};
  for (size_t i = 0; i < in.size(); ++i)
    t.add_buffer(names[i], in[i].dtype, in[i].shape, ir::BufferRole::Input);
  const int ob = t.add_buffer("out", DType::float32, out.at(0).shape, ir::BufferRole::Output);
  ir::Stage s;
  s.kind = ir::StageKind::Call;
  s.call_outputs = {ob};
  s.out = ob;
  const Shape batch(q.shape.begin(), q.shape.end() - 2);
  const Expr lq = q.shape[r - 2], lk = k.shape[r - 2], e = q.shape[r - 1], ev = v.shape[r - 1];
  const std::vector<Expr> flags = {Expr(a.causal ? 1 : 0), Expr(a.empty_nan ? 1 : 0),
                                   Expr(a.scale ? 0 : 1)};
  if (a.has_mask) {
    Shape scores(q.shape.begin(), q.shape.end() - 1);
    scores.push_back(lk);
    const MaskLayout l = mask_layout(in.at(3).shape, scores);
    s.routine = "attention_masked";
    s.call_inputs = {0, 1, 2, 3};
    s.params = {l.b[0], l.b[1], l.b[2], lq, lk, e, ev, l.m[0], l.m[1], l.m[2], l.mq, l.mk};
  } else {
    s.routine = "attention";
    s.call_inputs = {0, 1, 2};
    s.params = {shape_numel_expr(batch), lq, lk, e, ev};
  }
  s.params.insert(s.params.end(), flags.begin(), flags.end());
  s.scalars = {a.scale.value_or(0.0), a.fill};
  // The two products, q k^T and p v, over the (query, key) pairs computed: with a causal
  // mask filling -inf the routine skips the keys past each query (ember_rt/attention.h),
  // lq (lq + 1) / 2 pairs of a square score matrix. The softmax's few operations per score
  // are not counted.
  const bool skips = a.causal && a.fill == -std::numeric_limits<double>::infinity();
  const Expr pairs = skips && same_dim(lq, lk) ? floordiv(lq * (lq + Expr(1)), Expr(2)) : lq * lk;
  s.flops = shape_numel_expr(batch) * pairs * Expr(2) * (e + ev);
  t.stages = {s};
  return t;
}

}  // namespace

EMBER_REGISTER_OP {
  OpDef d;
  d.name = kOp;
  d.title = "Attention";
  d.kind = OpKind::Composite;
  OpTraits t;
  t.anchor = true;
  t.epilogue = EpilogueRule::None;
  d.declared_traits = t;
  d.num_inputs = -1;
  d.infer = infer_attention;
  d.lower = lower_attention;
  return d;
}

}  // namespace opdefs

namespace ops {

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const std::optional<Tensor>& mask, std::optional<double> scale, bool causal) {
  AttentionAttrs a;
  a.scale = scale;
  a.causal = causal;
  a.has_mask = mask.has_value();
  std::vector<Tensor> inputs = {q, k, v};
  if (mask) inputs.push_back(*mask);
  return apply("attention", inputs, a).at(0);
}

}  // namespace ops
}  // namespace ember
