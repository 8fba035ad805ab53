// Splitting a stage's flat last axis into (row, column) so that the column
// vectorizes.
#pragma once

#include "ember/ir/task.h"

namespace ember::codegen {

// When the last axis of s has a constant extent and s's value reads it through
// floordiv and mod by one constant w (im2col's flat (row, column) index, whose
// loads are not affine in it), writes to *t / *out the same stage over [...,
// extent / w, w] (the output buffer declared with that shape in a copy of task:
// same memory, same values), in which the new last axis is the column; false
// otherwise. The caller checks that the result vectorizes.
bool split_row(const ir::Task& task, const ir::Stage& s, ir::Task* t, ir::Stage* out);

}  // namespace ember::codegen
