// save_model: compiles a small model with ember's C++ API and saves it for run_saved.
//
//   save_model OUTDIR [--batch N]
//
// The model is y = relu(x @ w + b) with x: float32[n, 16], a batch of any size n (a
// symbolic dimension), and fixed weights w: [16, 8], b: [8]. It writes
//   OUTDIR/model.ember     the compiled model (CompiledModel::save)
//   OUTDIR/x.npy           an input of batch N (default 5)
//   OUTDIR/expected.npy    the model's output for it, as this process computed it
// and checks that output against a float64 loop. Then, on a machine with the same CPU
// features (no compiler needed there):
//   run_saved OUTDIR/model.ember -i OUTDIR/x.npy -o OUTDIR/run
// writes OUTDIR/run/y.npy, the same bytes as OUTDIR/expected.npy.
//
// Linked with ember::ember, the compiler (examples/cpp/CMakeLists.txt; docs/deploy-cpp.md).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/pipeline.h"
#include "ember/ops/ops.h"
#include "ember/runtime/artifact.h"
#include "ember/runtime/npy.h"
#include "ember/support/error.h"

namespace {

constexpr int64_t kIn = 16, kOut = 8;

int run(const std::filesystem::path& dir, int64_t batch) {
  std::filesystem::create_directories(dir);
  ember::Tensor w = ember::randn({kIn, kOut}, ember::DType::float32, ember::Device::cpu(), 1);
  ember::Tensor b = ember::randn({kOut}, ember::DType::float32, ember::Device::cpu(), 2);

  // Trace with a symbolic batch, optimize, compile, save.
  ember::Tensor x = ember::Tensor::symbol({ember::ir::var("n"), kIn}, ember::DType::float32,
                                          ember::Device::cpu(), "x");
  ember::Tensor y = ember::ops::relu(ember::ops::add(ember::ops::matmul(x, w), b));
  ember::FlowGraph graph = ember::optimize(ember::trace_from({y}, {x}));
  ember::CompiledModel model(graph.build(), {"x"}, {"y"});
  const std::string model_path = (dir / "model.ember").string();
  model.save(model_path);
  std::cout << "saved " << model_path << " (" << model.info().file_bytes << " bytes, "
            << model.info().kernels << " kernels, ISA " << model.info().isa << ")\n";

  ember::Tensor input = ember::randn({batch, kIn}, ember::DType::float32, ember::Device::cpu(), 3);
  ember::Tensor output = model.run({input})[0];
  ember::write_npy((dir / "x.npy").string(), input);
  ember::write_npy((dir / "expected.npy").string(), output);

  // The same model as a float64 loop.
  const float* xs = input.data_as<float>();
  const float* ws = w.data_as<float>();
  const float* bs = b.data_as<float>();
  const float* ys = output.data_as<float>();
  double worst = 0.0;
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < kOut; ++j) {
      double acc = bs[j];
      for (int64_t k = 0; k < kIn; ++k) acc += double(xs[i * kIn + k]) * double(ws[k * kOut + j]);
      worst = std::max(worst, std::abs(std::max(acc, 0.0) - double(ys[i * kOut + j])));
    }
  }
  std::cout << "wrote x.npy and expected.npy (batch " << batch
            << "); max |ember - float64 reference| = " << worst << "\n";
  if (!(worst < 1e-4)) {
    std::cerr << "save_model: the compiled model disagrees with the float64 reference\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int64_t batch = 5;
  if (args.size() == 3 && args[1] == "--batch") {
    batch = std::atoll(args[2].c_str());
  } else if (args.size() != 1) {
    batch = 0;
  }
  if (batch < 1) {
    std::cerr << "usage: save_model OUTDIR [--batch N]   (N >= 1)\n";
    return 2;
  }
  try {
    return run(args[0], batch);
  } catch (const ember::Error& e) {
    std::cerr << "save_model: " << e.what() << "\n";
  } catch (const ember::InternalError& e) {
    std::cerr << "save_model: " << e.what() << "\n";
  }
  return 1;
}
