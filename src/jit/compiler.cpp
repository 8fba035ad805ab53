#include "ember/jit/compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <semaphore>
#include <set>
#include <sstream>
#include <thread>

#include "cache_layout.h"
#include "ember/jit/cache.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "ember_rt/pieces_include.h"
#include "process.h"

namespace ember {
namespace fs = std::filesystem;

namespace {

using detail::debug_log;
using detail::env_or_empty;
using detail::ProcessResult;
using detail::quote_command;
using detail::run_process;
using detail::unique_suffix;

}  // namespace

double compile_timeout_seconds() {
  const std::string env = env_or_empty("EMBER_COMPILE_TIMEOUT");
  if (env.empty()) return 600;
  char* end = nullptr;
  const double v = std::strtod(env.c_str(), &end);
  EMBER_CHECK(end != env.c_str() && *end == '\0' && v > 0,
              "EMBER_COMPILE_TIMEOUT must be a positive number of seconds, got '" << env << "'");
  return v;
}

double probe_timeout_seconds() { return std::min(60.0, compile_timeout_seconds()); }

std::vector<std::string> base_flags() {
  std::vector<std::string> flags = {"-std=c++20",
                                    "-O2",
                                    "-fPIC",
                                    "-pipe",
                                    "-fwrapv",  // signed integers wrap, as in PyTorch
                                    "-fno-math-errno",
                                    "-ffp-contract=off",
                                    "-fno-semantic-interposition",
                                    "-fvisibility-inlines-hidden",
                                    "-ffunction-sections"};
  // Not -fno-trapping-math: with it GCC folds (float)(int)x into trunc(x), which keeps the
  // sign of a zero (trunc(-0.5) is -0.0 where the round trip gives +0.0).
  // (-ffunction-sections: the link's --gc-sections drops the functions that no export
  // reaches, such as the GEMM paths a module's calls never take; compile_shared.)
  // g++ gives static locals of inline functions and inline variables STB_GNU_UNIQUE binding,
  // which makes dlclose a no-op; without this, every module ever loaded (tuning loads many)
  // would stay mapped. Clang does not use that binding and does not know the flag.
  if (compiler_for_keys().version.find("clang") == std::string::npos) {
    flags.push_back("-fno-gnu-unique");
  }
#ifdef EMBER_KERNEL_SANITIZE
  // An ember built with sanitizers builds its kernels with them too (EMBER_SANITIZE).
  flags.push_back("-fsanitize=" EMBER_KERNEL_SANITIZE);
  flags.push_back("-fno-omit-frame-pointer");
  flags.push_back("-fno-sanitize-recover=undefined");
#endif
  flags.push_back("-DNDEBUG");
  flags.push_back("-I" + runtime_include_dir());
  return flags;
}

// -----------------------------------------------------------------------------------------
// Precompiled header and compilation.

namespace {

// Limits compiler processes across the whole process (parallel builds of different modules
// included) to the number of cores: more would only add memory pressure.
class CompileSlot {
 public:
  CompileSlot() { slots().acquire(); }
  ~CompileSlot() { slots().release(); }
  CompileSlot(const CompileSlot&) = delete;
  CompileSlot& operator=(const CompileSlot&) = delete;

