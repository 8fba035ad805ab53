// Constants prepared for the kernels that read them (ExecPlan::prepared): packing through
// the kernel module's own function, unpacking (the layout is ember_rt/gemm_prepared.h's), and
// preparing again for kernels compiled for another ISA.
#include <cstring>
#include <map>
#include <set>

#include "ember/runtime/compiled_graph.h"
#include "ember/support/error.h"
#include "ember_rt/gemm_prepared.h"

namespace ember {

namespace {

// Element strides of the source: (batch, k, n).
void source_strides(const PreparedConstant& pc, int64_t* sb, int64_t* sk, int64_t* sn) {
  *sb = pc.K * pc.N;
  *sk = pc.transposed ? 1 : pc.N;
  *sn = pc.transposed ? pc.K : 1;
}

}  // namespace

Tensor prepare_constant(void* prepare, const Tensor& source, PreparedConstant* pc) {
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

Tensor unprepare_constant(const Tensor& panels, const PreparedConstant& pc,
                          const TensorType& type) {
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
  return read;
}

void drop_unread_sources(ExecPlan* plan) {
  const std::set<int> read = values_read(*plan);
  for (const PreparedConstant& pc : plan->prepared)
    if (!read.count(pc.source)) plan->constants.erase(pc.source);
}

void reprepare_constants(ExecPlan* plan, void* prepare) {
  std::map<int, Tensor> sources;  // unpacked once when several prepared forms share one
  for (PreparedConstant& pc : plan->prepared) {
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
