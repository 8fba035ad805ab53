// The kernel plan: every decision of the code generator, made before any code is printed.
#include "ember/codegen/kernel_plan.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "ember/ir/simplify.h"
#include "expr_emitter.h"
#include "kernel_writer.h"
#include "physical.h"
#include "row_split.h"
#include "task_loads.h"

namespace ember::codegen {

using ir::BinaryOp;
using ir::Expr;
using ir::ExprKind;
using ir::ReduceOp;
using ir::Stage;
using ir::Task;

const char* access_name(Access a) {
  switch (a) {
    case Access::Broadcast: return "broadcast";
    case Access::Contiguous: return "contiguous";
    case Access::Strided: return "strided";
    case Access::Gathered: return "gathered";
  }
  return "?";
}

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::Single: return "single element";
    case Schedule::Elementwise: return "elementwise";
    case Schedule::ReduceOutputs: return "reduce, vectors along the output";
    case Schedule::ReduceAxis: return "reduce, vectors along the reduced axis";
    case Schedule::ReduceScalar: return "reduce, scalar";
    case Schedule::Matmul: return "matmul (ember_rt::gemm)";
    case Schedule::Call: return "library call (ember_rt::lib)";
  }
  return "?";
}

namespace {

// The largest constant known to divide e.
int64_t known_factor(const Expr& e) {
  if (auto v = e.as_int()) return *v == 0 ? 0 : std::abs(*v);
  if (e.kind() != ExprKind::Binary) return 1;
  int64_t a = known_factor(e->args[0]), b = known_factor(e->args[1]);
  switch (static_cast<BinaryOp>(e->op)) {
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Add:
    case BinaryOp::Sub: return std::gcd(a, b);
    default: return 1;
  }
}

// The widest vector (AVX-512's 16 lanes): an extent it divides leaves no tail on any ISA.
constexpr int64_t kWidestVector = 16;

// True when every load reads its buffer at exactly the stage's axes and every such buffer
// has the output's shape: the stage can then be one flat loop over all elements.
bool loads_at_axes(const Task& task, const Stage& s) {
  const Shape& out = task.buffers[s.out].shape;
  if (out.size() < 2) return false;
  bool ok = true;
  auto check = [&](const Expr& x) {
    if (x.kind() != ExprKind::Load) return;
    if (!shape_equal(task.buffers[x->buffer].shape, out) || x->args.size() != s.axes.size()) {
      ok = false;
      return;
    }
    for (size_t d = 0; d < s.axes.size(); ++d) ok &= ir::equal(x->args[d], s.axes[d]);
  };
  ir::visit(s.value, check);
  for (const Stage::Store& st : s.stores) ir::visit(st.value, check);
  return ok;
}

// Why a vector `value` cannot be stored into a buffer of `out` ("" when it can): float32
// vectors go into float32 or low-precision buffers, lane masks into bool ones.
// `buffer_of` names the buffer in the reason ("the output"), `value_of` the value.
std::string vector_store_problem(DType out, DType value, const std::string& buffer_of,
                                 const std::string& value_of) {
  const bool mask = out == DType::boolean;
  if (!(out == DType::float32 || is_low_precision(out) || mask))
    return buffer_of + " is " + std::string(dtype_name(out));
  const DType want = mask ? DType::boolean : DType::float32;
  return value == want ? "" : value_of + " is " + std::string(dtype_name(value));
}

// Adds to v (planned along v.lane) what the stage's further stores need: each value
// computed in vectors, float32 stored into a float32 or low-precision buffer, a lane mask
// into a bool one.
void plan_stores_vector(const Task& task, const Stage& s, bool strided, VectorPlan& v) {
  if (v.lane.empty()) return;
  for (const Stage::Store& st : s.stores) {
    const DType t = task.buffers[st.buffer].dtype;
    const Expr e = strip_output_cast(st.value, t);
    VectorPlan sv = plan_vector(task, e, v.lane, strided);
    v.loads.insert(v.loads.end(), sv.loads.begin(), sv.loads.end());
    std::string why = !sv.ok ? sv.why_not : vector_store_problem(t, e.dtype(), "it", "its value");
    if (why.empty()) {
      v.max_stride = std::max(v.max_stride, sv.max_stride);
    } else {
      if (v.ok) v.why_not = "the store of b" + std::to_string(st.buffer) + ": " + why;
      v.ok = false;
    }
  }
}

// The estimated operations per element of a stage's value and its further stores.
double stage_cost(const Expr& value, const Stage& s) {
  double c = expr_cost(value);
  for (const Stage::Store& st : s.stores) c += expr_cost(st.value);
  return c;
}

// Whether a Compute stage's value can be computed in vectors along its last axis.
VectorPlan compute_vector(const Task& task, const Stage& s, bool strided) {
  VectorPlan v;
  if (task.buffers[s.out].shape.empty()) {
    v.why_not = "a 0-d output";
    return v;
  }
  DType out_t = task.buffers[s.out].dtype;
  Expr stripped = strip_output_cast(s.value, out_t);
  v = plan_vector(task, stripped, s.axes.back()->name, strided);
  const std::string why = vector_store_problem(out_t, stripped.dtype(), "the output", "the value");
  const bool storable_type =
      out_t == DType::float32 || is_low_precision(out_t) || out_t == DType::boolean;
  if (!why.empty() && (v.ok || !storable_type)) {  // the output's type is the first reason
    v.ok = false;
    v.why_not = why;
  }
  plan_stores_vector(task, s, strided, v);
  return v;
}

void plan_compute(const std::shared_ptr<const Task>& task, StagePlan& p) {
  const Stage& s_in = task->stages[p.index];
  p.task = task;
  p.stage = s_in;
  if (loads_at_axes(*task, s_in)) {
    // Same computation over one flat axis: loads and the store index it directly.
    auto flat_task = std::make_shared<Task>(*task);
    Expr f = ir::var("__flat" + std::to_string(p.index));
    Shape numel = {shape_numel_expr(task->buffers[s_in.out].shape)};
    Stage flat = s_in;
    flat.axes = {f};
    auto flatten = [&](const Expr& e) {
      return ir::rewrite(e, [&](const Expr& x) -> Expr {
        if (x.kind() != ExprKind::Load) return {};
        flat_task->buffers[x->buffer].shape = numel;
        return ir::load(x->buffer, x.dtype(), {f});
      });
    };
    flat.value = flatten(s_in.value);
    for (Stage::Store& st : flat.stores) {
      st.value = flatten(st.value);
      flat_task->buffers[st.buffer].shape = numel;
    }
    flat_task->buffers[s_in.out].shape = numel;
    // A value that uses an axis outside a load (tril's i <= j) cannot be flattened.
    bool uses_axes = false;
    for (const Expr& ax : s_in.axes) {
      uses_axes |= ir::uses_var(flat.value, ax->name);
      for (const Stage::Store& st : flat.stores) uses_axes |= ir::uses_var(st.value, ax->name);
    }
    p.flatten = uses_axes ? Flatten::UsesAxes : Flatten::Yes;
    if (!uses_axes) {
      p.task = flat_task;
      p.stage = flat;
    }
  }
  if (p.flatten != Flatten::Yes) {
    // Short rows that are one run of memory in every buffer become long ones.
    auto merged_task = std::make_shared<Task>();
    Stage merged;
    p.merged_axes = merge_last_axes(*p.task, p.stage, merged_task.get(), &merged);
    if (p.merged_axes > 0) {
      p.task = merged_task;
      p.stage = merged;
    }
  }
  VectorPlan vec = compute_vector(*p.task, p.stage, false);
  if (!vec.ok) {
    // A flat (row, column) index read through floordiv and mod (im2col) vectorizes along the
    // column once the axis is split into rows, unless the rows are too short to fill a
    // vector (a nearest 2x upsampling reads x[i // 2]: rows of 2, mostly masked lanes).
    constexpr int64_t kMinSplitRow = 8;
    auto split_task = std::make_shared<Task>();
    Stage split;
    if (split_row(*p.task, p.stage, split_task.get(), &split) &&
        split_task->buffers[split.out].shape.back().as_int().value_or(0) >= kMinSplitRow) {
      VectorPlan split_vec = compute_vector(*split_task, split, true);
      if (split_vec.ok) {
        p.row_split = split_task->buffers[split.out].shape.back().as_int().value_or(0);
        p.task = split_task;
        p.stage = split;
        vec = split_vec;
      }
    }
  }
  if (!vec.ok) {
    // Outputs chosen by lane % 2 from loads at lane // 2 (a stride-2 transposed
    // convolution's two phases, interleaved): one vector per phase along lane // 2, stored
    // interleaved (float32 and bool buffers).
    constexpr int64_t kPhases = 2;
    std::vector<Stage> phases;
    auto interleavable = [&](int b) {
      const DType t = p.task->buffers[b].dtype;
      return t == DType::float32 || t == DType::boolean;
    };
    bool ok = interleavable(p.stage.out);
    for (const Stage::Store& st : p.stage.stores) ok &= interleavable(st.buffer);
    if (ok && split_phases(*p.task, p.stage, kPhases, &phases)) {
      VectorPlan all;
      for (const Stage& phase : phases) {
        const VectorPlan one = compute_vector(*p.task, phase, true);
        if (!one.ok) {
          all = one;
          break;
        }
        all.ok = true;
        all.lane = one.lane;
        all.loads.insert(all.loads.end(), one.loads.begin(), one.loads.end());
        all.max_stride = std::max(all.max_stride, one.max_stride);
      }
      if (all.ok) {
        p.phases = kPhases;
        p.phase_stages = phases;
        p.stage = phases[0];
        vec = all;
      }
    }
  }
  p.cost = stage_cost(p.stage.value, p.stage);
  Shape shape = p.task->buffers[p.stage.out].shape;
  if (p.phases) shape.back() = Expr(*shape.back().as_int() / p.phases);
  if (shape.empty()) {
    p.schedule = Schedule::Single;
    p.vector = vec;
    return;
  }
  p.schedule = Schedule::Elementwise;
  p.vector = vec;
  p.whole_up_to = 16384;
  p.block = 8192;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool last = d + 1 == shape.size();
    p.loops.push_back({p.stage.axes[d]->name, shape[d],
                       !last    ? "rows"
                       : vec.ok ? "blocks, vector"
                                : "blocks, scalar"});
  }
  if (vec.ok) {
    p.tail = Tail::Masked;
    p.tail_known_empty = known_factor(shape.back()) % kWidestVector == 0;
  }
}

