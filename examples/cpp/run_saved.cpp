// run_saved: runs a model saved by ember (CompiledModel::save, or CompiledModel.save in
// Python) from .npy files, with ember's runtime library only: no compiler, no Python.
//
//   run_saved MODEL.ember [-i IN.npy ...] [-o OUTDIR] [--threads N] [--runs N]
//
// Prints the model's inputs, outputs and what it was built for; reads one .npy file per
// input, in the order of the model's inputs (with none given and every input shape static,
// it makes deterministic inputs and says so); runs the model; writes each output to
// OUTDIR/<output name>.npy (out_<i>.npy when the name is not a plain file name); prints the
// median time of --runs further runs (default 10; 0 runs once). Exits with 1 on an error
// (a message on stderr), 2 on a bad command line.
//
// Linked with ember::runtime only (examples/cpp/CMakeLists.txt); docs/deploy-cpp.md.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ember/runtime/artifact.h"
#include "ember/runtime/npy.h"
#include "ember/support/error.h"

namespace {

namespace fs = std::filesystem;

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  std::string out_dir = ".";
  int threads = 0;  // 0: EMBER_NUM_THREADS, else one per hardware thread
  int runs = 10;
};

struct UsageError {
  std::string message;
};

const char* const kUsage =
    "usage: run_saved MODEL.ember [-i IN.npy ...] [-o OUTDIR] [--threads N] [--runs N]\n";

// The integer value of `flag`, at least `min`.
int int_arg(const std::string& flag, const std::string& text, int min) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min || v > 1000000) {
    throw UsageError{flag + " needs an integer >= " + std::to_string(min) + ", got '" + text + "'"};
  }
  return static_cast<int>(v);
}

Options parse_args(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError{a + " needs a value"};
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "-i" || a == "--inputs") {
      o.inputs.push_back(value());
      // -i a.npy b.npy ...: every following argument up to the next option.
      while (i + 1 < args.size() && !args[i + 1].starts_with("-")) o.inputs.push_back(args[++i]);
    } else if (a == "-o" || a == "--out") {
      o.out_dir = value();
    } else if (a == "--threads") {
      o.threads = int_arg(a, value(), 1);
    } else if (a == "--runs") {
      o.runs = int_arg(a, value(), 0);
    } else if (a.starts_with("-")) {
      throw UsageError{"unknown option " + a};
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      throw UsageError{"more than one model given ('" + o.model + "' and '" + a +
                       "'); input files follow -i"};
    }
  }
  if (o.model.empty()) throw UsageError{"no model given"};
  return o;
}

void print_model(const std::string& path, const ember::CompiledModel& model) {
  const ember::ArtifactInfo& info = model.info();
  std::cout << "model    " << path << " (" << info.file_bytes << " bytes, format "
            << info.format_version << ", saved by ember " << info.ember_version << ")\n";
  std::cout << "kernels  " << info.kernels << " (" << info.launches << " launches per run), ISA "
            << (info.isa.empty() ? "none" : info.isa);
  if (!info.cpu_features.empty()) {
    std::cout << " (";
    for (size_t i = 0; i < info.cpu_features.size(); ++i) {
      std::cout << (i ? " " : "") << info.cpu_features[i];
    }
    std::cout << ")";
  }
  std::cout << ", weights " << info.weight_bytes << " bytes\n";
  if (!info.rebuilt.empty()) std::cout << "rebuilt  " << info.rebuilt << "\n";
  for (const auto& [title, list] :
       {std::pair{"inputs", model.inputs()}, std::pair{"outputs", model.outputs()}}) {
    std::cout << title << "\n";
    for (const ember::TensorInfo& t : list)
      std::cout << "  " << t.name << ": " << t.type.str() << "\n";
  }
}

