// Splitting a stage's last axis so that it vectorizes: into (row, column), the column
// vectorized, or into interleaved phases, vectorized along the row.
#pragma once

#include <vector>

#include "ember/ir/task.h"

namespace ember::codegen {

// When the last axis of s has a constant extent and s's value reads it through
// floordiv and mod by one constant w (im2col's flat (row, column) index, whose
// loads are not affine in it), writes to *t / *out the same stage over [...,
// extent / w, w] (the output buffer declared with that shape in a copy of task:
// same memory, same values), in which the new last axis is the column; false
// otherwise. The caller checks that the result vectorizes.
bool split_row(const ir::Task& task, const ir::Stage& s, ir::Task* t, ir::Stage* out);

// When the last axis of s (a constant extent that `phases` divides) is read through floordiv
// and mod by `phases` (the output phases of a strided transposed convolution, interleaved:
// out[..., j * phases + r] = phase r's value at j), writes to *out one stage per phase r: s
// over [..., j] (extent / phases) with its value and its further stores' values those of
// the outputs j * phases + r, and returns true. The outputs are then written `phases` values
// at a time, interleaved; the caller checks that every phase vectorizes along j.
bool split_phases(const ir::Task& task, const ir::Stage& s, int64_t phases,
                  std::vector<ir::Stage>* out);

}  // namespace ember::codegen
