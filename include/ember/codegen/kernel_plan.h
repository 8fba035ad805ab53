// A kernel plan: what the code generator decides for each stage of a task before it prints
// any code.
//
// plan_kernel() looks at a Task once and decides, per stage, the loop nest (flattened into
// one axis, or the last axis split into rows), how the work is split across threads, which
// axis runs in vectors of ember_rt::vf and with which tail, and how every load reads its
// buffer along that axis. generate_kernel() prints the plan; KernelPlan::str() describes it
// in words, and a graph built with dump_dir writes it beside the generated code.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/ir/task.h"

namespace ember::codegen {

// How a load reads its buffer along the vector axis.
enum class Access : uint8_t {
  Broadcast,   // one element for every lane: the offset does not use the axis
  Contiguous,  // consecutive elements
  Strided,     // elements `stride` apart (stride > 1, or negative)
  Gathered,    // an offset not affine in the axis: each lane its own (an index read from
               // data that depends on the axis, or the axis divided)
};
const char* access_name(Access a);

struct LoadPlan {
  ir::Expr load;  // the Load node
  Access access = Access::Broadcast;
  int64_t stride = 0;       // elements between neighbouring lanes, when affine
  bool data_index = false;  // an index is read from data (embedding rows): checked at run time
  bool guarded = false;     // under a lane range (padding): reads only the lanes in range
  bool widened = false;     // float16/bfloat16 widened to float32 as it is loaded
};

// Whether an expression is computed in vectors along `lane`, and how its loads read.
struct VectorPlan {
  std::string lane;        // the IR variable of the vector axis; empty when none was considered
  bool ok = false;         // the expression is computed in vectors of lanes
  std::string why_not;     // when not: the first reason
  int64_t max_stride = 0;  // when ok: the largest stride of its loads along the lane
  std::vector<LoadPlan> loads;  // every load of the expression, parents before children
};

// Decides whether e can be computed for a vector of lanes along `lane`: float32 arithmetic
// (float16/bfloat16 loads are widened; bool loads are lane masks), loads contiguous or
// constant along it, or with a larger stride when `strided` (float32 and bool). Selects on a lane
// range (is_lane_range) compute their branch on the lanes where it holds, with masked loads;
// selects whose condition is the same for every lane (is_whole_vector_select) compute the taken
// branch. The one place that says what the vector form of ExprEmitter can print.
VectorPlan plan_vector(const ir::Task& task, const ir::Expr& e, const std::string& lane,
                       bool strided = false);

// Whether cond is a conjunction of comparisons between integer expressions affine in `lane`
// that read no data (padding, windows, tril): in vector form, the range of lanes where it
// holds.
bool is_lane_range(const ir::Expr& cond, const std::string& lane);

// Whether select e (cond ? a : b) chooses one branch for a whole vector along `lane`: cond is
// a comparison of indices that does not involve the lane (a concatenation along an outer
// axis) and the other branch loads (else a lane range serves). Its vector form computes only
// the taken branch, so both branches may load.
bool is_whole_vector_select(const ir::Expr& e, const std::string& lane);

// The loop shape printed for a stage.
enum class Schedule : uint8_t {
  Single,         // a 0-d compute stage: one element
  Elementwise,    // rows in parallel, the last axis in blocks, in vectors or scalar
  ReduceOutputs,  // reduce in vectors along the output's last axis, one output per lane
  ReduceAxis,     // reduce in vectors along the innermost reduced axis
  ReduceScalar,   // one output at a time, scalar
  Matmul,         // ember_rt::gemm, with an epilogue over each finished row segment
  Call,           // a runtime routine (ember_rt::lib), which splits its own work; with an
                  // epilogue over each finished row segment when it takes one
};
const char* schedule_name(Schedule s);

// Whether a compute stage runs as one flat loop over all its elements.
enum class Flatten : uint8_t {
  No,        // some load does not read its buffer at the output's index
  UsesAxes,  // every load does, but the value uses an axis outside a load (tril's i <= j)
  Yes,       // one axis over every element
};

struct Loop {
  std::string var;  // IR variable
  ir::Expr extent;
  std::string role;  // "rows", "blocks, vector", "reduce", ...
};

// How a vector loop finishes the elements after its last whole vector.
enum class Tail : uint8_t { None, Masked, Scalar };

// The IR variable for the first output index of a row segment passed to an epilogue.
inline constexpr const char* kSegmentStart = "__n0";

// A Call stage's epilogue that its routine applies to its accumulators in registers
// (Stage::call_channel_affine; ember_rt::ChannelAffine): over the routine's blocked output,
// viewed [N, CB, pixels, b] (physical.h), the value is
//   v = min(max(fma(Acc, scale, shift) [+ residual], lo), hi), then 0 for channels >= channels
// with scale and shift each read per output channel c = cb * b + lane from a buffer, or a
// constant, the residual a buffer read at the output's element (a residual add), and the
// bounds constants that are not NaN (either may be absent).
struct ChannelAffinePlan {
  int scale = -1, shift = -1;  // buffers read at the channel, or -1: the constants below
  double scale_k = 1.0, shift_k = -0.0;
  int residual = -1;  // the buffer read at the output's element, or -1: none
  std::optional<double> lo, hi;
  int64_t channels = -1;  // -1: every lane is a channel
  std::string str(const ir::Task& task) const;
};

// The ChannelAffinePlan of a physical Call stage's epilogue, when it has that form.
std::optional<ChannelAffinePlan> match_channel_affine(const ir::Task& task, const ir::Stage& s);

struct StagePlan {
  int index = 0;  // in the task's stages
  Schedule schedule = Schedule::Elementwise;
  // The stage as printed and the task it belongs to: the task's, or copies rewritten by
  // flattening or row splitting (same memory, same values).
  std::shared_ptr<const ir::Task> task;
  ir::Stage stage;
  Flatten flatten = Flatten::No;
  int64_t row_split = 0;  // the row width when the flat last axis was split into rows
  int merged_axes = 0;    // how many times the last two axes were merged (merge_last_axes)
  // The last axis split into `phases` interleaved phases (row_split.h, split_phases): the
  // stage's last axis is then j (extent / phases), output j * phases + r (and each further
  // store's) takes phase_stages[r]'s value, and the stores interleave them; 0 otherwise.
  int64_t phases = 0;
  std::vector<ir::Stage> phase_stages;
  std::vector<Loop> loops;
  // Threads: the parallel tasks are `rows` (the product of the output's leading axes, or
  // every output for ReduceAxis/ReduceScalar) times the blocks of the last axis, which runs
  // whole up to `whole_up_to` elements, else in blocks of `block` (0: not blocked).
  int64_t whole_up_to = 0, block = 0;
  double cost = 0;    // estimated simple operations per evaluation of the value (expr_cost)
  VectorPlan vector;  // the vector axis and the loads along it
  int unroll = 1;     // vectors in flight (independent accumulators)
  Tail tail = Tail::None;
  bool tail_known_empty = false;  // the vector axis's extent is a multiple of every width
  // Matmul and Call: the epilogue as a value over the output (Matmul: Acc read back from the
  // output; Call: from epilogue_source); undefined when there is none.
  ir::Expr value;
  // Matmul and Call with an epilogue: what `value` reads in Acc's place (the output's or
  // epilogue_source's load at the stage's axes), so the emitter still treats it as Acc.
  ir::Expr acc;
  // Call with an epilogue: the buffer (of `task`, not of the original task) that stands for
  // the row segment the routine passes to the epilogue, indexed by the lane minus the
  // segment's start (the variable kSegmentStart); -1 otherwise.
  int epilogue_source = -1;
  // Call whose routine applies an epilogue in registers (Stage::call_channel_affine), when
  // the epilogue has that form: passed instead of the per-segment epilogue.
  std::optional<ChannelAffinePlan> affine;
};

// The plan of one task's kernel.
struct KernelPlan {
  std::string task_name;
  // One line per non-plain buffer: its logical type and the memory it was planned over
  // ("b1 (y): float32[1, 17, 4, 4]{nChw16c}, memory [1, 2, 4, 4, 16]"); the stages below
  // see that memory as a plain buffer.
  std::vector<std::string> layouts;
  std::vector<StagePlan> stages;
  // A readable description, one block per stage.
  std::string str() const;
};

KernelPlan plan_kernel(const ir::Task& task);

}  // namespace ember::codegen
