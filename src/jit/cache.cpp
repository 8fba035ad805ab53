#include "ember/jit/cache.h"

#include <dlfcn.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>

#include "cache_layout.h"
#include "ember/jit/compiler.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "ember/support/log.h"
#include "process.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

namespace ember {
namespace fs = std::filesystem;

namespace detail {
void debug_log(const std::string& msg) {
  if (log_enabled("debug")) log_message("debug", msg);
}

std::string unique_suffix() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t r;
  {
    std::lock_guard<std::mutex> lock(mu);
    r = rng();
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%d.%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(r));
  return buf;
}
}  // namespace detail

using detail::debug_log;
using detail::env_or_empty;

namespace {

constexpr char kManifestHeader[] = "ember-kernel-manifest 1";
constexpr char kAbiFunction[] = "ember_module_abi";
// Appended to the first translation unit so that the loader can refuse a module built
// against other runtime headers than the ones this library was compiled with.
constexpr char kAbiDefinition[] =
    "\n\n// Added by ember's kernel cache: the loader checks the runtime ABI version.\n"
    "#include <ember_rt/kernel.h>\n"
    "extern \"C\" int ember_module_abi() { return EMBER_RT_ABI_VERSION; }\n";

fs::path home_dir() {
  std::string home = env_or_empty("HOME");
  if (!home.empty()) return home;
  struct passwd pw;
  struct passwd* result = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  return {};
}

// The cache root and where its location came from, for error messages.
std::pair<fs::path, std::string> choose_cache_root() {
  std::string env = env_or_empty("EMBER_CACHE_DIR");
  if (!env.empty()) return {env, "set by EMBER_CACHE_DIR"};
  std::string xdg = env_or_empty("XDG_CACHE_HOME");
  // The XDG spec says relative values are invalid and must be ignored.
  if (!xdg.empty() && fs::path(xdg).is_absolute()) {
    return {fs::path(xdg) / "ember", "from XDG_CACHE_HOME"};
  }
  fs::path home = home_dir();
  EMBER_CHECK(!home.empty(),
              "ember cannot choose a directory for its kernel cache: none of EMBER_CACHE_DIR, "
              "XDG_CACHE_HOME and HOME is set. Set EMBER_CACHE_DIR to a writable directory.");
  return {home / ".cache" / "ember", "the default"};
}

}  // namespace

std::string cache_dir() {
  static std::mutex mu;
  static std::set<std::string> verified;
  auto [root, origin] = choose_cache_root();
  fs::path dir = fs::absolute(root).lexically_normal();
  if (!dir.has_filename() && dir.has_parent_path() && dir != dir.root_path()) {
    dir = dir.parent_path();  // drop a trailing slash
  }
  std::string dir_string = dir.string();
  std::lock_guard<std::mutex> lock(mu);
  if (verified.count(dir_string) != 0) return dir_string;
  std::error_code ec;
  fs::create_directories(dir, ec);
  // A read-only directory is usable: its kernels load; building a missing one is the error
  // (build_entry says which directory it could not write).
  bool usable = fs::is_directory(dir, ec) && access(dir.c_str(), R_OK | X_OK) == 0;
  EMBER_CHECK(usable, "ember cannot use '"
                          << dir_string << "' (" << origin << ") as its kernel cache directory: "
                          << (ec ? ec.message() : std::string("it is not a readable directory"))
                          << ". ember keeps the kernels it compiles there. Set EMBER_CACHE_DIR "
                          << "to a writable directory, for example EMBER_CACHE_DIR=/tmp/ember.");
  verified.insert(dir_string);
  return dir_string;
}

// -----------------------------------------------------------------------------------------
// Module.

Module::Module(void* handle, std::string key, std::string dir)
    : handle_(handle), key_(std::move(key)), dir_(std::move(dir)) {}

Module::~Module() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* Module::find_symbol(const std::string& name) const { return dlsym(handle_, name.c_str()); }

