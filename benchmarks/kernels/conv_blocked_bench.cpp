// Benchmark of the direct convolution on the channel-blocked layout
// (runtime_include/ember_rt/conv_blocked.h) on the convolution layers of ResNet-50 and
// ResNet-18 (batch 1, 224 x 224 input), next to the machine's measured FMA peak, with 1 and
// 2 threads.
//
//   g++ -O3 -std=c++20 -march=native -I runtime_include benchmarks/kernels/conv_blocked_bench.cpp
//       -o /tmp/conv_blocked_bench -pthread && /tmp/conv_blocked_bench
//
// Times are CPU times as in gemm_bench (one thread: its CPU time; two threads: the slowest
// chunk's CPU time per parallel region, "busy"), the median of the rounds; wall-clock
// GFLOP/s at 2 threads is printed next to them. The totals weight each layer by how often the
// network has it. Optional argument: `resnet50`, `resnet18` or `mobilenet_v2` (default: all),
// then layer names to time only those (`conv_blocked_bench resnet50 "l4 3x3 512"`).
// EMBER_BENCH_EPILOGUE=1 applies the epilogue of a convolution followed by batch norm and
// ReLU6 after each finished row segment (per output pixel, in place: x * scale[c] + shift[c],
// clamped to [0, 6]), EMBER_BENCH_EPILOGUE=2 the same in registers (ember_rt::ChannelAffine,
// as generated kernels pass it). Environment:
// EMBER_BENCH_NOC / _UR / _CHUNK / _ORDER override the blocking (ConvBlockedTuning);
// EMBER_BENCH_COLD=1 gives every call its own copy of the weights (64 MiB of copies in all,
// cycled), so that they come from the last-level cache or memory as in a whole network,
// where each layer's weights are read once per run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "ember_rt/conv_blocked.h"

namespace {

struct Layer {
  const char* name;
  int64_t c, o, h, k, s, p;  // square input map h x h, square kernel k, stride, padding
  int count;                 // how many times the network has it
  int64_t oh() const { return (h + 2 * p - k) / s + 1; }
  double flop() const { return 2.0 * c * o * k * k * static_cast<double>(oh() * oh()); }
};

// torchvision's ResNet-50 (stride on the 3x3 of a bottleneck) and ResNet-18.
const std::vector<Layer> kResNet50 = {
    {"stem 7x7/2 3->64", 3, 64, 224, 7, 2, 3, 1},
    {"l1 1x1 64->64", 64, 64, 56, 1, 1, 0, 1},
    {"l1 3x3 64", 64, 64, 56, 3, 1, 1, 3},
    {"l1 1x1 64->256", 64, 256, 56, 1, 1, 0, 4},  // 3 expansions + the downsample
    {"l1 1x1 256->64", 256, 64, 56, 1, 1, 0, 2},
    {"l2 1x1 256->128", 256, 128, 56, 1, 1, 0, 1},
    {"l2 3x3/2 128", 128, 128, 56, 3, 2, 1, 1},
    {"l2 1x1 128->512", 128, 512, 28, 1, 1, 0, 4},
    {"l2 ds 1x1/2 256->512", 256, 512, 56, 1, 2, 0, 1},
    {"l2 1x1 512->128", 512, 128, 28, 1, 1, 0, 3},
    {"l2 3x3 128", 128, 128, 28, 3, 1, 1, 3},
    {"l3 1x1 512->256", 512, 256, 28, 1, 1, 0, 1},
    {"l3 3x3/2 256", 256, 256, 28, 3, 2, 1, 1},
    {"l3 1x1 256->1024", 256, 1024, 14, 1, 1, 0, 6},
    {"l3 ds 1x1/2 512->1024", 512, 1024, 28, 1, 2, 0, 1},
    {"l3 1x1 1024->256", 1024, 256, 14, 1, 1, 0, 5},
    {"l3 3x3 256", 256, 256, 14, 3, 1, 1, 5},
    {"l4 1x1 1024->512", 1024, 512, 14, 1, 1, 0, 1},
    {"l4 3x3/2 512", 512, 512, 14, 3, 2, 1, 1},
    {"l4 1x1 512->2048", 512, 2048, 7, 1, 1, 0, 3},
    {"l4 ds 1x1/2 1024->2048", 1024, 2048, 14, 1, 2, 0, 1},
    {"l4 1x1 2048->512", 2048, 512, 7, 1, 1, 0, 2},
    {"l4 3x3 512", 512, 512, 7, 3, 1, 1, 2},
};
// MobileNetV2's 1x1 expansions and projections (the 3x3 depthwise layers are another routine).
const std::vector<Layer> kMobileNetV2 = {
    {"b1 1x1 16->96", 16, 96, 112, 1, 1, 0, 1},    {"b2 1x1 96->24", 96, 24, 56, 1, 1, 0, 1},
    {"b2 1x1 24->144", 24, 144, 56, 1, 1, 0, 2},   {"b3 1x1 144->24", 144, 24, 56, 1, 1, 0, 1},
    {"b4 1x1 144->32", 144, 32, 28, 1, 1, 0, 1},   {"b4 1x1 32->192", 32, 192, 28, 1, 1, 0, 3},
    {"b5 1x1 192->32", 192, 32, 28, 1, 1, 0, 2},   {"b7 1x1 64->384", 64, 384, 14, 1, 1, 0, 4},
    {"b7 1x1 384->64", 384, 64, 14, 1, 1, 0, 3},   {"b11 1x1 96->576", 96, 576, 14, 1, 1, 0, 3},
    {"b14 1x1 160->960", 160, 960, 7, 1, 1, 0, 3}, {"last 1x1 320->1280", 320, 1280, 7, 1, 1, 0, 1},
};
const std::vector<Layer> kResNet18 = {
    {"stem 7x7/2 3->64", 3, 64, 224, 7, 2, 3, 1},
    {"l1 3x3 64", 64, 64, 56, 3, 1, 1, 4},
    {"l2 3x3/2 64->128", 64, 128, 56, 3, 2, 1, 1},
    {"l2 3x3 128", 128, 128, 28, 3, 1, 1, 3},
    {"l2 ds 1x1/2 64->128", 64, 128, 56, 1, 2, 0, 1},
    {"l3 3x3/2 128->256", 128, 256, 28, 3, 2, 1, 1},
    {"l3 3x3 256", 256, 256, 14, 3, 1, 1, 3},
    {"l3 ds 1x1/2 128->256", 128, 256, 28, 1, 2, 0, 1},
    {"l4 3x3/2 256->512", 256, 512, 14, 3, 2, 1, 1},
    {"l4 3x3 512", 512, 512, 7, 3, 1, 1, 3},
    {"l4 ds 1x1/2 256->512", 256, 512, 14, 1, 2, 0, 1},
};

int64_t env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : 0;
}

