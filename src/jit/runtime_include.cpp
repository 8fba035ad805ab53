// Where the runtime headers (ember_rt/*.h) that generated kernels include are found, and the
// hash of their contents (declared in ember/jit/compiler.h).
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ember/jit/compiler.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "process.h"

namespace ember {
namespace fs = std::filesystem;

using detail::env_or_empty;

namespace {

bool has_runtime_headers(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "ember_rt" / "kernel.h", ec);
}

// The directory of the shared object (or executable) this function was linked into.
fs::path library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&runtime_include_dir), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code ec;
  fs::path lib = fs::weakly_canonical(fs::path(info.dli_fname), ec);
  return ec ? fs::path() : lib.parent_path();
}

// What runtime_include_dir() found, per value of EMBER_RUNTIME_INCLUDE, and the directory
// registered by set_runtime_include_default(). A function's static, so that a registration
// from another file's static initializer finds it constructed.
struct RuntimeIncludeState {
  std::mutex mu;
  std::map<std::string, std::string> by_env;
  std::string registered;
};
RuntimeIncludeState& runtime_include_state() {
  static RuntimeIncludeState state;
  return state;
}

// The directory the build registered (the C++ build tree's source tree, an installation's
// share/ember/runtime_include; none for the wheel), then the places an installed or packaged
// ember keeps the headers, next to its library.
std::vector<fs::path> runtime_include_candidates(const std::string& registered) {
  std::vector<fs::path> candidates;
  if (!registered.empty()) candidates.emplace_back(registered);
  fs::path lib = library_dir();
  if (!lib.empty()) {
    candidates.push_back(lib / "runtime_include");  // Python package: ember/runtime_include
    candidates.push_back(lib.parent_path() / "runtime_include");  // build or source tree
    candidates.push_back(lib.parent_path() / "share" / "ember" / "runtime_include");  // install
  }
  return candidates;
}

std::string locate_runtime_include(const std::string& env, const std::string& registered) {
  if (!env.empty()) {
    EMBER_CHECK(has_runtime_headers(env),
                "EMBER_RUNTIME_INCLUDE is set to '"
                    << env << "', but that directory has no ember_rt/kernel.h. Point it at the "
                    << "runtime_include directory of an ember installation (the directory that "
                    << "holds ember_rt/), or unset it.");
    return fs::absolute(env).lexically_normal().string();
  }
  std::string looked;
  for (const fs::path& dir : runtime_include_candidates(registered)) {
    if (has_runtime_headers(dir)) return fs::absolute(dir).lexically_normal().string();
    looked += "\n  " + dir.string();
  }
  EMBER_THROW("ember cannot find its runtime headers (ember_rt/kernel.h), which the kernels it "
              << "generates include. It looked in:" << looked
              << "\nSet EMBER_RUNTIME_INCLUDE to the directory that holds ember_rt/ (it is "
              << "installed as runtime_include next to the ember package, and as "
              << "share/ember/runtime_include under the prefix of a C++ installation).");
}

std::string hash_directory(const fs::path& dir) {
  std::vector<std::pair<std::string, fs::path>> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      files.emplace_back(entry.path().lexically_relative(dir).generic_string(), entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  Sha256 h;
  for (const auto& [relative, path] : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    EMBER_CHECK(in.good() || in.eof(), "ember cannot read its runtime header " << path.string());
    h.field(relative).field(contents.str());
  }
  return h.hex_digest();
}

}  // namespace

std::string runtime_include_dir() {
  RuntimeIncludeState& state = runtime_include_state();
  std::string env = env_or_empty("EMBER_RUNTIME_INCLUDE");
  std::lock_guard<std::mutex> lock(state.mu);
  auto it = state.by_env.find(env);
  if (it != state.by_env.end()) return it->second;
  std::string dir = locate_runtime_include(env, state.registered);
  state.by_env[env] = dir;
  return dir;
}

void set_runtime_include_default(const std::string& dir) {
  RuntimeIncludeState& state = runtime_include_state();
  std::lock_guard<std::mutex> lock(state.mu);
  state.registered = dir;
  state.by_env.clear();
}

std::string runtime_include_hash() {
  static std::mutex mu;
  static std::map<std::string, std::string> by_dir;
  std::string dir = runtime_include_dir();
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_dir.find(dir);
  if (it != by_dir.end()) return it->second;
  std::string hash = hash_directory(dir);
  by_dir[dir] = hash;
  return hash;
}

}  // namespace ember