ember_kernel_fn Module::symbol(const std::string& name) const {
  void* p = find_symbol(name);
  EMBER_ASSERT(p != nullptr, "kernel module " << dir_ << " has no symbol '" << name << "'");
  return reinterpret_cast<ember_kernel_fn>(p);
}

// -----------------------------------------------------------------------------------------
// Keys, manifests and entries.

namespace {

// A request with everything that goes into its key resolved.
struct Prepared {
  std::string name;
  Isa isa;
  std::vector<std::string> sources;
  std::vector<std::string> flags;
  const CompilerInfo* compiler;
  std::string key;
  std::function<void(int, int)> progress;  // not part of the key
  std::vector<std::string> unit_contents;  // not part of the key (BuildRequest)
};

Prepared prepare(const BuildRequest& request) {
  EMBER_ASSERT(!request.sources.empty(), "build request '" << request.name << "' has no sources");
  Prepared p{request.name,         request.isa, request.sources,  base_flags(),
             &compiler_for_keys(), "",          request.progress, request.unit_contents};
  bool has_abi = std::any_of(p.sources.begin(), p.sources.end(), [](const std::string& s) {
    return s.find(kAbiFunction) != std::string::npos;
  });
  if (!has_abi) p.sources[0] += kAbiDefinition;
  for (const std::string& f : isa_flags(request.isa)) p.flags.push_back(f);
  for (const std::string& f : request.extra_flags) p.flags.push_back(f);
  // Every field is length-prefixed and every list is preceded by its size, so no two
  // different requests serialize to the same bytes.
  Sha256 h;
  h.field("ember-kernel-cache-v1").field(EMBER_VERSION);
  h.field(std::to_string(EMBER_RT_ABI_VERSION)).field(runtime_include_hash());
  h.field(p.compiler->path).field(p.compiler->version).field(isa_name(p.isa));
  h.field(std::to_string(p.flags.size()));
  for (const std::string& f : p.flags) h.field(f);
  h.field(std::to_string(p.sources.size()));
  for (const std::string& s : p.sources) h.field(s);
  p.key = h.hex_digest();
  return p;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : " ") + s;
  return out;
}

std::string manifest_text(const Prepared& p, uintmax_t so_size, const std::string& so_sha256) {
  std::ostringstream out;
  out << kManifestHeader << "\n"
      << "key " << p.key << "\n"
      << "name " << p.name << "\n"
      << "module.so.size " << so_size << "\n"
      << "module.so.sha256 " << so_sha256 << "\n"
      << "compiler " << p.compiler->path << "\n"
      << "compiler_version " << p.compiler->version << "\n"
      << "isa " << isa_name(p.isa) << "\n"
      << "flags " << join(p.flags) << "\n"
      << "sources " << p.sources.size() << "\n"
      << "ember_version " << EMBER_VERSION << "\n"
      << "created " << utc_now() << "\n"
      << "end\n";
  return out.str();
}

// The manifest's "name value" lines, or nullopt unless it is complete: it must start with
// the header line and end with "end", so that a truncated file is never trusted.
std::optional<std::map<std::string, std::string>> read_manifest(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != kManifestHeader) return std::nullopt;
  std::map<std::string, std::string> fields;
  while (std::getline(in, line)) {
    if (line == "end") return in.eof() || in.peek() == EOF ? std::optional(fields) : std::nullopt;
    size_t space = line.find(' ');
    if (space == std::string::npos) return std::nullopt;
    fields[line.substr(0, space)] = line.substr(space + 1);
  }
  return std::nullopt;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  EMBER_CHECK(out.good(), "ember cannot write " << path.string()
                                                << " in its kernel cache: " << std::strerror(errno)
                                                << ". Check the free space there, or set "
                                                << "EMBER_CACHE_DIR to another directory.");
}

