// Code generation: Task -> C++ source for the x86-64 CPU back end.
//
// A kernel is an `extern "C"` function with the signature of ember_kernel_fn
// (runtime_include/ember_rt/kernel.h). Stages become loop nests; the innermost loop of an
// elementwise computation, a reduction and a matmul epilogue is written with the vector
// type ember_rt::vf, whose width and instructions follow the ISA the source is compiled
// for (AVX-512, AVX2, or scalar). Matmul stages call the GEMM template of
// runtime_include/ember_rt/gemm.h with a generated epilogue.
#pragma once

#include <string>
#include <vector>

#include "ember/ir/task.h"

namespace ember::codegen {

// The C++ definition of one kernel named `fn_name`. `symbols` gives the order of the
// symbolic dimensions in the kernel's `syms` argument. Buffers of the task must be ordered
// inputs, outputs, scratch (the kernel's `args` order).
std::string generate_kernel(const ir::Task& task, const std::string& fn_name,
                            const std::vector<std::string>& symbols);

// Groups kernel definitions into at most `max_units` translation units, each with the
// includes it needs; the first one also defines ember_module_abi().
std::vector<std::string> make_translation_units(const std::vector<std::string>& kernels,
                                                int max_units);

}  // namespace ember::codegen