// Whether a reduction can run in vectors along the output's last axis (each lane its own
// output, the reduction loops scalar around them): float sum / max / min whose value and
// epilogue are vectorizable along that axis, loads strided along it allowed.
VectorPlan reduce_outputs_vector(const Task& task, const Stage& s) {
  VectorPlan v;
  const DType out_t = task.buffers[s.out].dtype;
  if (s.axes.empty()) {
    v.why_not = "a 0-d output";
    return v;
  }
  if (s.raxes.empty()) {
    v.why_not = "nothing to reduce";
    return v;
  }
  v = plan_vector(task, s.value, s.axes.back()->name, true);
  auto fail = [&](const std::string& why) {
    if (v.ok) v.why_not = why;
    v.ok = false;
  };
  if (s.acc_dtype != DType::float32)
    fail("an accumulator of " + std::string(dtype_name(s.acc_dtype)));
  if (s.value.dtype() != DType::float32)
    fail("the value is " + std::string(dtype_name(s.value.dtype())));
  if (!(out_t == DType::float32 || is_low_precision(out_t)))
    fail("the output is " + std::string(dtype_name(out_t)));
  if (!(s.reduce_op == ReduceOp::Sum || s.reduce_op == ReduceOp::Max ||
        s.reduce_op == ReduceOp::Min))
    fail(std::string(ir::reduce_op_name(s.reduce_op)) + " is not sum, max or min");
  if (!v.ok) return v;
  Expr out = s.epilogue.defined() ? strip_output_cast(s.epilogue, out_t) : ir::acc(s.acc_dtype);
  VectorPlan epi = plan_vector(task, out, s.axes.back()->name);
  if (out.dtype() != DType::float32 || !epi.ok)
    fail("the epilogue: " +
         (epi.ok ? "its value is " + std::string(dtype_name(out.dtype())) : epi.why_not));
  plan_stores_vector(task, s, false, epi);
  if (!epi.ok) fail("the epilogue: " + epi.why_not);
  return v;
}