// Loads the entry when it is complete and intact. Otherwise returns nullptr and says why
// in *why (left empty when there is no entry at all). Never dlopens a file whose hash does
// not match the manifest: loading a corrupt shared object can crash the process.
std::shared_ptr<Module> load_entry(const fs::path& entry, const std::string& key,
                                   std::string* why) {
  why->clear();
  auto fail = [why](std::string reason) {
    *why = std::move(reason);
    return std::shared_ptr<Module>();
  };
  std::error_code ec;
  if (!fs::exists(entry, ec)) return nullptr;
  auto manifest = read_manifest(entry / "manifest.txt");
  fs::path so = entry / "module.so";
  if (!manifest) return fail("manifest.txt is missing or incomplete");
  if ((*manifest)["key"] != key) return fail("manifest.txt names another key");
  uintmax_t size = fs::file_size(so, ec);
  if (ec || std::to_string(size) != (*manifest)["module.so.size"]) {
    return fail("module.so is missing or has the wrong size");
  }
  if (sha256_file_hex(so.string()) != (*manifest)["module.so.sha256"]) {
    return fail("module.so does not match the SHA-256 in manifest.txt");
  }
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return fail(std::string("dlopen failed: ") + (err != nullptr ? err : "unknown error"));
  }
  auto module = std::make_shared<Module>(handle, key, entry.string());
  auto abi = reinterpret_cast<int (*)()>(module->find_symbol(kAbiFunction));
  if (abi == nullptr) return fail("module.so does not export ember_module_abi");
  if (int v = abi(); v != EMBER_RT_ABI_VERSION) {
    return fail("module.so was built for runtime ABI " + std::to_string(v) + ", not " +
                std::to_string(EMBER_RT_ABI_VERSION));
  }
  return module;
}

// Removes an unusable entry. It is first renamed into tmp/ (atomic), so another process
// sees either the old entry or none, then deleted. Only kernels/<key[0:2]>/<key> with a
// hexadecimal key is ever touched, so nothing outside the cache can be removed.
void discard_entry(const fs::path& root, const std::string& key) {
  EMBER_ASSERT(detail::is_key(key), "refusing to delete a cache entry with key '" << key << "'");
  fs::path entry = detail::kernel_entry_dir(root, key);
  fs::path grave = detail::kernels_tmp_dir(root) / (key + ".bad." + detail::unique_suffix());
  std::error_code ec;
  fs::create_directories(grave.parent_path(), ec);
  if (detail::retire_dir(entry, grave) < 0) fs::remove_all(entry, ec);
}

// Deletes leftovers of builds that crashed or failed, once per process and cache.
void remove_stale_temporaries_once(const fs::path& root) {
  static std::mutex mu;
  static std::set<std::string> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!done.insert(root.string()).second) return;
  }
  detail::remove_stale_temporaries(root);
}

struct Built {
  double seconds = 0.0;
  bool published = false;  // false: another process published this key first
  int64_t bytes = 0;       // of the files published
};

