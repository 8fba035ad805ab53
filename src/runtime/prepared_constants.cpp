// Constants prepared for the kernels that read them (ExecPlan::prepared): GEMM packing
// through the kernel module's own function, unpacking (the layout is ember_rt/gemm_prepared.h's)
// and preparing again for kernels compiled for another ISA; the Winograd filter transform
// (ember_rt/winograd_filter.h) and the blocked convolution's weight order
// (ember_rt/conv_blocked.h) on the host.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>

#include "ember/runtime/compiled_graph.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/error.h"
#include "ember_rt/conv_blocked_filter.h"
#include "ember_rt/gemm_prepared.h"
#include "ember_rt/winograd_filter.h"

namespace ember {

namespace {

// Element strides of the source: (batch, k, n).
void source_strides(const PreparedConstant& pc, int64_t* sb, int64_t* sk, int64_t* sn) {
  *sb = pc.K * pc.N;
  *sk = pc.transposed ? 1 : pc.N;
  *sn = pc.transposed ? pc.K : 1;
}

// u [36, O, C] from w [O, C, 3, 3], split over ember's threads.
Tensor winograd_filter(const Tensor& w) {
  const Shape& s = w.shape();
  auto dim = [&](size_t d) { return s.size() == 4 ? s[d].as_int().value_or(-1) : -1; };
  EMBER_CHECK(
      w.dtype() == DType::float32 && dim(0) >= 0 && dim(1) >= 0 && dim(2) == 3 && dim(3) == 3,
      "a Winograd filter's source must be a float32 [O, C, 3, 3] weight, got " << w.type().str());
  const int64_t O = dim(0), C = dim(1);
  Tensor u = Tensor::empty({36, O, C}, DType::float32);
  struct Job {
    const float* w;
    float* u;
    int64_t O, C, per;
  } job{static_cast<const float*>(w.data()), static_cast<float*>(u.data()), O, C, 0};
  // Chunks of whole pairs; small filters on the calling thread.
  constexpr int64_t kPairsPerChunk = 2048;
  const int64_t pairs = O * C, chunks = (pairs + kPairsPerChunk - 1) / kPairsPerChunk;
  job.per = (pairs + std::max<int64_t>(chunks, 1) - 1) / std::max<int64_t>(chunks, 1);
  auto run = [](void* closure, int64_t begin, int64_t end) {
    const Job& j = *static_cast<const Job*>(closure);
    const int64_t pairs = j.O * j.C;
    ember_rt::winograd_f43_filter_pairs(j.w, j.u, j.O, j.C, std::min(begin * j.per, pairs),
                                        std::min(end * j.per, pairs));
  };
  if (chunks <= 1) {
    run(&job, 0, 1);
  } else {
    default_pool().parallel_run(chunks, run, &job);
  }
  return u;
}

// A convolution weight's dimensions [O, C, KH, KW]: a conv1d weight [O, C, K] is one of KH =
// 1; -1 where a dimension is unknown or the rank is neither.
std::array<int64_t, 4> filter_dims(const Shape& s) {
  std::array<int64_t, 4> d = {-1, -1, -1, -1};
  if (s.size() != 3 && s.size() != 4) return d;
  d[0] = s[0].as_int().value_or(-1);
  d[1] = s[1].as_int().value_or(-1);
  d[2] = s.size() == 4 ? s[2].as_int().value_or(-1) : 1;
  d[3] = s.back().as_int().value_or(-1);
  return d;
}

// wp [OB, CB, KH, KW, b_in, b_out] from w [O, C, KH, KW] (or [O, C, K]), zero past O and C: the
// order of ember_rt::lib::conv_blocked_prepare, for the block b the kernels were compiled with.
Tensor conv_blocked_filter(const Tensor& w, int64_t b) {
  const auto [O, C, KH, KW] = filter_dims(w.shape());
  EMBER_CHECK(w.dtype() == DType::float32 && O >= 1 && C >= 1 && KH >= 1 && KW >= 1 && b >= 1,
              "a blocked convolution filter's source must be a float32 [O, C, KH, KW] or "
              "[O, C, K] weight (and its block >= 1), got "
                  << w.type().str() << " and block " << b);
  const int64_t OB = (O + b - 1) / b;
  Tensor out = Tensor::empty({OB, (C + b - 1) / b, KH, KW, b, b}, DType::float32);
  struct Job {
    const float* w;
    float* dst;
    int64_t O, C, KH, KW, b;
  } job{static_cast<const float*>(w.data()), static_cast<float*>(out.data()), O, C, KH, KW, b};
  // One output-channel block per task (a 2048 x 512 x 1 x 1 filter is 128 blocks of 8K
  // floats); a small filter on the calling thread. ResNet-50's filters, 98 MB, at load.
  auto run = [](void* closure, int64_t begin, int64_t end) {
    const Job& j = *static_cast<const Job*>(closure);
    ember_rt::conv_blocked_reorder(j.w, j.O, j.C, j.KH, j.KW, j.b, j.dst, begin, end);
  };
  if (O * C * KH * KW < (int64_t{1} << 16) || OB <= 1) {
    run(&job, 0, OB);
  } else {
    default_pool().parallel_run(OB, run, &job);
  }
  return out;
}

Tensor pack_gemm_panels(void* prepare, const Tensor& source, PreparedConstant* pc) {
  EMBER_ASSERT(prepare != nullptr, "prepared constants without the module's packing function");
  EMBER_ASSERT(source.dtype() == DType::float32 && source.numel() == pc->batches * pc->K * pc->N,
               "a prepared constant's source is " << source.type().str());
  EMBER_ASSERT(pc->tuning.size() == 5, "a prepared constant's tuning has 5 entries");
  auto fn = reinterpret_cast<ember_rt::PrepareGemmBFn>(prepare);
  int64_t sb, sk, sn, layout[2] = {0, 0};
  source_strides(*pc, &sb, &sk, &sn);
  const auto* src = static_cast<const float*>(source.data());
  const int64_t per =
      fn(src, pc->batches, sb, sk, sn, pc->K, pc->N, pc->tuning.data(), nullptr, layout);
  Tensor out = Tensor::empty({pc->batches * per}, DType::float32);
  fn(src, pc->batches, sb, sk, sn, pc->K, pc->N, pc->tuning.data(), static_cast<float*>(out.data()),
     layout);
  pc->kc = layout[0];
  pc->nr = layout[1];
  return out;
}

}  // namespace

Tensor prepare_constant(void* prepare, const Tensor& source, PreparedConstant* pc) {
  switch (pc->kind) {
    case Preparation::GemmPanels: return pack_gemm_panels(prepare, source, pc);
    case Preparation::WinogradFilter: return winograd_filter(source);
    case Preparation::ConvBlockedFilter: return conv_blocked_filter(source, pc->block);
  }
  EMBER_THROW("unknown preparation " << static_cast<int64_t>(pc->kind));
}

bool preparation_reversible(Preparation kind) {
  return kind == Preparation::GemmPanels || kind == Preparation::ConvBlockedFilter;
}

bool conv_blocked_filter_fits(const TensorType& weight, const TensorType& blocks, int64_t b) {
  const auto [O, C, KH, KW] = filter_dims(weight.shape);
  if (weight.dtype != DType::float32 || blocks.dtype != DType::float32 || b < 1 || O < 0 || C < 0 ||
      KH < 0 || KW < 0 || blocks.shape.size() != 6 || !shape_is_concrete(blocks.shape))
    return false;
  const std::vector<int64_t> want = {(O + b - 1) / b, (C + b - 1) / b, KH, KW, b, b};
  for (size_t d = 0; d < 6; ++d)
    if (*blocks.shape[d].as_int() != want[d]) return false;
  return true;
}

namespace {

Tensor unreorder_conv_blocked_filter(const Tensor& blocks, const PreparedConstant& pc,
                                     const TensorType& type) {
  EMBER_CHECK(conv_blocked_filter_fits(type, blocks.type(), pc.block),
              "a blocked convolution filter " << blocks.type().str()
                                              << " does not match its weight " << type.str());
  const auto [O, C, KH, KW] = filter_dims(type.shape);
  const int64_t b = pc.block;
  Tensor out = Tensor::empty(type.shape, DType::float32);
  ember_rt::conv_blocked_unreorder(static_cast<const float*>(blocks.data()), O, C, KH, KW, b,
                                   static_cast<float*>(out.data()));
  return out;
}

}  // namespace

Tensor unprepare_constant(const Tensor& panels, const PreparedConstant& pc,
                          const TensorType& type) {
  EMBER_ASSERT(preparation_reversible(pc.kind), "unpacking a constant that cannot be undone");
  if (pc.kind == Preparation::ConvBlockedFilter)
    return unreorder_conv_blocked_filter(panels, pc, type);
  ember_rt::PreparedB layout;
  layout.data = static_cast<const float*>(panels.data());
  layout.K = pc.K;
  layout.N = pc.N;
  layout.kc = pc.kc;
  layout.nr = pc.nr;
  const int64_t per = ember_rt::prepared_b_floats(pc.K, pc.N, pc.nr);
  EMBER_CHECK(pc.kc >= 1 && pc.nr >= 1 && panels.numel() == pc.batches * per,
              "a prepared constant does not match its layout");
  layout.batch_stride = per;
  Tensor out = Tensor::empty(type.shape, DType::float32);
  EMBER_ASSERT(out.numel() == pc.batches * pc.K * pc.N, "a prepared constant's source type");
  int64_t sb, sk, sn;
  source_strides(pc, &sb, &sk, &sn);
  ember_rt::unpack_prepared_b(layout, pc.batches, static_cast<float*>(out.data()), sb, sk, sn);
  return out;
}

std::set<int> values_read(const ExecPlan& plan) {
  std::set<int> read(plan.outputs.begin(), plan.outputs.end());
  for (const KernelLaunch& l : plan.launches) read.insert(l.args.begin(), l.args.end());
  // What a read view views is read too (its chain of views, followed until nothing is new).
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [v, base] : plan.views)
      if (read.count(v) && read.insert(base).second) grew = true;
  }
  return read;
}

