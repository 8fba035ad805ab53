// TraceNode: how a symbolic tensor was produced (Tensor::trace()). ops::apply records one
// per operator call with a symbolic input; trace_from (ember/graph/flow_graph.h) turns the
// traces into a graph.
#pragma once

#include <vector>

#include "ember/ops/attrs.h"
#include "ember/ops/op_def.h"
#include "ember/tensor/tensor.h"

namespace ember {

struct TraceNode {
  const OpDef* op = nullptr;
  OpAttrs attrs;
  std::vector<Tensor> inputs;
  std::vector<TensorType> outputs;
};

}  // namespace ember