// Whether a reduction can run in vectors along its innermost reduced axis.
VectorPlan reduce_axis_vector(const Task& task, const Stage& s) {
  VectorPlan v;
  if (s.raxes.empty()) {
    v.why_not = "nothing to reduce";
    return v;
  }
  // Loads every other element along the reduction (a stride-2 depthwise convolution's
  // weight gradient reads its input at 2 * ow + kw) are two vector loads and a shuffle; wider
  // strides would gather element by element.
  constexpr int64_t kMaxAxisStride = 2;
  v = plan_vector(task, s.value, s.raxes.back()->name, /*strided=*/true);
  auto fail = [&](const std::string& why) {
    if (v.ok) v.why_not = why;
    v.ok = false;
  };
  if (v.ok && v.max_stride > kMaxAxisStride)
    fail("a load with stride " + std::to_string(v.max_stride) + " along " + v.lane);
  if (s.acc_dtype != DType::float32)
    fail("an accumulator of " + std::string(dtype_name(s.acc_dtype)));
  if (s.value.dtype() != DType::float32)
    fail("the value is " + std::string(dtype_name(s.value.dtype())));
  return v;
}

void plan_reduce(const std::shared_ptr<const Task>& task, StagePlan& p) {
  const Stage& s = task->stages[p.index];
  p.task = task;
  p.stage = s;
  p.cost = expr_cost(s.value);  // per element reduced; the epilogue and stores run once
  const Shape& shape = task->buffers[s.out].shape;
  VectorPlan outputs = reduce_outputs_vector(*task, s);
  VectorPlan axis = reduce_axis_vector(*task, s);
  bool use_outputs = false;
  if (outputs.ok) {
    // Both work: vectors along the reduction pay off only when it is long; a window of a few
    // elements (a convolution's or pooling's kernel row) is better spread over outputs, unless
    // those are few or far apart.
    auto rlast = s.rextents.back().as_int();
    auto olast = shape.back().as_int();
    // A reduced axis shorter than the narrowest vector (8) never fills one: along it, every
    // element would be the scalar tail (a pool's window row read through a conversion).
    use_outputs = !axis.ok || (rlast && *rlast < 8) ||
                  (rlast && *rlast < 16 && outputs.max_stride <= 2 && (!olast || *olast >= 4));
  }
  const bool sum_max_min =
      s.reduce_op == ReduceOp::Sum || s.reduce_op == ReduceOp::Max || s.reduce_op == ReduceOp::Min;
  if (axis.ok && !sum_max_min) {
    axis.ok = false;
    axis.why_not = std::string(ir::reduce_op_name(s.reduce_op)) + " is not sum, max or min";
  }
  if (use_outputs) {
    p.schedule = Schedule::ReduceOutputs;
    p.vector = outputs;
    p.whole_up_to = 1024;
    p.block = 256;
    p.unroll = 4;
    p.tail = Tail::Masked;
    p.tail_known_empty = known_factor(shape.back()) % kWidestVector == 0;
  } else if (axis.ok) {
    p.schedule = Schedule::ReduceAxis;
    p.vector = axis;
    p.unroll = 4;
    p.tail = Tail::Scalar;
    p.tail_known_empty = known_factor(s.rextents.back()) % kWidestVector == 0;
  } else {
    p.schedule = Schedule::ReduceScalar;
    // What stood in the way of each vector form.
    p.vector = axis.lane.empty() ? outputs : axis;
    if (!outputs.lane.empty() && !axis.lane.empty())
      p.vector.why_not = "along " + outputs.lane + ": " + outputs.why_not + "; along " + axis.lane +
                         ": " + axis.why_not;
  }
  for (size_t d = 0; d < s.axes.size(); ++d) {
    bool last = d + 1 == s.axes.size();
    std::string role = use_outputs ? (last ? "blocks, vector" : "rows") : "outputs";
    p.loops.push_back({s.axes[d]->name, shape[d], role});
  }
  for (size_t r = 0; r < s.raxes.size(); ++r) {
    bool last = r + 1 == s.raxes.size();
    p.loops.push_back({s.raxes[r]->name, s.rextents[r],
                       last && p.schedule == Schedule::ReduceAxis ? "reduce, vector" : "reduce"});
  }
}