void drop_unread_sources(ExecPlan* plan) {
  const std::set<int> read = values_read(*plan);
  std::set<int> kept;  // sources of irreversible preparations
  for (const PreparedConstant& pc : plan->prepared)
    if (!preparation_reversible(pc.kind)) kept.insert(pc.source);
  for (const PreparedConstant& pc : plan->prepared)
    if (!read.count(pc.source) && !kept.count(pc.source)) plan->constants.erase(pc.source);
}

void pack_prepared_constants(ExecPlan* plan) {
  constexpr size_t kAlign = 64, kMinTotal = size_t{2} << 20;
  // First launch reading each value: the arena holds the constants in run order.
  std::map<int, size_t> first_read;
  for (size_t k = 0; k < plan->launches.size(); ++k)
    for (int v : plan->launches[k].args) first_read.emplace(v, k);
  std::vector<std::pair<size_t, int>> order;  // (first launch, value)
  size_t total = 0;
  for (const PreparedConstant& pc : plan->prepared) {
    auto it = plan->constants.find(pc.value);
    if (it == plan->constants.end()) continue;
    const Tensor& t = it->second;
    // Only memory that this plan alone holds: a shared tensor would be kept twice.
    if (!t.defined() || !t.storage() || !t.storage()->owned() || t.storage().use_count() != 1 ||
        !t.type().layout.is_plain() || t.nbytes() == 0)
      continue;
    const auto f = first_read.find(pc.value);
    order.emplace_back(f == first_read.end() ? plan->launches.size() : f->second, pc.value);
    total += (static_cast<size_t>(t.nbytes()) + kAlign - 1) / kAlign * kAlign;
  }
  if (total < kMinTotal) return;
  std::sort(order.begin(), order.end());
  std::shared_ptr<Storage> arena = Storage::allocate(total, Device::cpu(), /*long_lived=*/true);
  auto* base = static_cast<char*>(arena->data());
  size_t at = 0;
  for (const auto& [launch, v] : order) {
    (void)launch;
    Tensor& t = plan->constants.at(v);
    const auto n = static_cast<size_t>(t.nbytes());
    std::memcpy(base + at, t.data(), n);
    // Each copy replaces its original at once, so the memory held grows by one constant.
    t = Tensor::from_storage(Storage::borrow(base + at, n, Device::cpu(), arena), t.shape(),
                             t.dtype());
    at += (n + kAlign - 1) / kAlign * kAlign;
  }
}

void reprepare_constants(ExecPlan* plan, void* prepare) {
  std::map<int, Tensor> sources;  // unpacked once when several prepared forms share one
  for (PreparedConstant& pc : plan->prepared) {
    if (pc.kind != Preparation::GemmPanels) continue;  // the same on every ISA
    auto kept = plan->constants.find(pc.source);
    Tensor source;
    if (kept != plan->constants.end()) {
      source = kept->second;
    } else if (auto it = sources.find(pc.source); it != sources.end()) {
      source = it->second;
    } else {
      source = unprepare_constant(plan->constants.at(pc.value), pc, plan->values.at(pc.source));
      sources[pc.source] = source;
    }
    Tensor panels = prepare_constant(prepare, source, &pc);
    plan->values.at(pc.value) = panels.type();
    plan->constants[pc.value] = panels;
  }
}

}  // namespace ember