 private:
  static std::counting_semaphore<4096>& slots() {
    static auto* s = new std::counting_semaphore<4096>(
        std::clamp<std::ptrdiff_t>(std::thread::hardware_concurrency(), 1, 4096));
    return *s;
  }
};

ProcessResult run_compiler(const std::vector<std::string>& argv) {
  CompileSlot slot;
  return run_process(argv, compile_timeout_seconds());
}

struct Pch {
  std::string key;
  std::string header;  // pass as `-include <header>`; <header>.gch lies next to it
};

struct PchState {
  std::mutex mu;  // held while a header is precompiled, so other builds wait and use it
  std::set<std::string> failed;
};

PchState& pch_state() {
  static auto* state = new PchState;
  return *state;
}

// Precompiles <dir>/all.h, a one-line wrapper around <ember_rt/all.h>, into
// <dir>/all.h.gch. Both are written aside and renamed into place so that a concurrent
// process never sees a partial file.
bool build_pch(const CompilerInfo& cc, const std::vector<std::string>& flags, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    debug_log("cannot create " + dir.string() + ": " + ec.message());
    return false;
  }
  // Leftovers of processes killed while precompiling (a header is tens of MB). None can be
  // in progress for longer than the compile time limit, so older ones are stale.
  const auto cutoff = fs::file_time_type::clock::now() -
                      std::chrono::duration_cast<fs::file_time_type::duration>(
                          std::chrono::duration<double>(2 * compile_timeout_seconds() + 60));
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code ec2;
    const std::string name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos && e.last_write_time(ec2) < cutoff && !ec2)
      fs::remove(e.path(), ec2);
  }
  std::string suffix = unique_suffix();
  fs::path wrapper_tmp = dir / ("all.h.tmp." + suffix);
  {
    std::ofstream out(wrapper_tmp);
    out << "// Precompiled by ember for the flags recorded in the directory name's hash.\n"
        << "#include <ember_rt/all.h>\n";
    if (!out) return false;
  }
  fs::rename(wrapper_tmp, dir / "all.h", ec);
  if (ec) {
    fs::remove(wrapper_tmp, ec);
    return false;
  }
  fs::path gch_tmp = dir / ("all.h.gch.tmp." + suffix);
  std::vector<std::string> argv = {cc.path};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-x", "c++-header", (dir / "all.h").string(), "-o", gch_tmp.string()});
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_compiler(argv);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.started || r.exit_code != 0 || !fs::exists(gch_tmp, ec)) {
    debug_log("precompiling ember_rt/all.h failed; compiling without it. Command: " +
              quote_command(argv) + "\n" + r.output.substr(0, 4000));
    fs::remove(gch_tmp, ec);
    return false;
  }
  fs::rename(gch_tmp, dir / "all.h.gch", ec);
  if (ec) {
    fs::remove(gch_tmp, ec);
    return false;
  }
  debug_log("precompiled ember_rt/all.h in " + std::to_string(seconds) + " s into " + dir.string());
  return true;
}

std::optional<Pch> prepare_pch(const CompilerInfo& cc, const std::vector<std::string>& flags) {
  std::string headers_hash, root;
  try {
    headers_hash = runtime_include_hash();
    root = cache_dir();
  } catch (const Error& e) {
    debug_log(std::string("no precompiled header: ") + e.what());
    return std::nullopt;
  }
  // The header must be rebuilt whenever anything that the compiler checks when it loads a
  // precompiled header could differ: the compiler, every flag, and the headers' contents.
  Sha256 h;
  h.field("ember-pch-v1").field(cc.path).field(cc.version).field(headers_hash);
  for (const std::string& f : flags) h.field(f);
  Pch pch{h.hex_digest(), ""};
  fs::path dir = detail::pch_root(root) / pch.key;
  pch.header = (dir / "all.h").string();
  PchState& state = pch_state();
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.failed.count(pch.key) != 0) return std::nullopt;
  // Checked on every use, not only once: clear_cache() or prune_cache() (in any process)
  // may have removed it since; it is then built again.
  std::error_code ec;
  if (!(fs::exists(dir / "all.h", ec) && fs::exists(dir / "all.h.gch", ec)) &&
      !build_pch(cc, flags, dir)) {
    state.failed.insert(pch.key);
    return std::nullopt;
  }
  detail::touch(dir);  // used now: prune_cache evicts the least recently used
  return pch;
}

void forget_pch(const std::string& key) {
  PchState& state = pch_state();
  std::lock_guard<std::mutex> lock(state.mu);
  state.failed.insert(key);
}

// What every translation unit is compiled with in front: ember_rt/all.h, through its
// precompiled form when there is one. Generated code sees the same declarations whether
// or not the precompiled header could be built.
struct Prelude {
  std::string header;   // for -include
  std::string pch_key;  // empty when `header` is the plain all.h
  std::string plain;    // the plain all.h
  std::string pch_dir;  // the precompiled header's directory; empty without one
};

