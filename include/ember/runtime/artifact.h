// Compiled models saved to one file and loaded back: what runs a model without compiling it.
//
// A CompiledModel is a CompiledGraph with names for its inputs and outputs and a free-form
// metadata string a front end keeps with it (the Python package stores the output structure
// there). save() writes one file (docs/deploy.md describes the format):
//
//   the optimized plan      values, inputs, outputs, symbols, launches (kernel names, args,
//                           scratch buffers), as the runtime needs them
//   the weights             every constant, 64-byte aligned, as the kernels read them (a
//                           prepared constant in one form, the other made at load; equal
//                           constants once)
//   the machine code        the kernels' shared object, built for the ISA recorded beside it
//                           (stripped of what only tools read, compressed)
//   the sources             the translation units it was compiled from (the tuning choices
//                           are part of them), to rebuild it for another CPU (compressed)
//   metadata                format version, ember version, kernel ABI, ISA and the CPU
//                           features the code uses, names, the front end's metadata
//   the costs               each launch's floating-point operations and bytes (the profile's)
//
// with a checksum over each section and one over the table of sections. Saving writes a temporary
// file beside the target and renames it, so a reader sees the old file or the new one, never half
// of one.
//
// load() maps the file, checks it and links the machine code: no compiler runs when this
// CPU has the features the code was built for. When it lacks them and ember's compiler is
// linked into the program (the Python package, or a program linking ember::ember), the
// kernels are rebuilt from the saved sources for this CPU; a program linking only the
// runtime library gets an ArtifactError saying why. EMBER_ISA lowers the ISA a load accepts
// as it lowers the one kernels are generated for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/runtime/compiled_graph.h"
#include "ember/support/error.h"

namespace ember {

// A file that is not a saved model, is damaged or truncated, comes from a newer format
// version or another kernel ABI, or whose machine code this CPU cannot run (with no
// compiler to rebuild it).
struct ArtifactError : Error {
  using Error::Error;
};

// The version of the file format save() writes; load() reads versions 1 to this one.
// 2: the "prepared" section; 3: each prepared constant stored in one form, the machine code
// (stripped) and the sources compressed; 4: each "prepared" record starts with its
// preparation (GEMM panels, Winograd filters: stored as their 3x3 weights); 5: the "layouts"
// section (the values whose layout is not plain: a blocked convolution's activations) and the
// blocked convolution's filters (stored as their weights, made again at load); 6: the "aliases"
// section (values that are reshapes of others, read in their memory, and launches whose
// output may take an input's memory).
constexpr int kArtifactFormatVersion = 6;

struct TensorInfo {
  std::string name;
  TensorType type;  // shapes may hold symbols: float32[n, 3, 224, 224]
};

struct ArtifactInfo {
  int format_version = kArtifactFormatVersion;
  std::string ember_version;
  int kernel_abi = 0;
  std::string isa;                        // of the machine code in use
  std::vector<std::string> cpu_features;  // it needs
  int64_t file_bytes = -1;                // of the file loaded or last saved; -1 if none
  int64_t weight_bytes = 0;               // constants, in bytes
  int64_t prepared_weight_bytes = 0;      // of those, constants prepared for the kernels
  int kernels = 0;                        // distinct kernels
  int launches = 0;                       // kernel launches per run
  // Set by load(): the kernels were rebuilt from the saved sources, and why.
  std::string rebuilt;
};

class CompiledModel {
 public:
  // `input_names` / `output_names`: one per graph input / output; empty lists name them
  // input_0, ... and output_0, ...
  CompiledModel(std::shared_ptr<CompiledGraph> graph, std::vector<std::string> input_names = {},
                std::vector<std::string> output_names = {}, std::string metadata = {});

  // CompiledGraph::run with the inputs in the order of inputs().
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  const ArtifactInfo& info() const { return info_; }
  const std::string& metadata() const { return metadata_; }
  const std::shared_ptr<CompiledGraph>& graph() const { return graph_; }

  // Writes the model to `path` (atomically; see the top of this file). Throws ember::Error
  // when the file cannot be written or the kernels' machine code is no longer readable.
  void save(const std::string& path);

  // Used by load().
  void set_info(ArtifactInfo info) { info_ = std::move(info); }

 private:
  std::shared_ptr<CompiledGraph> graph_;
  std::vector<std::string> input_names_, output_names_;
  std::string metadata_;
  ArtifactInfo info_;
};

// Loads a model saved by CompiledModel::save. Throws ArtifactError for a file that is not
// a saved model, is damaged, truncated, from a newer format or another kernel ABI, or whose
// kernels this CPU cannot run and cannot rebuild; ember::Error when it cannot be read.
std::shared_ptr<CompiledModel> load(const std::string& path);

namespace detail {
// Kernels compiled again from a saved model's sources, for this CPU.
struct RebuiltKernels {
  std::shared_ptr<void> modules;     // keeps the shared object loaded
  std::vector<ember_kernel_fn> fns;  // one per requested name, in order
  std::shared_ptr<const KernelBinary> binary;
  void* prepare = nullptr;  // the module's ember_rt::kPrepareGemmB, when it has one
};
using KernelRebuilder = RebuiltKernels (*)(const std::vector<std::string>& sources,
                                           const std::vector<std::string>& kernel_names);
// The file `bytes` with every checksum recomputed from what it holds (for tests that damage
// records behind valid checksums, as a buggy writer would).
std::string reseal(std::string bytes);
// ember's compiler library installs its rebuilder when it is linked; null otherwise.
void set_kernel_rebuilder(KernelRebuilder rebuilder);
KernelRebuilder kernel_rebuilder();
}  // namespace detail

}  // namespace ember
