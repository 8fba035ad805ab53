// Finding the C++ compiler for generated kernels (EMBER_CXX, CXX, PATH), probing its
// identity, and remembering that identity in the cache so that a machine without a compiler
// can still use a warm cache (compiler_for_keys).
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "cache_layout.h"
#include "ember/jit/cache.h"
#include "ember/jit/compiler.h"
#include "ember/support/error.h"
#include "process.h"

namespace ember {
namespace fs = std::filesystem;

namespace {

using detail::debug_log;
using detail::env_or_empty;
using detail::ProcessResult;
using detail::run_process;
using detail::unique_suffix;

// ---------------------------------------------------------------------------------------
// Compiler discovery.

bool is_executable_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Resolves a program as a shell would: a name with a slash is a path, any other name is
// looked up in the directories of PATH.
std::optional<std::string> resolve_program(const std::string& name, const std::string& path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (!is_executable_file(name)) return std::nullopt;
    return fs::absolute(name).lexically_normal().string();
  }
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate)) return fs::absolute(candidate).lexically_normal().string();
  }
  return std::nullopt;
}

CompilerInfo probe_compiler(const std::string& path) {
  ProcessResult r = run_process({path, "--version"}, probe_timeout_seconds());
  if (!r.started || r.exit_code != 0) {
    EMBER_THROW("the C++ compiler '"
                << path << "' does not work: `" << path << " --version` "
                << (r.started ? "failed with exit status " + std::to_string(r.exit_code)
                              : "could not be started (" + r.output + ")")
                << ". ember compiles the kernels it generates with a C++ compiler at run time; "
                << "set EMBER_CXX to a working one such as /usr/bin/g++ or /usr/bin/clang++.");
  }
  std::string first_line = r.output.substr(0, r.output.find('\n'));
  return CompilerInfo{path, first_line};
}

struct CompilerCache {
  std::mutex mu;
  std::map<std::string, const CompilerInfo*> by_env;
  std::list<CompilerInfo> storage;  // never shrinks: references handed out stay valid
};

CompilerCache& compiler_cache() {
  static CompilerCache* cache = new CompilerCache;  // leaked on purpose: used at exit
  return *cache;
}

std::string find_compiler_path(const std::string& ember_cxx, const std::string& cxx,
                               const std::string& path) {
  if (!ember_cxx.empty()) {
    if (auto found = resolve_program(ember_cxx, path)) return *found;
    EMBER_THROW("no C++ compiler was found: EMBER_CXX is set to '"
                << ember_cxx << "', which is not an executable file"
                << (ember_cxx.find('/') == std::string::npos ? " on PATH" : "")
                << ". ember compiles the kernels it generates with a C++ compiler at run time. "
                << "Point EMBER_CXX at a C++ compiler (for example EMBER_CXX=/usr/bin/g++), or "
                << "unset it to use g++, c++ or clang++ from PATH.");
  }
  std::vector<std::string> tried;
  if (!cxx.empty()) {
    if (auto found = resolve_program(cxx, path)) return *found;
    // An explicit choice that does not work is not replaced silently by another compiler.
    EMBER_THROW("no C++ compiler was found: CXX is set to '"
                << cxx << "', which is not an executable file"
                << (cxx.find('/') == std::string::npos ? " on PATH" : "")
                << ". ember compiles the kernels it generates with a C++ compiler at run time. "
                << "Set CXX (or EMBER_CXX, which takes precedence) to a C++ compiler, or unset "
                << "it to use g++, c++ or clang++ from PATH.");
  }
  for (const char* name : {"g++", "c++", "clang++"}) {
    tried.push_back(name);
    if (auto found = resolve_program(name, path)) return *found;
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  EMBER_THROW("no C++ compiler was found. ember compiles the kernels it generates with a C++ "
              << "compiler at run time; it tried " << list << " (PATH=" << path
              << "). Install g++ or clang++ (for example `apt install g++`), or set EMBER_CXX "
              << "to the path of a C++ compiler.");
}

}  // namespace

const CompilerInfo& find_compiler() {
  std::string ember_cxx = env_or_empty("EMBER_CXX");
  std::string cxx = env_or_empty("CXX");
  std::string path = env_or_empty("PATH");
  std::string env_key = ember_cxx + '\n' + cxx + '\n' + path;
  CompilerCache& cache = compiler_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  auto it = cache.by_env.find(env_key);
  if (it != cache.by_env.end()) return *it->second;
  CompilerInfo info = probe_compiler(find_compiler_path(ember_cxx, cxx, path));
  debug_log("using C++ compiler " + info.path + " (" + info.version + ")");
  cache.storage.push_back(std::move(info));
  cache.by_env[env_key] = &cache.storage.back();
  return cache.storage.back();
}

namespace {

// <cache>/compiler: the identity (path, version) of the compiler that built the cache's
// kernels, so that a machine without a compiler can still find them.
fs::path identity_file() { return detail::compiler_identity_file(cache_dir()); }

void remember_identity(const CompilerInfo& c) {
  static std::mutex mu;
  static std::set<std::string> done;
  const std::string text = c.path + "\n" + c.version + "\n";
  std::lock_guard<std::mutex> lock(mu);
  if (!done.insert(cache_dir() + "\n" + text).second) return;
  std::error_code ec;
  const fs::path file = identity_file();
  {
    std::ifstream in(file);
    std::stringstream old;
    old << in.rdbuf();
    if (in && old.str() == text) return;
  }
  const fs::path tmp = file.string() + ".tmp." + unique_suffix();
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) {  // a read-only cache: nothing to record
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) fs::remove(tmp, ec);
}

std::optional<CompilerInfo> recalled_identity() {
  std::ifstream in(identity_file());
  CompilerInfo c;
  if (!std::getline(in, c.path) || !std::getline(in, c.version) || c.path.empty())
    return std::nullopt;
  return c;
}

}  // namespace

const CompilerInfo& compiler_for_keys() {
  try {
    const CompilerInfo& c = find_compiler();
    remember_identity(c);
    return c;
  } catch (const Error&) {
    // Only when nothing was asked for: an EMBER_CXX or CXX that does not work stays an error.
    if (!env_or_empty("EMBER_CXX").empty() || !env_or_empty("CXX").empty()) throw;
    std::optional<CompilerInfo> recalled = recalled_identity();
    if (!recalled) throw;
    CompilerCache& cache = compiler_cache();
    std::lock_guard<std::mutex> lock(cache.mu);
    for (const CompilerInfo& c : cache.storage)
      if (c.path == recalled->path && c.version == recalled->version) return c;
    cache.storage.push_back(*recalled);
    return cache.storage.back();
  }
}

void reset_compiler_cache() {
  CompilerCache& cache = compiler_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.by_env.clear();
}

}  // namespace ember