// Deterministic values for an input of static shape: small numbers that every dtype holds.
ember::Tensor made_up_input(const ember::TensorType& type) {
  const std::vector<int64_t> dims = ember::shape_values(type.shape);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 7 + 3) % 13;  // 0..12
    double v = static_cast<double>(k - 6);
    if (ember::is_float(type.dtype)) v /= 4.0;
    if (type.dtype == ember::DType::uint8) v = static_cast<double>(k);
    if (type.dtype == ember::DType::boolean) v = static_cast<double>(k % 2);
    values[static_cast<size_t>(i)] = v;
  }
  return ember::from_values(values, type.shape, type.dtype);
}

std::vector<ember::Tensor> read_inputs(const Options& o, const ember::CompiledModel& model) {
  const std::vector<ember::TensorInfo> wanted = model.inputs();
  std::vector<ember::Tensor> inputs;
  if (o.inputs.empty() && !wanted.empty()) {
    for (const ember::TensorInfo& t : wanted) {
      EMBER_CHECK(ember::shape_is_concrete(t.type.shape),
                  "the model's input " << t.name << " has the shape " << t.type.str()
                                       << ", which holds a symbol: give its values with -i");
    }
    std::cout << "no inputs given: running on deterministic made-up values\n";
    for (const ember::TensorInfo& t : wanted) inputs.push_back(made_up_input(t.type));
    return inputs;
  }
  EMBER_CHECK(o.inputs.size() == wanted.size(),
              "the model has " << wanted.size() << " input(s) but " << o.inputs.size()
                               << " file(s) were given with -i");
  for (size_t i = 0; i < wanted.size(); ++i) {
    inputs.push_back(ember::read_npy(o.inputs[i]));
    std::cout << "read     " << o.inputs[i] << " as " << wanted[i].name << ": "
              << inputs.back().type().str() << "\n";
  }
  return inputs;
}

// OUTDIR/<name>.npy, or OUTDIR/out_<i>.npy when the name is not a plain, unused file name.
std::vector<fs::path> output_paths(const fs::path& dir, const ember::CompiledModel& model) {
  std::vector<fs::path> paths;
  std::set<std::string> used;
  const std::vector<ember::TensorInfo> outputs = model.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = outputs[i].name;
    bool plain =
        !name.empty() && name[0] != '.' && name.size() <= 200 &&
        std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
        });
    std::string file = (plain ? name : "out_" + std::to_string(i)) + ".npy";
    if (!used.insert(file).second) file = "out_" + std::to_string(i) + ".npy";
    used.insert(file);
    paths.push_back(dir / file);
  }
  return paths;
}

int run(const Options& o) {
  std::shared_ptr<ember::CompiledModel> model = ember::load(o.model);
  print_model(o.model, *model);
  if (o.threads > 0) model->graph()->set_num_threads(o.threads);

  std::vector<ember::Tensor> inputs = read_inputs(o, *model);
  std::vector<ember::Tensor> outputs = model->run(inputs);

  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  EMBER_CHECK(!ec, "cannot create the output directory " << o.out_dir << ": " << ec.message());
  const std::vector<fs::path> paths = output_paths(o.out_dir, *model);
  for (size_t i = 0; i < outputs.size(); ++i) {
    ember::write_npy(paths[i].string(), outputs[i]);
    std::cout << "wrote    " << paths[i].string() << ": " << outputs[i].type().str() << "\n";
  }

  if (o.runs > 0) {
    using Clock = std::chrono::steady_clock;
    std::vector<double> ms;
    for (int r = 0; r < o.runs; ++r) {
      auto start = Clock::now();
      model->run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    const double median = o.runs % 2 ? ms[o.runs / 2] : (ms[o.runs / 2 - 1] + ms[o.runs / 2]) / 2;
    std::printf("latency  %.4g ms (median of %d runs, %d threads)\n", median, o.runs,
                model->graph()->num_threads());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "run_saved: " << e.message << "\n" << kUsage;
    return 2;
  }
  try {
    return run(options);
  } catch (const ember::Error& e) {
    std::cerr << "run_saved: " << e.what() << "\n";
  } catch (const ember::InternalError& e) {
    std::cerr << "run_saved: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "run_saved: " << e.what() << "\n";
  }
  return 1;
}
