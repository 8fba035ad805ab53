// Where each kind of file lives under the cache root (cache_dir()). Everything ember writes
// there is named here, so that the code that writes it, cache_usage(), clear_cache() and
// prune_cache() agree on what is ember's:
//
//   kernels/<key[0:2]>/<key>/       a kernel module (cache.cpp)
//   kernels/tmp/<name>              modules being built, failed builds and entries being removed
//   pch/<hash>/                     a precompiled ember_rt/all.h and the runtime's pieces
//                                   compiled for the same flags, pieces.o (compiler.cpp)
//   pch/<hash>.old.<suffix>/        a precompiled header being removed
//   tuning/<key[0:2]>/<key>.txt     a GEMM tuning record (src/tune/records.cpp), or the
//                                   machine's measured peaks (src/tune/peak.cpp)
//   compiler                        the identity of the compiler that built the kernels
//
// Keys and hashes are 64 lowercase hexadecimal digits. A directory's modification time is
// when it was last used (see touch()); prune_cache() evicts the oldest first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ember::detail {

inline std::filesystem::path kernels_dir(const std::filesystem::path& root) {
  return root / "kernels";
}
inline std::filesystem::path kernels_tmp_dir(const std::filesystem::path& root) {
  return kernels_dir(root) / "tmp";
}
inline std::filesystem::path kernel_entry_dir(const std::filesystem::path& root,
                                              const std::string& key) {
  return kernels_dir(root) / key.substr(0, 2) / key;
}
inline std::filesystem::path pch_root(const std::filesystem::path& root) { return root / "pch"; }
inline std::filesystem::path tuning_dir(const std::filesystem::path& root) {
  return root / "tuning";
}
inline std::filesystem::path tuning_record(const std::filesystem::path& root,
                                           const std::string& key) {
  return tuning_dir(root) / key.substr(0, 2) / (key + ".txt");
}
inline std::filesystem::path compiler_identity_file(const std::filesystem::path& root) {
  return root / "compiler";
}

// Whether `s` is a cache key or header hash: 64 lowercase hexadecimal digits.
inline bool is_key(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Marks `dir` as used now (its modification time); errors are ignored (a read-only cache).
void touch(const std::filesystem::path& dir) noexcept;

// Removes the directory `dir` so that no other process ever sees part of it: it is renamed
// to `grave` (atomic), then deleted. Returns the bytes removed, or -1 when the rename
// failed (the directory is then left as it was). Symbolic links are removed, not followed.
long long retire_dir(const std::filesystem::path& dir, const std::filesystem::path& grave);

// Removes the temporaries that no build is still writing (see prune_cache).
void remove_stale_temporaries(const std::filesystem::path& root);

// Called after a build added `added_bytes` to the cache when EMBER_CACHE_MAX_SIZE is set
// (`max_bytes`): prunes the cache when it has grown past that size.
void bound_cache(int64_t max_bytes, int64_t added_bytes);

}  // namespace ember::detail