struct Timing {
  double busy, wall;  // seconds per call, medians
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Timing time_layer(const Layer& L, const ember_rt::LaunchContext* ctx) {
  const int64_t B = ember_rt::lib::conv_blocked_lanes();
  const int64_t CB = (L.c + B - 1) / B, OB = (L.o + B - 1) / B, oh = L.oh();
  std::vector<float> x(static_cast<size_t>(CB * L.h * L.h * B));
  std::vector<float> w(static_cast<size_t>(L.o * L.c * L.k * L.k));
  std::vector<float> out(static_cast<size_t>(OB * oh * oh * B));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  const auto wfloats =
      static_cast<size_t>(ember_rt::lib::conv_blocked_weight_floats(L.o, L.c, L.k, L.k));
  const size_t copies =
      env_int("EMBER_BENCH_COLD") ? std::max<size_t>(2, (64u << 20) / (wfloats * 4)) : 1;
  std::vector<std::vector<float>> wps(copies, std::vector<float>(wfloats));
  for (auto& wp : wps) ember_rt::lib::conv_blocked_prepare(w.data(), L.o, L.c, L.k, L.k, wp.data());
  size_t next = 0;
  ember_rt::ConvBlockedTuning tune;
  tune.noc = static_cast<int>(env_int("EMBER_BENCH_NOC"));
  tune.ur = static_cast<int>(env_int("EMBER_BENCH_UR"));
  tune.chunk = env_int("EMBER_BENCH_CHUNK");
  tune.order = static_cast<int>(env_int("EMBER_BENCH_ORDER"));
  std::vector<float> scale(static_cast<size_t>(OB * B), 1.1f), shift(scale.size(), 0.1f);
  const float* sc = scale.data();
  const float* sh = shift.data();
  // An epilogue as generated kernels have, after each finished row segment, in place (its
  // parameters loaded once per segment: a lower bound of what a generated one costs).
  const auto epilogue = [sc, sh, B, OB](int64_t plane, int64_t, int64_t, int64_t len, float* p) {
    using ember_rt::vf;
    const vf s = vf::load(sc + plane % OB * B), t = vf::load(sh + plane % OB * B);
    for (int64_t i = 0; i < len; ++i)
      min_c(max_c(fma(vf::load(p + i * B), s, t), vf(0.0f)), vf(6.0f)).store(p + i * B);
  };
  ember_rt::ChannelAffine affine;
  affine.scale = sc, affine.shift = sh, affine.lo = 0.0f, affine.hi = 6.0f, affine.channels = L.o;
  const int64_t with_epilogue = env_int("EMBER_BENCH_EPILOGUE");
  auto run = [&] {
    const float* wp = wps[next].data();
    next = next + 1 == copies ? 0 : next + 1;
    if (with_epilogue == 2)
      ember_rt::lib::conv2d_blocked(ctx, x.data(), wp, out.data(), 1, L.c, L.h, L.h, L.o, oh, oh,
                                    L.k, L.k, L.s, L.s, L.p, L.p, 1, 1, affine, tune);
    else if (with_epilogue)
      ember_rt::lib::conv2d_blocked(ctx, x.data(), wp, out.data(), 1, L.c, L.h, L.h, L.o, oh, oh,
                                    L.k, L.k, L.s, L.s, L.p, L.p, 1, 1, epilogue, tune);
    else
      ember_rt::lib::conv2d_blocked(ctx, x.data(), wp, out.data(), 1, L.c, L.h, L.h, L.o, oh, oh,
                                    L.k, L.k, L.s, L.s, L.p, L.p, 1, 1, ember_rt::NoEpilogue{},
                                    tune);
  };
  auto* pool = static_cast<SpinPool*>(ctx->pool);
  const int64_t reps = static_cast<int64_t>(2e7 / L.flop()) + 1;  // a few ms per round
  run();
  std::vector<double> busy, wall;
  for (int round = 0; round < 15; ++round) {
    pool->overcount = 0;
    const double w0 = wall_seconds(), c0 = thread_cpu_seconds();
    for (int64_t r = 0; r < reps; ++r) run();
    wall.push_back((wall_seconds() - w0) / static_cast<double>(reps));
    busy.push_back((thread_cpu_seconds() - c0 - pool->overcount) / static_cast<double>(reps));
  }
  return {median(busy), median(wall)};
}

void bench(const char* net, const std::vector<Layer>& all, const std::vector<std::string>& only,
           const ember_rt::LaunchContext* ctx1, const ember_rt::LaunchContext* ctx2, double peak1,
           double peak2) {
  std::vector<Layer> layers;
  for (const Layer& L : all)
    if (only.empty() || std::find(only.begin(), only.end(), L.name) != only.end())
      layers.push_back(L);
  std::printf("\n%s\n", net);
  std::printf("%-24s %3s | %9s %8s %7s | %9s %8s %7s %7s | %9s\n", "layer", "x", "1T ms", "GFLOP/s",
              "% peak", "2T ms", "GFLOP/s", "% peak", "speedup", "wall GF/s");
  double flop = 0, t1 = 0, t2 = 0;
  for (const Layer& L : layers) {
    const Timing a = time_layer(L, ctx1), b = time_layer(L, ctx2);
    const double gf = L.flop() / 1e9;
    std::printf("%-24s %3d | %9.3f %8.1f %6.0f%% | %9.3f %8.1f %6.0f%% %6.2fx | %9.1f\n", L.name,
                L.count, 1e3 * a.busy, gf / a.busy, 100 * gf / a.busy / peak1, 1e3 * b.busy,
                gf / b.busy, 100 * gf / b.busy / peak2, a.busy / b.busy, gf / b.wall);
    flop += L.count * gf;
    t1 += L.count * a.busy;
    t2 += L.count * b.busy;
  }
  std::printf("%-24s %3s | %9.3f %8.1f %6.0f%% | %9.3f %8.1f %6.0f%% %6.2fx |\n",
              "all convolutions", "", 1e3 * t1, flop / t1, 100 * flop / t1 / peak1, 1e3 * t2,
              flop / t2, 100 * flop / t2 / peak2, t1 / t2);
}

}  // namespace

