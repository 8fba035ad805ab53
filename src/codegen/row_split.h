// Reshaping a stage's axes so that it vectorizes: its last axis split into (row, column), the
// column vectorized, or into interleaved phases, vectorized along the row; its last axes
// merged into one, so that short rows become long ones.
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

// Merges the last two axes of s into one, as often as they can be (returns how many times,
// 0 when they cannot): where every load reads its buffer at those two axes as its own last
// two dimensions, the last of the stage's extent (or reversed in both, flip's
// [E1 - 1 - i, E2 - 1 - j] of constant extents), or at neither, and every buffer so read
// only so; the value uses them nowhere else. Such a pair is one run of memory in every
// buffer, so the stage over [..., E1 * E2] (the buffers declared with their two dimensions
// merged in a copy of task: same memory, same values) computes the same: a permute of
// [O, C, 3, 3] to [C, O, 3, 3] copies rows of 9, not of 3, and a bias add on [N, C, 7, 7]
// rows of 49, not of 7.
int merge_last_axes(const ir::Task& task, const ir::Stage& s, ir::Task* t, ir::Stage* out);

}  // namespace ember::codegen
