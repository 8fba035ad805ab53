// Layouts in the code generator (physical.h).
#include "physical.h"

#include <map>
#include <set>

#include "ember/ir/simplify.h"
#include "ember/support/error.h"

namespace ember::codegen {

using ir::Expr;
using ir::ExprKind;

namespace {

std::string buffer_text(const ir::Buffer& b) {
  return "'" + b.name + "' (" + dtype_name(b.dtype) + shape_str(b.shape) +
         b.layout.suffix(b.shape.size()) + ")";
}

// Every load of a non-plain buffer of `task` in e, read at its physical index; a load at
// exactly `at` (the logical index of a stage's physical axes) of a buffer with `out`'s shape
// and layout reads at `physical` (those axes) directly.
Expr physical_loads(const ir::Task& task, const Expr& e, const ir::Buffer* out = nullptr,
                    const std::vector<Expr>& at = {}, const std::vector<Expr>& physical = {}) {
  if (!e.defined()) return e;
  return ir::rewrite(e, [&](const Expr& x) -> Expr {
    if (x.kind() != ExprKind::Load) return {};
    const ir::Buffer& b = task.buffers.at(x->buffer);
    if (b.layout.is_plain()) return {};
    if (out && b.layout == out->layout && shape_equal(b.shape, out->shape) &&
        x->args.size() == at.size()) {
      bool same = true;
      for (size_t d = 0; d < at.size(); ++d) same = same && ir::equal(x->args[d], at[d]);
      if (same) return ir::load(x->buffer, x.dtype(), physical);
    }
    // A load of a buffer blocked as the output, at the output's channel (a pool's window): the
    // output's channel block and lane (a vector along the lanes), the other dimensions as the
    // load gives them.
    if (out && b.layout == out->layout && b.layout.kind == LayoutKind::Blocked &&
        b.shape.size() == at.size() && x->args.size() == at.size() && at.size() >= 3 &&
        ir::equal(x->args[1], at[1])) {
      std::vector<Expr> idx = {ir::simplify_index(x->args[0]), physical[1]};
      for (size_t d = 2; d < at.size(); ++d) idx.push_back(ir::simplify_index(x->args[d]));
      idx.push_back(physical.back());
      return ir::load(x->buffer, x.dtype(), std::move(idx));
    }
    // A load of a buffer blocked as the output at channel q * block + lane (whole blocks
    // away from the output's channel: a concatenation's later inputs): its block q, the
    // output's lane, a vector along the lanes.
    if (out && b.layout == out->layout && b.layout.kind == LayoutKind::Blocked &&
        x->args.size() == b.shape.size() && x->args.size() >= 3 && !physical.empty() &&
        physical.back().kind() == ExprKind::Var) {
      if (Expr q = ir::split_lane(x->args[1], physical.back()->name, b.layout.block); q.defined()) {
        std::vector<Expr> idx = {ir::simplify_index(x->args[0]), q};
        for (size_t d = 2; d < x->args.size(); ++d) idx.push_back(ir::simplify_index(x->args[d]));
        idx.push_back(physical.back());
        return ir::load(x->buffer, x.dtype(), std::move(idx));
      }
    }
    std::vector<Expr> idx = b.layout.physical_index(b.shape, x->args);
    for (Expr& i : idx) i = ir::simplify_index(i);
    return ir::load(x->buffer, x.dtype(), std::move(idx));
  });
}

// e with each comparison of a channel q * block + lane against a multiple k * block of the
// block (a concatenation's input ranges) made a comparison of the block q against k: the
// same for every lane, so the code generator picks a branch per vector.
Expr whole_block_conditions(const Expr& e, const std::string& lane, int64_t block) {
  if (!e.defined()) return e;
  return ir::rewrite(e, [&](const Expr& x) -> Expr {
    if (x.kind() != ExprKind::Binary) return {};
    const auto op = static_cast<ir::BinaryOp>(x->op);
    if (op != ir::BinaryOp::Lt && op != ir::BinaryOp::Ge) return {};
    const auto k = x->args[1].as_int();
    if (!k || *k % block != 0) return {};
    Expr q = ir::split_lane(x->args[0], lane, block);
    if (!q.defined()) return {};
    return ir::binary(op, q, Expr(*k / block));
  });
}

// A Compute stage that only copies a float32 buffer into another layout (a to_layout kernel:
// the value is the input loaded at the output's index) between plain and blocked or
// channels-last memory: the library routine that converts in register-transposed tiles
// (ember_rt/layout_convert.h), instead of a loop reading one side element by element.
bool conversion_call(const ir::Task& task, const ir::Stage& s, ir::Stage* call) {
  if (s.kind != ir::StageKind::Compute || !s.stores.empty() || !s.value.defined() ||
      s.value.kind() != ExprKind::Load)
    return false;
  const ir::Buffer& out = task.buffers.at(s.out);
  const ir::Buffer& in = task.buffers.at(s.value->buffer);
  const size_t rank = out.shape.size();
  if (out.dtype != DType::float32 || in.dtype != DType::float32 || rank < 3 || rank > 5 ||
      in.layout == out.layout || !(in.layout.is_plain() || out.layout.is_plain()) ||
      !shape_equal(in.shape, out.shape) || s.value->args.size() != rank)
    return false;
  for (size_t d = 0; d < rank; ++d)
    if (!ir::equal(s.value->args[d], s.axes[d])) return false;
  const Layout& laid = in.layout.is_plain() ? out.layout : in.layout;
  const bool to_plain = out.layout.is_plain();
  Expr spatial = Expr(1);
  for (size_t d = 2; d < rank; ++d) spatial = spatial * out.shape[d];
  ir::Stage c;
  c.kind = ir::StageKind::Call;
  c.out = s.out;
  c.call_inputs = {s.value->buffer};
  c.call_outputs = {s.out};
  c.params = {out.shape[0], out.shape[1], ir::simplify_index(spatial)};
  c.flops = Expr(0);
  if (laid.kind == LayoutKind::Blocked) {
    c.routine = to_plain ? "layout_blocked_to_plain" : "layout_plain_to_blocked";
    c.params.push_back(Expr(laid.block));
  } else {
    c.routine = to_plain ? "layout_channels_last_to_plain" : "layout_plain_to_channels_last";
  }
  *call = std::move(c);
  return true;
}

}  // namespace

ir::Task physical_task(const ir::Task& task) {
  bool any = false;
  for (const ir::Buffer& b : task.buffers) any = any || !b.layout.is_plain();
  if (!any) return task;
  ir::Task p = task;
  // Blocked Call outputs whose epilogue sees them per pixel: [N, CB, H * W, b] ([N, CB, L,
  // b] as it is for a conv1d's [N, C, L]).
  std::set<int> pixel_views;
  for (size_t si = 0; si < p.stages.size(); ++si) {
    ir::Stage& s = p.stages[si];
    auto check_plain = [&](int b, const char* what) {
      EMBER_CHECK(b < 0 || task.buffers.at(b).layout.is_plain(),
                  "kernel " << task.name << ": a " << what << " reads and writes plain buffers "
                            << "only, but " << buffer_text(task.buffers.at(b))
                            << " is not plain; convert it with to_layout(x, 'plain')");
    };
    if (s.kind == ir::StageKind::Matmul) {
      check_plain(s.out, "matrix product");
      check_plain(s.a, "matrix product");
      check_plain(s.b, "matrix product");
    } else if (s.kind == ir::StageKind::Call && !s.call_takes_layouts) {
      for (int b : s.call_inputs) check_plain(b, "library routine");
      for (int b : s.call_outputs) check_plain(b, "library routine");
    }
    const ir::Buffer& out = task.buffers.at(s.out);
    // A fused group's further stores are written at the output's index: they need its layout.
    for (const ir::Stage::Store& st : s.stores) {
      const ir::Buffer& b = task.buffers.at(st.buffer);
      EMBER_CHECK(b.layout == out.layout,
                  "kernel " << task.name << ": a stage writing " << buffer_text(out)
                            << " also stores " << buffer_text(b)
                            << ", which has another layout; a fused group's outputs share one");
    }
    if (s.kind == ir::StageKind::Call && s.call_takes_layouts && s.epilogue.defined() &&
        out.layout.kind == LayoutKind::Blocked &&
        (out.shape.size() == 3 || out.shape.size() == 4)) {
      // The routine calls the epilogue on each pixel of its blocked output [N, CB, H, W, b],
      // viewed [N, CB, H * W, b] (ember_rt/conv_blocked.h; [N, CB, L, b] is that view of
      // [N, C, L]): the stage's axes become that view's, (n, cb, pixel, lane), so that a
      // per-channel operand is read at cb * b + lane, a vector along the lanes.
      EMBER_CHECK(s.stores.empty(), "kernel " << task.name << ": a library routine writing the "
                                              << "blocked " << buffer_text(out)
                                              << " cannot also store its epilogue's intermediates");
      const int64_t b = out.layout.block;
      std::vector<Expr> paxes;
      for (size_t d = 0; d < 4; ++d)
        paxes.push_back(ir::var("__p" + std::to_string(si) + "_" + std::to_string(d)));
      std::vector<Expr> pidx = paxes;
      if (out.shape.size() == 4) {
        const Expr& w = out.shape[3];
        pidx = {paxes[0], paxes[1], ir::floordiv(paxes[2], w), ir::mod(paxes[2], w), paxes[3]};
      }
      const std::vector<Expr> logical = out.layout.logical_index(out.shape, pidx);
      std::map<std::string, Expr> sub;
      for (size_t d = 0; d < s.axes.size(); ++d) sub[s.axes[d]->name] = logical[d];
      // An operand laid out as the output (a residual) is read at the pixel's lanes directly.
      Expr value = physical_loads(task, ir::substitute(s.epilogue, sub), &out, logical, pidx);
      const auto channels = out.shape[1].as_int();
      if (!channels || *channels % b != 0)  // the padding lanes stay zero
        value = ir::select(ir::binary(ir::BinaryOp::Lt, logical[1], out.shape[1]), value,
                           ir::const_of(0, value.dtype()));
      s.axes = paxes;
      s.epilogue = value;
      pixel_views.insert(s.out);
      continue;
    }
    if (ir::Stage call; conversion_call(task, s, &call)) {
      s = std::move(call);
      continue;
    }
    const bool loops = s.kind == ir::StageKind::Compute || s.kind == ir::StageKind::Reduce;
    if (!loops || out.layout.is_plain()) {
      s.value = physical_loads(task, s.value);
      s.epilogue = physical_loads(task, s.epilogue);
      for (ir::Stage::Store& st : s.stores) st.value = physical_loads(task, st.value);
      continue;
    }
    // A Compute or Reduce stage writing a non-plain buffer: loop over its memory in storage
    // order (a reduction's window loads of a buffer blocked as the output read its lanes).
    const Shape phys = out.layout.physical_shape(out.shape);
    std::vector<Expr> paxes;
    for (size_t d = 0; d < phys.size(); ++d)
      paxes.push_back(ir::var("__p" + std::to_string(si) + "_" + std::to_string(d)));
    const std::vector<Expr> logical = out.layout.logical_index(out.shape, paxes);
    std::map<std::string, Expr> sub;
    for (size_t d = 0; d < s.axes.size(); ++d) sub[s.axes[d]->name] = logical[d];
    // Each value written (the output's and the further stores'), zero in the padding lanes.
    Expr in_channels;
    if (out.layout.kind == LayoutKind::Blocked) {
      const auto channels = out.shape[1].as_int();
      if (!channels || *channels % out.layout.block != 0)
        in_channels = ir::binary(ir::BinaryOp::Lt, logical[1], out.shape[1]);
    }
    auto aligned = [&](const Expr& e) {
      return out.layout.kind == LayoutKind::Blocked
                 ? whole_block_conditions(e, paxes.back()->name, out.layout.block)
                 : e;
    };
    auto written = [&](const Expr& e) {
      Expr v = physical_loads(task, aligned(ir::substitute(e, sub)), &out, logical, paxes);
      return in_channels.defined() ? ir::select(in_channels, v, ir::const_of(0, v.dtype())) : v;
    };
    if (s.kind == ir::StageKind::Reduce) {
      // The value reduced over the window; the padding lanes' zeros in what is stored.
      s.value = physical_loads(task, aligned(ir::substitute(s.value, sub)), &out, logical, paxes);
      if (s.epilogue.defined() || in_channels.defined())
        s.epilogue = written(s.epilogue.defined() ? s.epilogue : ir::acc(s.acc_dtype));
    } else {
      s.value = written(s.value);
    }
    for (ir::Stage::Store& st : s.stores) st.value = written(st.value);
    s.axes = paxes;
  }
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    ir::Buffer& b = p.buffers[i];
    b.shape = b.layout.physical_shape(b.shape);
    b.layout = Layout::plain();
    if (pixel_views.count(static_cast<int>(i)) && b.shape.size() == 5)
      b.shape = {b.shape[0], b.shape[1], b.shape[2] * b.shape[3], b.shape[4]};
  }
  return p;
}

}  // namespace ember::codegen