int main(int argc, char** argv) {
  const bool r50 = argc < 2 || std::strcmp(argv[1], "resnet50") == 0;
  const bool r18 = argc < 2 || std::strcmp(argv[1], "resnet18") == 0;
  const bool mv2 = argc < 2 || std::strcmp(argv[1], "mobilenet_v2") == 0;
  std::vector<std::string> only(argv + (argc > 2 ? 2 : argc), argv + argc);
  const char* isa = ember_rt::vf::width == 16  ? "AVX-512"
                    : ember_rt::vf::width == 8 ? "AVX2"
                                               : "scalar";
  std::printf(
      "ember_rt::lib::conv2d_blocked, %s (block of %d channels)%s\n", isa, ember_rt::vf::width,
      env_int("EMBER_BENCH_EPILOGUE") == 2 ? ", with a scale, shift, ReLU6 epilogue in registers"
      : env_int("EMBER_BENCH_EPILOGUE")    ? ", with a per-pixel scale, shift, ReLU6 epilogue"
                                           : "");
  const double peak1 = peak_gflops(1), peak2 = peak_gflops(2);
  std::printf("measured FMA peak: %.1f GFLOP/s (1 thread), %.1f GFLOP/s (2 threads)\n", peak1,
              peak2);
  SpinPool pool1(1), pool2(2);
  const ember_rt::LaunchContext ctx1{&pool1, 1, &SpinPool::parallel_run, nullptr, nullptr};
  const ember_rt::LaunchContext ctx2{&pool2, 2, &SpinPool::parallel_run, nullptr, nullptr};
  if (r50) bench("ResNet-50, batch 1, 224x224", kResNet50, only, &ctx1, &ctx2, peak1, peak2);
  if (r18) bench("ResNet-18, batch 1, 224x224", kResNet18, only, &ctx1, &ctx2, peak1, peak2);
  if (mv2)
    bench("MobileNetV2, batch 1, 224x224 (1x1 layers)", kMobileNetV2, only, &ctx1, &ctx2, peak1,
          peak2);
  return 0;
}