std::optional<Prelude> prepare_prelude(const CompilerInfo& cc,
                                       const std::vector<std::string>& flags, bool use_pch) {
  fs::path all = fs::path(runtime_include_dir()) / "ember_rt" / "all.h";
  std::error_code ec;
  if (!fs::exists(all, ec)) {
    debug_log("no " + all.string() + "; compiling without a prelude header");
    return std::nullopt;
  }
  Prelude prelude{all.string(), "", all.string(), ""};
  if (!use_pch) return prelude;
  if (std::optional<Pch> pch = prepare_pch(cc, flags)) {
    prelude.header = pch->header;
    prelude.pch_key = pch->key;
    prelude.pch_dir = fs::path(pch->header).parent_path().string();
  }
  return prelude;
}

std::string describe_failure(const std::vector<std::string>& argv, const ProcessResult& r) {
  constexpr int kMaxLines = 50;
  std::ostringstream msg;
  msg << "the C++ code ember generated failed to compile.\n  command: " << quote_command(argv)
      << "\n  exit status: " << r.exit_code << "\n";
  std::istringstream lines(r.output);
  std::string line, shown;
  int count = 0;
  while (std::getline(lines, line)) {
    if (count++ < kMaxLines) shown += "    " + line + "\n";
  }
  msg << "  compiler output (" << (count > kMaxLines ? "first 50 of " : "") << count << " lines):\n"
      << shown;
  return msg.str();
}

// Runs one compiler command that must produce `output`. What the machine did (a compiler
// that could not start, was killed, ran out of time, or succeeded without output) is an
// ember::Error; diagnostics on ember's generated code are an InternalError.
void run_checked(const std::vector<std::string>& argv, const std::string& output) {
  ProcessResult r = run_compiler(argv);
  std::error_code ec;
  if (r.started && r.exit_code == 0 && fs::exists(output, ec)) return;
  EMBER_CHECK(r.started, "ember could not run the C++ compiler '"
                             << argv[0] << "': " << r.output
                             << ". Set EMBER_CXX to a working C++ compiler.");
  EMBER_CHECK(!r.timed_out, "the C++ compiler ran longer than "
                                << compile_timeout_seconds() << " s building " << output
                                << " and was stopped; raise "
                                << "EMBER_COMPILE_TIMEOUT (seconds) if the machine is slow."
                                << "\n  command: " << quote_command(argv));
  EMBER_CHECK(r.exit_code < 128, "the C++ compiler was killed (signal "
                                     << r.exit_code - 128 << ") while building " << output
                                     << " (out of memory?)\n  command: " << quote_command(argv));
  EMBER_CHECK(r.exit_code != 0, "the C++ compiler '" << argv[0] << "' exited successfully but "
                                                     << "wrote no " << output << "; is EMBER_CXX "
                                                     << "a working C++ compiler?");
  throw InternalError(describe_failure(argv, r));
}

// Runs `<cc> <flags> [-include <prelude>] <tail>`. When it fails with the precompiled
// header, it runs again with the plain header: a precompiled header the compiler rejects
// must not break a build, and only the diagnostics without it are worth reporting.
void run_step(const CompilerInfo& cc, const std::vector<std::string>& flags,
              const std::optional<Prelude>& prelude, const std::vector<std::string>& tail,
              const std::string& output) {
  auto command = [&](const std::string* header) {
    std::vector<std::string> argv = {cc.path};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (header != nullptr) argv.insert(argv.end(), {"-include", *header});
    argv.insert(argv.end(), tail.begin(), tail.end());
    return argv;
  };
  if (!prelude) return run_checked(command(nullptr), output);
  if (prelude->pch_key.empty()) return run_checked(command(&prelude->header), output);
  try {
    run_checked(command(&prelude->header), output);
    return;
  } catch (const InternalError&) {
    debug_log("compiling with the precompiled header failed; retrying without it");
  }
  run_checked(command(&prelude->plain), output);
  forget_pch(prelude->pch_key);  // it worked without: stop using the precompiled header
}