// A Matmul or Call stage's epilogue, called on each finished row segment
// [n0, n0 + len) of the output's last axis: the value with Acc read from `acc` (Acc itself:
// the output, rewritten in place), vectorized along the last axis where it can be.
void plan_row_epilogue(const Task& task, StagePlan& p, const Expr& acc) {
  Stage& s = p.stage;
  if (!s.epilogue.defined()) return;
  auto read_acc = [&](const Expr& e) {
    return ir::rewrite(e, [&](const Expr& x) -> Expr {
      if (x.kind() == ExprKind::Acc) return acc;
      return {};
    });
  };
  p.value = read_acc(s.epilogue);
  p.acc = acc;
  for (Stage::Store& st : s.stores) st.value = read_acc(st.value);
  p.cost = stage_cost(p.value, s);
  p.vector = plan_vector(task, p.value, s.axes.back()->name);
  if (p.vector.ok && p.value.dtype() != DType::float32) {
    p.vector.ok = false;
    p.vector.why_not = "the epilogue is " + std::string(dtype_name(p.value.dtype()));
  }
  plan_stores_vector(task, s, false, p.vector);
  if (p.vector.ok) p.tail = Tail::Masked;
}

void plan_matmul(const std::shared_ptr<const Task>& task, StagePlan& p) {
  const Stage& s = task->stages[p.index];
  p.task = task;
  p.stage = s;
  p.schedule = Schedule::Matmul;
  const Shape& shape = task->buffers[s.out].shape;
  for (size_t d = 0; d < s.axes.size(); ++d) {
    bool last = d + 1 == s.axes.size();
    p.loops.push_back({s.axes[d]->name, shape[d],
                       d + 2 < s.axes.size() ? "batch"
                       : last                ? "gemm n"
                                             : "gemm m"});
  }
  p.loops.push_back({"k", ir::matmul_depth(*task, s), "gemm k"});
  // The GEMM's epilogue rewrites C in place.
  plan_row_epilogue(*task, p, ir::load(s.out, DType::float32, s.axes));
}

