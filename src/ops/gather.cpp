// gather: out[i0, .., ik, ..] = x[i0, .., index[i0, .., ik, ..], ..] along one axis (torch.gather
// and take_along_dim). The index is data: the code generator checks every value read from it
// against the axis' size when the kernel runs (an ember::DataError names the tensor), so bad
// data never reads outside x. Off the axis, the index' sizes must be the input's, or constants
// no larger, so that those positions are in range by construction.
#include <string>

#include "common.h"
#include "ember/ops/ops.h"
#include "ember/support/error.h"

namespace ember::opdefs {

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "gather";
  d.title = "Gather";
  d.kind = OpKind::Injective;
  d.num_inputs = 2;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity("gather", in, 2);
    const Device device = common_device("gather", in);
    const TensorType& x = in[0];
    const TensorType& index = in[1];
    EMBER_CHECK(index.dtype == DType::int32 || index.dtype == DType::int64,
                "gather: the index must be int32 or int64, got " << index.str());
    EMBER_CHECK(index.rank() == x.rank(), "gather: the index " << index.str()
                                                               << " must have the rank of x "
                                                               << x.str());
    EMBER_CHECK(x.rank() > 0, "gather: x must have at least one dimension, got " << x.str());
    const int64_t axis = normalize_dim("gather", attrs_as<AxisAttrs>(attrs).axis, x.rank());
    for (int64_t k = 0; k < x.rank(); ++k) {
      if (k == axis) continue;
      const Expr& n = x.shape[k];
      const Expr& m = index.shape[k];
      const auto ni = n.as_int(), mi = m.as_int();
      const bool ok = (ni && mi) ? *mi <= *ni : ir::equal(canonical_dim(n), canonical_dim(m));
      EMBER_CHECK(ok, "gather: dimension " << k << " of the index " << index.str()
                                           << " must not exceed (and, when symbolic, must equal)"
                                              " that of x "
                                           << x.str());
    }
    return std::vector<TensorType>{TensorType{x.dtype, canonical_shape(index.shape), device}};
  };
  d.compute = [](const ComputeArgs& a) {
    const int64_t axis = normalize_dim("gather", attrs_as<AxisAttrs>(a.attrs).axis,
                                       static_cast<int64_t>(a.inputs[0].rank()));
    std::vector<Expr> at(a.idx.begin(), a.idx.end());
    at[axis] = cast_to(a.load(1, a.idx), DType::int64);
    return a.load(0, at);
  };
  return d;
}

}  // namespace ember::opdefs

namespace ember::ops {

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  return apply("gather", {x, index}, AxisAttrs{axis})[0];
}

}  // namespace ember::ops
