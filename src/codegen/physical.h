// Layouts in the code generator: a task whose buffers have layouts (ember/ir/layout.h)
// becomes one whose buffers are all plain, before anything is planned or printed.
#pragma once

#include "ember/ir/task.h"

namespace ember::codegen {

// The same computation over the buffers' memory as it lies: every non-plain buffer becomes a
// plain one of its physical shape (Layout::physical_shape), every load of it reads at
// Layout::physical_index, and a Compute or Reduce stage writing it loops over its physical
// shape (so the innermost loop, the one vectorized, runs along the innermost physical axis:
// the lanes of a channel block, or the channels of a channels-last buffer); a reduction's
// loads of a buffer blocked as its output at the output's channel read the output's lanes.
// A stage writing a blocked buffer whose channels are not a multiple of the block writes
// zeros into the padding lanes. A Compute stage that only copies float32 between plain and
// blocked or channels-last memory becomes a Call of ember_rt/layout_convert.h's routines.
// Matmul and Call stages read and write plain buffers only (an ember::Error otherwise),
// unless the Call says it addresses their layouts itself (Stage::call_takes_layouts).
// A task whose buffers are all plain is returned as it is.
ir::Task physical_task(const ir::Task& task);

}  // namespace ember::codegen