// A library call: the routine reads and writes whole buffers and splits its own work. A
// routine that takes an epilogue (the depthwise convolution) computes each row segment of
// its output into memory of its own and calls the epilogue on it, which stores the final
// values into the output: Acc is read from a buffer that stands for the segment the routine
// passes (`row`, element i holding the output at n0 + i), added to a copy of the task.
void plan_call(const std::shared_ptr<const Task>& task, StagePlan& p) {
  p.task = task;
  p.stage = task->stages[p.index];
  p.schedule = Schedule::Call;
  p.vector.why_not = "a library routine";
  if (!p.stage.epilogue.defined()) return;
  p.affine = match_channel_affine(*task, p.stage);
  auto copy = std::make_shared<Task>(*task);
  const Shape& out = task->buffers[p.stage.out].shape;
  p.epilogue_source =
      copy->add_buffer("segment", DType::float32, {out.back()}, ir::BufferRole::Scratch);
  const Expr lane = p.stage.axes.back();
  plan_row_epilogue(*copy, p,
                    ir::load(p.epilogue_source, DType::float32, {lane - ir::var(kSegmentStart)}));
  p.task = copy;
}

}  // namespace

KernelPlan plan_kernel(const Task& logical) {
  KernelPlan plan;
  plan.task_name = logical.name;
  // Planned over the buffers' memory as it lies (physical.h): plain buffers only.
  auto shared = std::make_shared<const Task>(physical_task(logical));
  const Task& task = *shared;
  for (size_t b = 0; b < logical.buffers.size(); ++b) {
    const ir::Buffer& buf = logical.buffers[b];
    if (buf.layout.is_plain()) continue;
    plan.layouts.push_back("b" + std::to_string(b) + " (" + buf.name +
                           "): " + dtype_name(buf.dtype) + shape_str(buf.shape) +
                           buf.layout.suffix(buf.shape.size()) + ", memory " +
                           shape_str(task.buffers[b].shape));
  }
  for (size_t i = 0; i < task.stages.size(); ++i) {
    StagePlan p;
    p.index = static_cast<int>(i);
    switch (task.stages[i].kind) {
      case ir::StageKind::Compute: plan_compute(shared, p); break;
      case ir::StageKind::Reduce: plan_reduce(shared, p); break;
      case ir::StageKind::Matmul: plan_matmul(shared, p); break;
      case ir::StageKind::Call: plan_call(shared, p); break;
    }
    plan.stages.push_back(std::move(p));
  }
  return plan;
}

