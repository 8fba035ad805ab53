// ember's content-addressed cache of compiled kernel modules.
//
// A module is the shared object built from the translation units of one BuildRequest. Its
// key is a SHA-256 over everything that changes the binary (docs/principles.md, principle 8): every
// source text, the compiler's path and version, all flags, the ISA, EMBER_RT_ABI_VERSION,
// ember's version and the contents of the runtime headers. On disk an entry is
//
//   <cache_dir()>/kernels/<key[0:2]>/<key>/
//       kernel_0.cpp, kernel_1.cpp, ...   the generated sources, kept for reading
//       module.so                         the shared object
//       manifest.txt                      key, size and SHA-256 of module.so, compiler, flags
//
// built in <cache_dir()>/kernels/tmp/ and renamed into place, so other processes see
// either no entry or a complete one. An entry is used only when its manifest is complete
// and module.so matches the recorded hash; anything else is rebuilt. Within a process the
// same key returns the same Module without touching the disk.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/jit/isa.h"
#include "ember_rt/kernel.h"

namespace ember {

// The cache root: EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else ~/.cache/ember. Created
// on demand; throws ember::Error when it cannot be created or written, saying how to
// choose another one.
std::string cache_dir();

struct BuildRequest {
  std::string name;                  // for people: recorded in the manifest, not in the key
  std::vector<std::string> sources;  // full text of each translation unit
  Isa isa = Isa::Scalar;
  std::vector<std::string> extra_flags;  // after base_flags() and isa_flags(isa)
  // Called as progress(done, total) on the calling thread while the module compiles (not on
  // a cache hit), as translation units finish and once linked. Not part of the key.
  std::function<void(int done, int total)> progress;
};

// A loaded kernel module (dlopen with RTLD_NOW | RTLD_LOCAL); dlclose on destruction.
class Module {
 public:
  Module(void* handle, std::string key, std::string dir);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel exported as `name`; throws ember::InternalError when there is none, since
  // ember asks only for kernels it generated.
  ember_kernel_fn symbol(const std::string& name) const;
  // Any exported symbol, or nullptr.
  void* find_symbol(const std::string& name) const;

  const std::string& key() const { return key_; }
  // The cache entry holding the sources, module.so and manifest.txt.
  const std::string& dir() const { return dir_; }

 private:
  void* handle_;
  std::string key_;
  std::string dir_;
};

// The cache key of `request` (64 hexadecimal digits).
std::string cache_key(const BuildRequest& request);

// The module for `request`: from memory, else from disk, else compiled now (one thread
// builds a key while others wanting it wait; different keys build in parallel). Unless a
// source already defines it, the first translation unit gets
//   extern "C" int ember_module_abi() { return EMBER_RT_ABI_VERSION; }
// appended, which the loader checks. Compile failures throw ember::InternalError.
std::shared_ptr<Module> get_or_build(const BuildRequest& request);

struct CacheStats {
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t builds = 0;
  double build_seconds = 0.0;  // wall time spent compiling
};

CacheStats cache_stats();
void reset_cache_stats();
// Drops the in-memory references; modules still held elsewhere stay loaded and are still
// returned for their key while they live.
void clear_memory_cache();

namespace detail {
// Writes "ember[debug]: <msg>" to stderr when EMBER_LOG names debug (support/log.h).
void debug_log(const std::string& msg);
// "<pid>.<16 random hex digits>", for names of temporary files that no other thread or
// process will pick.
std::string unique_suffix();
}  // namespace detail

}  // namespace ember