// Writes the sources, compiles them and publishes the entry. On a compile failure the
// temporary directory is left for reading (the error names it).
Built build_entry(const Prepared& p, const fs::path& root) {
  fs::path tmp = detail::kernels_tmp_dir(root) / (p.key + "." + detail::unique_suffix());
  std::error_code ec;
  fs::create_directories(tmp, ec);
  EMBER_CHECK(!ec, "ember cannot create " << tmp.string()
                                          << " in its kernel cache: " << ec.message()
                                          << ". Set EMBER_CACHE_DIR to a writable directory.");
  remove_stale_temporaries_once(root);
  std::vector<std::string> paths;
  int64_t bytes = 0;
  for (size_t i = 0; i < p.sources.size(); ++i) {
    paths.push_back((tmp / ("kernel_" + std::to_string(i) + ".cpp")).string());
    write_file(paths.back(), p.sources[i]);
    bytes += static_cast<int64_t>(p.sources[i].size());
  }
  fs::path so = tmp / "module.so";
  auto start = std::chrono::steady_clock::now();
  try {
    compile_shared(paths, so.string(), p.flags, true, p.progress);
  } catch (const Error& e) {
    // The compiler's own failures (a time-out, a kill) name the source file: say which
    // kernels it holds.
    const std::string what = e.what();
    for (size_t i = 0; i < paths.size() && i < p.unit_contents.size(); ++i) {
      if (what.find(paths[i]) != std::string::npos) {
        EMBER_THROW(what << "\n  " << fs::path(paths[i]).filename().string() << " of " << p.name
                         << " holds: " << p.unit_contents[i]);
      }
    }
    throw;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::optional<std::string> sha = sha256_file_hex(so.string());
  uintmax_t size = fs::file_size(so, ec);
  EMBER_ASSERT(sha && !ec, "cannot read the module just built: " << so.string());
  const std::string manifest = manifest_text(p, size, *sha);
  write_file(tmp / "manifest.txt", manifest);
  bytes += static_cast<int64_t>(size + manifest.size());
  fs::path entry = detail::kernel_entry_dir(root, p.key);
  // rename() of a directory fails when the target exists and is not empty: then another
  // process published the same key first. Its entry is built from the same inputs, so keep
  // it and drop ours (load_or_build checks it like any other entry). It fails with ENOENT
  // when clear_cache() removed the shard directory just created: then create it again.
  bool renamed = false;
  int why = 0;
  for (int attempt = 0; attempt < 3 && !renamed; ++attempt) {
    fs::create_directories(entry.parent_path(), ec);
    renamed = std::rename(tmp.c_str(), entry.c_str()) == 0;
    why = renamed ? 0 : errno;
    if (why != ENOENT) break;
  }
  if (!renamed && why != ENOTEMPTY && why != EEXIST) {
    fs::remove_all(tmp, ec);
    EMBER_THROW("ember cannot publish the kernel module it built into its cache: renaming "
                << tmp.string() << " to " << entry.string() << " failed (" << std::strerror(why)
                << "). Check that the cache directory is writable, or set "
                << "EMBER_CACHE_DIR to one that is.");
  }
  Built built{seconds, renamed, bytes};
  if (!built.published) {
    debug_log("cache entry " + entry.string() + " not published (" + std::strerror(why) +
              "); using the one already there");
    fs::remove_all(tmp, ec);
  }
  debug_log("built " + p.name + " (" + p.key + ") in " + std::to_string(seconds) + " s");
  return built;
}

struct Loaded {
  std::shared_ptr<Module> module;
  bool built = false;
  double build_seconds = 0.0;
};

Loaded load_or_build(const Prepared& p) {
  const fs::path root = cache_dir();
  const fs::path entry = detail::kernel_entry_dir(root, p.key);
  std::string why;
  if (auto module = load_entry(entry, p.key, &why)) {
    detail::touch(entry);  // used now: prune_cache evicts the least recently used
    return {module, false, 0.0};
  }
  const int64_t max_size = cache_max_size_from_env();  // an invalid value fails before building
  for (int attempt = 0;; ++attempt) {
    if (!why.empty()) {
      debug_log("cache entry " + entry.string() + " is unusable (" + why + "); rebuilding it");
      discard_entry(root, p.key);
    }
    Built built = build_entry(p, root);
    if (auto module = load_entry(entry, p.key, &why)) {
      if (built.published && max_size >= 0) detail::bound_cache(max_size, built.bytes);
      return {module, true, built.seconds};
    }
    // A module that fails to load right after being built is ember's bug. Losing the
    // publish race to a process whose entry then proves bad is worth one more try.
    EMBER_ASSERT(!built.published && attempt == 0,
                 "the kernel module just built in "
                     << entry.string() << " cannot be loaded: "
                     << (why.empty() ? std::string("the entry vanished") : why));
  }
}

// Modules kept loaded after every graph using them is gone (the most recently used ones),
// so that building the same graph again costs no dlopen; the rest are unloaded with their
// last graph.
constexpr size_t kHeldModules = 32;

struct CacheState {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<Module>> modules;
  std::list<std::string> recent;  // keys of `modules`, most recently used first
  // Every module loaded so far, while something holds it: after clear_memory_cache() a key
  // whose module is still alive returns it rather than dlopening the same path again
  // (glibc would hand back the old handle anyway, even for a file rebuilt since).
  std::unordered_map<std::string, std::weak_ptr<Module>> live;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<Module>>> in_flight;
  CacheStats stats;
};

// Leaked on purpose: modules must not be dlclosed during static destruction while other
// static objects may still call into them.
CacheState& state() {
  static auto* s = new CacheState;
  return *s;
}

// Holds `module` as the most recently used; returns the module that falls out, if any (to be
// released outside the lock: dlclose can take a while).
std::shared_ptr<Module> hold(CacheState& s, const std::string& key,
                             std::shared_ptr<Module> module) {
  s.recent.remove(key);
  s.recent.push_front(key);
  s.modules[key] = std::move(module);
  if (s.recent.size() <= kHeldModules) return nullptr;
  auto it = s.modules.find(s.recent.back());
  s.recent.pop_back();
  std::shared_ptr<Module> out = std::move(it->second);
  s.modules.erase(it);
  return out;
}

std::shared_ptr<Module> find_in_memory(CacheState& s, const std::string& key,
                                       std::shared_ptr<Module>* evicted) {
  if (auto it = s.modules.find(key); it != s.modules.end()) {
    std::shared_ptr<Module> module = it->second;
    *evicted = hold(s, key, module);
    return module;
  }
  if (auto it = s.live.find(key); it != s.live.end()) {
    if (auto module = it->second.lock()) {
      *evicted = hold(s, key, module);
      return module;
    }
    s.live.erase(it);
  }
  return nullptr;
}

}  // namespace