std::string KernelPlan::str() const {
  std::ostringstream os;
  os << "kernel plan of " << task_name << "\n";
  for (const std::string& l : layouts) os << "layout " << l << "\n";
  for (const StagePlan& p : stages) {
    const Task& t = *p.task;
    const ir::Buffer& out = t.buffers[p.stage.out];
    os << "stage " << p.index << ": b" << p.stage.out << " (" << out.name << ") "
       << dtype_name(out.dtype)
       << shape_str(p.stage.kind == ir::StageKind::Compute ? p.task->buffers[p.stage.out].shape
                                                           : out.shape)
       << ", " << schedule_name(p.schedule) << "\n";
    for (const Stage::Store& st : p.stage.stores)
      os << "  also stores: b" << st.buffer << " (" << t.buffers[st.buffer].name << ") "
         << dtype_name(t.buffers[st.buffer].dtype) << " at the same index\n";
    if (p.stage.kind == ir::StageKind::Compute) {
      os << "  flattened: "
         << (p.flatten == Flatten::Yes ? "yes, one axis over every element"
             : p.flatten == Flatten::UsesAxes
                 ? "no, the value uses an axis outside its loads"
                 : "no, not every load reads its buffer at the output's index")
         << "\n";
      if (p.merged_axes)
        os << "  merged: the last " << p.merged_axes + 1
           << " axes into one (one run of memory in every buffer read at them)\n";
      if (p.row_split)
        os << "  row split: the last axis as rows of " << p.row_split
           << " (its index was divided by " << p.row_split << ")\n";
      if (p.phases)
        os << "  phases: the last axis as " << p.phases
           << " interleaved phases (its index was divided by " << p.phases
           << "), a vector of each stored interleaved\n";
    }
    if (!p.loops.empty()) {
      os << "  loops:";
      for (const Loop& l : p.loops)
        os << " " << l.var << " < " << ir::to_string(l.extent) << " (" << l.role << ");";
      os << "\n";
    }
    os << "  threads: ";
    switch (p.schedule) {
      case Schedule::Single: os << "none (one element)"; break;
      case Schedule::Elementwise:
      case Schedule::ReduceOutputs:
        os << "parallel_for over rows x blocks of the last axis (whole up to " << p.whole_up_to
           << " elements, else blocks of " << p.block << ")";
        break;
      case Schedule::ReduceAxis:
      case Schedule::ReduceScalar: os << "parallel_for over the outputs"; break;
      case Schedule::Matmul: os << "ember_rt::gemm's blocks"; break;
      case Schedule::Call: os << "ember_rt::lib::" << p.stage.routine << "'s rows"; break;
    }
    if (p.schedule == Schedule::Call && !p.value.defined()) {
      os << "\n";
      continue;
    }
    if (p.schedule == Schedule::Matmul && !p.value.defined()) {
      os << "\n  epilogue: none\n";
      continue;
    }
    os << "; cost " << p.cost << " operations per value\n";
    if (p.affine) {
      os << "  epilogue: in the routine's registers, " << p.affine->str(*p.task) << "\n";
      continue;
    }
    if (p.vector.ok) {
      os << "  vector: " << p.vector.lane << ", ember_rt::vf::width lanes";
      if (p.unroll > 1) os << ", " << p.unroll << " vectors in flight";
      os << "; tail: "
         << (p.tail_known_empty       ? "none (the extent is a multiple of every width)"
             : p.tail == Tail::Scalar ? "a scalar loop"
                                      : "a masked partial vector")
         << "\n";
    } else {
      os << "  vector: none (" << p.vector.why_not << ")\n";
    }
    if (!p.vector.lane.empty()) {
      for (const LoadPlan& l : p.vector.loads) {
        os << "  load " << load_text(t, l.load) << ": " << access_name(l.access);
        if (l.access == Access::Strided) os << " (stride " << l.stride << ")";
        os << " along " << p.vector.lane;
        if (l.data_index) os << ", index read from data";
        if (l.guarded) os << ", masked to the lane range";
        if (l.widened) os << ", widened to float32";
        os << "\n";
      }
    }
  }
  return os.str();
}

}  // namespace ember::codegen
