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
// either no entry or a complete one (src/jit/cache_layout.h names every path). A disk hit
// sets the entry directory's modification time, which prune_cache() orders by. An entry
// is used only when its manifest is complete and module.so matches the recorded hash;
// anything else is rebuilt. Within a process the same key returns the same Module without
// touching the disk.
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
  // For people, not part of the key: what each translation unit holds (its kernels), named
  // with the unit's source file when compiling it fails (a compiler that ran out of time).
  std::vector<std::string> unit_contents;
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

// -----------------------------------------------------------------------------------------
// Managing the disk cache (src/jit/cache_admin.cpp). Besides kernel modules, cache_dir()
// holds precompiled headers (pch/, about 50 MB each, see compiler.h) and GEMM tuning records
// (tuning/). Only what ember names is ever counted or removed: other files, and whatever a
// symbolic link points to, are left alone. Every directory is removed by renaming it aside
// first, so other processes see a complete entry or none (a missing entry is rebuilt; a
// module already loaded stays mapped).

struct CacheCategoryUsage {
  std::string name;  // "kernels", "pch", "tuning" or "tmp"
  int64_t entries = 0;
  int64_t bytes = 0;  // sizes of the files
};

struct CacheUsage {
  std::string dir;  // cache_dir()
  // kernels: modules; pch: precompiled headers; tuning: tuning records; tmp: builds in
  // progress, leftovers of failed or killed ones, entries being removed.
  std::vector<CacheCategoryUsage> categories;
  int64_t total_bytes = 0;
  const CacheCategoryUsage& category(const std::string& name) const;
};

CacheUsage cache_usage();

struct PruneResult {
  int64_t kernels_removed = 0;
  int64_t pch_removed = 0;
  int64_t tuning_removed = 0;
  int64_t temporaries_removed = 0;
  int64_t bytes_freed = 0;
  int64_t bytes_left = 0;  // cache_usage().total_bytes afterwards
};

// Removes every kernel module, precompiled header and tuning record, and the temporaries
// that are not a build in progress (see prune_cache).
PruneResult clear_cache();

// Removes stale temporaries (older than an hour, or than three compile time limits when
// that is longer: a build in progress is never touched), then evicts the least recently
// used kernel modules and precompiled headers until the total is at most `max_bytes`.
// Tuning records are kept (they are tiny). A module is used when get_or_build loads it from
// disk, a precompiled header when a build uses it. Throws ember::Error for a negative size.
PruneResult prune_cache(int64_t max_bytes);

// Parses a size such as "500M", "2G", "1.5T" or "4096": a number with an optional suffix
// k, M, G or T (either case, powers of 1024, an optional trailing "B" or "iB"). Throws
// ember::Error naming `what` (where the text came from) and the accepted forms otherwise.
int64_t parse_size(const std::string& text, const std::string& what);

// EMBER_CACHE_MAX_SIZE parsed, or -1 when it is unset or empty. With it set, a process
// that builds kernels prunes the cache to that size when it grows past it (checked after
// each build, from a running estimate recomputed every 32 builds).
int64_t cache_max_size_from_env();

namespace detail {
// Writes "ember[debug]: <msg>" to stderr when EMBER_LOG names debug (support/log.h).
void debug_log(const std::string& msg);
// "<pid>.<16 random hex digits>", for names of temporary files that no other thread or
// process will pick.
std::string unique_suffix();
}  // namespace detail

}  // namespace ember