std::string cache_key(const BuildRequest& request) { return prepare(request).key; }

std::shared_ptr<Module> get_or_build(const BuildRequest& request) {
  Prepared p = prepare(request);
  CacheState& s = state();
  std::promise<std::shared_ptr<Module>> promise;
  std::shared_ptr<Module> evicted;  // released after the lock
  {
    std::unique_lock<std::mutex> lock(s.mu);
    if (auto module = find_in_memory(s, p.key, &evicted)) {
      ++s.stats.memory_hits;
      return module;
    }
    if (auto it = s.in_flight.find(p.key); it != s.in_flight.end()) {
      // Another thread is building this key: wait for it (its error is ours too).
      std::shared_future<std::shared_ptr<Module>> future = it->second;
      lock.unlock();
      std::shared_ptr<Module> module = future.get();
      lock.lock();
      ++s.stats.memory_hits;
      return module;
    }
    s.in_flight.emplace(p.key, promise.get_future().share());
  }
  try {
    Loaded loaded = load_or_build(p);
    {
      std::lock_guard<std::mutex> lock(s.mu);
      evicted = hold(s, p.key, loaded.module);
      s.live[p.key] = loaded.module;
      s.in_flight.erase(p.key);
      if (loaded.built) {
        ++s.stats.builds;
        s.stats.build_seconds += loaded.build_seconds;
      } else {
        ++s.stats.disk_hits;
      }
    }
    promise.set_value(loaded.module);
    return loaded.module;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.in_flight.erase(p.key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

CacheStats cache_stats() {
  CacheState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.stats;
}

void reset_cache_stats() {
  CacheState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats = CacheStats{};
}

void clear_memory_cache() {
  CacheState& s = state();
  std::unordered_map<std::string, std::shared_ptr<Module>> dropped;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    dropped.swap(s.modules);
    s.recent.clear();
  }
  // `dropped` dies here, outside the lock: dlclose can take a while.
}

}  // namespace ember
