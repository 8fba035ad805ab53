// The kernels' machine code in a saved model (artifact.cpp): read from the kernel cache,
// stripped of what only tools read, and linked again from the bytes of a loaded file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ember/runtime/compiled_graph.h"

namespace ember::artifact_module {

// The bytes of the kernels' shared object (in memory, or its file in the kernel cache); an
// error saying what to do when the file is gone.
std::string read_module_bytes(const KernelBinary& b);

// The shared object less what only tools read: the section headers and the sections no
// segment maps (symbol table, string table, comments), i.e. the bytes up to the end of the
// last segment, the header's section fields cleared. The dynamic loader reads the program
// headers only. Bytes that are not a little-endian ELF64 file are returned unchanged, and a
// stripped object strips to itself.
std::string strip_module(std::string so);

// A module linked from bytes; dlclose'd (and its memory file closed) when the last owner goes.
struct LoadedModule {
  void* handle = nullptr;
  // The memory file, open while the module is loaded: the dynamic loader knows a module by
  // its path, and /proc/self/fd/<fd> must not name another module while this one is mapped.
  int fd = -1;
  LoadedModule() = default;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule();
};

// dlopen of bytes: an anonymous memory file where the kernel supports one, else a temporary
// file removed right after loading. ArtifactError when the bytes do not link.
std::shared_ptr<LoadedModule> open_module(const char* data, size_t size);

}  // namespace ember::artifact_module