// ---- the pieces of the runtime's routines, compiled once per flag set ------------------------

constexpr const char* kPiecesObject = "pieces.o";
constexpr const char* kPiecesDefine = "-DEMBER_RT_PIECES_PREBUILT";

bool includes_pieces(const std::vector<std::string>& sources) {
  for (const std::string& path : sources) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find(ember_rt::kPiecesInclude) != std::string::npos) return true;
  }
  return false;
}

// <pch dir>/pieces.o, compiled from ember_rt/pieces.h with `flags` and the
// precompiled header (written aside and renamed into place, as the header is). nullopt when
// there is no precompiled header, or the object cannot be built: the module then defines the
// pieces itself.
std::optional<std::string> prepare_pieces(const CompilerInfo& cc,
                                          const std::vector<std::string>& flags,
                                          const std::optional<Prelude>& prelude) {
  if (!prelude || prelude->pch_dir.empty()) return std::nullopt;
  const fs::path dir(prelude->pch_dir);
  const fs::path object = dir / kPiecesObject;
  static std::mutex mu;  // one build per process at a time; the others wait and use it
  std::lock_guard<std::mutex> lock(mu);
  static std::set<std::string> failed;
  if (failed.count(object.string()) != 0) return std::nullopt;
  std::error_code ec;
  if (fs::exists(object, ec)) return object.string();
  const std::string suffix = unique_suffix();
  const fs::path source = dir / ("pieces.cpp.tmp." + suffix);
  const fs::path object_tmp = dir / (std::string(kPiecesObject) + ".tmp." + suffix);
  {
    std::ofstream out(source);
    out << "// The runtime's pieces, compiled by ember once for the flags of this directory.\n"
        << "#include <ember_rt/pieces.h>\n";
  }
  auto start = std::chrono::steady_clock::now();
  try {
    // Hidden: nothing in the object is a root of the module's --gc-sections (the static
    // tables of micro-kernel pointers would be exported, and keep every micro-kernel).
    run_step(cc, flags, prelude,
             {"-fvisibility=hidden", "-x", "c++", "-c", source.string(), "-o", object_tmp.string()},
             object_tmp.string());
    fs::rename(object_tmp, object, ec);
  } catch (const std::exception& e) {
    debug_log(std::string("compiling the pieces failed; modules define them: ") + e.what());
    ec = std::make_error_code(std::errc::io_error);
  }
  std::error_code ignored;
  fs::remove(source, ignored);
  if (ec) {
    fs::remove(object_tmp, ec);
    failed.insert(object.string());
    return std::nullopt;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  debug_log("compiled the pieces in " + std::to_string(seconds) + " s into " + object.string());
  return object.string();
}

// A module built without the prebuilt pieces after it failed with them (a damaged object):
// remove the object, so that the next module builds it again.
void forget_pieces(const std::string& object) {
  debug_log("removing " + object + ", with which a module failed to build");
  std::error_code ec;
  fs::remove(object, ec);
}

// Compiles sources[i] to objects[i], several at a time; rethrows the first failure.
void compile_objects(const CompilerInfo& cc, const std::vector<std::string>& sources,
                     const std::vector<std::string>& objects, const std::vector<std::string>& flags,
                     const std::optional<Prelude>& prelude,
                     const std::function<void(int, int)>& progress) {
  size_t n = sources.size();
  std::atomic<int> done{0};
  const std::thread::id caller = std::this_thread::get_id();
  size_t workers = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::mutex error_mu;
  std::exception_ptr first_error;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        run_step(cc, flags, prelude, {"-c", sources[i], "-o", objects[i]}, objects[i]);
        int finished = done.fetch_add(1) + 1;
        // Reported from the calling thread only: the callback may hold a lock of its own
        // (Python's GIL) that the workers must not wait for.
        if (progress && std::this_thread::get_id() == caller)
          progress(finished, static_cast<int>(n) + 1);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!first_error) first_error = std::current_exception();
        next.store(n);  // no point in compiling the rest
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
  if (progress) progress(static_cast<int>(n), static_cast<int>(n) + 1);
}

// Links only the sections that the shared object's exports (kernels, ember_module_abi, ...)
// reach: with base_flags' -ffunction-sections, a function no call can reach is not in the
// module (the GEMM machinery keeps only the paths of its calls, ember_rt/gemm_erased.h).
constexpr const char* kGcSections = "-Wl,--gc-sections";

// The linker of modules: gold where the compiler can run it (-fuse-ld=gold), else the
// compiler's default. GNU ld takes about 50 ms per module to go through the sections of
// pieces.o (one per function, for --gc-sections); gold about 5. Whether the compiler can
// use gold is asked once per compiler and process (`<cc> -fuse-ld=gold -Wl,--version`).
// EMBER_LINKER=default keeps the compiler's own linker, EMBER_LINKER=gold asks for gold (an
// error where it does not run); any other value is an error (a misspelt `default` must not
// quietly link with gold).
std::vector<std::string> link_flags(const CompilerInfo& cc) {
  const std::string wanted = env_or_empty("EMBER_LINKER");
  if (wanted == "default") return {};
  if (!wanted.empty() && wanted != "gold") {
    EMBER_THROW("EMBER_LINKER is set to '"
                << wanted << "', which is not a linker ember knows. "
                << "Valid values are: default (the compiler's own linker), gold; unset "
                << "EMBER_LINKER to link with gold where the compiler can run it.");
  }
  static std::mutex mu;
  static std::map<std::string, bool> gold_works;  // by compiler path
  std::lock_guard<std::mutex> lock(mu);
  auto it = gold_works.find(cc.path);
  if (it == gold_works.end()) {
    ProcessResult r =
        run_process({cc.path, "-fuse-ld=gold", "-Wl,--version"}, probe_timeout_seconds());
    const bool works =
        r.started && r.exit_code == 0 && r.output.find("GNU gold") != std::string::npos;
    debug_log(std::string("linking modules with ") + (works ? "gold" : "the default linker"));
    it = gold_works.emplace(cc.path, works).first;
  }
  if (!it->second) {
    if (wanted == "gold") {
      EMBER_THROW("EMBER_LINKER=gold, but "
                  << cc.path << " cannot link with GNU gold ('" << cc.path
                  << " -fuse-ld=gold -Wl,--version' does not name it); install "
                  << "binutils' gold or unset EMBER_LINKER.");
    }
    return {};
  }
  return {"-fuse-ld=gold"};
}

// A C driver (gcc, cc, clang) compiles the kernels as C++ (they are passed with -x c++) but
// links the module without C++'s standard library, so a module that calls operator new
// (any GEMM's scratch) would fail to load with an undefined symbol. Whether the driver links
// one is asked once per compiler and process: `<cc> -### -shared -x c++ /dev/null` prints the
// commands it would run, and the link of a C++ driver names -lstdc++ (or clang's -lc++). A
// driver whose answer has no link line naming libc (another format) is not judged.
void check_links_cxx_runtime(const CompilerInfo& cc) {
  static std::mutex mu;
  static std::map<std::string, bool> links;  // by compiler path: whether it links C++'s library
  std::lock_guard<std::mutex> lock(mu);
  auto it = links.find(cc.path);
  if (it == links.end()) {
    const ProcessResult r =
        run_process({cc.path, "-###", "-shared", "-x", "c++", "/dev/null", "-o", "/dev/null"},
                    probe_timeout_seconds());
    auto names = [&](const char* flag) {
      const std::string& o = r.output;
      for (size_t at = o.find(flag); at != std::string::npos; at = o.find(flag, at + 1)) {
        const size_t end = at + std::strlen(flag);
        if (end == o.size() || o[end] == ' ' || o[end] == '"' || o[end] == '\n') return true;
      }
      return false;
    };
    const bool links_libc = names(" -lc") || names("\"-lc\"");
    const bool c_driver =
        r.started && r.exit_code == 0 && links_libc && !names("-lstdc++") && !names("-lc++");
    it = links.emplace(cc.path, !c_driver).first;
  }
  if (!it->second) {
    EMBER_THROW("the compiler " << cc.path << " (" << cc.version
                                << ") is a C driver: it does not link C++'s standard library "
                                << "('" << cc.path << " -### -shared -x c++ /dev/null' names "
                                << "neither -lstdc++ nor -lc++), so the kernel modules it links "
                                << "could not be loaded. Set EMBER_CXX to its C++ driver, such "
                                << "as /usr/bin/g++ or clang++.");
  }
}

}  // namespace

namespace {

// compile_shared with the pieces linked from `pieces` (when not empty; the units are
// then compiled with kPiecesDefine).
void compile_and_link(const CompilerInfo& cc, const std::vector<std::string>& sources,
                      const std::string& out_so, const std::vector<std::string>& flags,
                      const std::optional<Prelude>& prelude, const std::string& pieces,
                      const std::function<void(int, int)>& progress) {
  check_links_cxx_runtime(cc);  // before any work: they may refuse
  const std::vector<std::string> linker = link_flags(cc);
  std::vector<std::string> unit_flags = flags;
  if (!pieces.empty()) unit_flags.push_back(kPiecesDefine);
  if (sources.size() == 1) {
    std::vector<std::string> tail = linker;
    tail.insert(tail.end(), {"-shared", kGcSections, sources[0]});
    if (!pieces.empty()) tail.push_back(pieces);
    tail.insert(tail.end(), {"-o", out_so});
    run_step(cc, unit_flags, prelude, tail, out_so);
    if (progress) progress(1, 1);
    return;
  }
  std::vector<std::string> objects;
  for (size_t i = 0; i < sources.size(); ++i) {
    objects.push_back(out_so + "." + std::to_string(i) + ".o");
  }
  struct RemoveObjects {
    const std::vector<std::string>& paths;
    ~RemoveObjects() {
      std::error_code ec;
      for (const std::string& p : paths) fs::remove(p, ec);
    }
  } cleanup{objects};
  compile_objects(cc, sources, objects, unit_flags, prelude, progress);
  // The compile flags go to the link too: harmless there, and needed by flags such as -flto.
  std::vector<std::string> argv = {cc.path};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), linker.begin(), linker.end());
  argv.insert(argv.end(), {"-shared", kGcSections});
  argv.insert(argv.end(), objects.begin(), objects.end());
  if (!pieces.empty()) argv.push_back(pieces);
  argv.insert(argv.end(), {"-o", out_so});
  run_checked(argv, out_so);
  const int steps = static_cast<int>(sources.size()) + 1;
  if (progress) progress(steps, steps);
}

}  // namespace

void compile_shared(const std::vector<std::string>& sources, const std::string& out_so,
                    const std::vector<std::string>& flags, bool use_pch,
                    const std::function<void(int, int)>& progress) {
  EMBER_ASSERT(!sources.empty(), "compile_shared needs at least one source");
  const CompilerInfo& cc = find_compiler();
  std::optional<Prelude> prelude = prepare_prelude(cc, flags, use_pch);
  std::optional<std::string> pieces;
  if (includes_pieces(sources)) pieces = prepare_pieces(cc, flags, prelude);
  if (!pieces) return compile_and_link(cc, sources, out_so, flags, prelude, "", progress);
  try {
    compile_and_link(cc, sources, out_so, flags, prelude, *pieces, progress);
    return;
  } catch (const InternalError&) {
    debug_log("building with the prebuilt pieces failed; retrying without them");
  }
  // Only the module's own diagnostics are worth reporting: they come from this build.
  compile_and_link(cc, sources, out_so, flags, prelude, "", progress);
  forget_pieces(*pieces);  // it built without them: the object was the problem
}

}  // namespace ember
