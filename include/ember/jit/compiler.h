// The system C++ compiler that turns ember's generated source into shared objects.
//
// ember finds a compiler once per process (EMBER_CXX, then CXX, then g++, c++, clang++ on
// PATH), compiles the translation units of a module in parallel, and links them into one
// shared object. The runtime headers of ember_rt/ are precompiled once per compiler and
// flag set (see compile_shared) because parsing the intrinsic headers dominates the
// compile time of a small kernel.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ember {

struct CompilerInfo {
  std::string path;     // absolute path of the executable
  std::string version;  // first line of `path --version`
};

// The compiler to use: EMBER_CXX (a path or a name looked up on PATH) when set; else CXX
// when it names an executable; else the first of g++, c++, clang++ found on PATH. Cached
// per value of those variables, so changing them takes effect on the next call. Throws
// ember::Error when none is found, naming what was tried and EMBER_CXX.
const CompilerInfo& find_compiler();

// Forgets every compiler found so far (references returned earlier stay valid).
// The compiler whose identity goes into cache keys: find_compiler()'s (recorded in the cache
// directory), or, when no compiler is installed and neither EMBER_CXX nor CXX is set, the one
// recorded there, so that a warm cache works without a compiler (a kernel missing from it is
// then the "no C++ compiler" error).
const CompilerInfo& compiler_for_keys();
void reset_compiler_cache();

// The directory holding ember_rt/kernel.h, which generated code includes:
// EMBER_RUNTIME_INCLUDE when set (an ember::Error if it lacks ember_rt/kernel.h); else the
// directory registered with set_runtime_include_default() when it exists; else
// runtime_include, ../runtime_include or ../share/ember/runtime_include next to the library
// or program that holds ember, found with dladdr (the Python package installs it as
// <site-packages>/ember/runtime_include). Throws ember::Error naming the places it looked.
std::string runtime_include_dir();

// Registers the directory runtime_include_dir() tries after EMBER_RUNTIME_INCLUDE. Programs
// linking ember::ember through CMake call it from a static initializer the build adds to
// them (cmake/runtime_include_default.cpp.in): the C++ build tree registers the source
// tree's runtime_include, an installed ember's CMake package its
// <prefix>/share/ember/runtime_include. The Python package registers none.
void set_runtime_include_default(const std::string& dir);

// SHA-256 over the relative paths and contents of every file under runtime_include_dir();
// computed once per process and directory. Part of every kernel cache key.
std::string runtime_include_hash();

// Flags every generated translation unit is compiled with, ISA flags excluded (see isa.h):
//   -std=c++20 -O2 -fPIC -pipe
//   -fno-math-errno      libm calls need not set errno, so sqrt/fabs/... become instructions
//   -fwrapv              signed integers wrap, as in PyTorch
//   -ffp-contract=off    a*b+c rounds the product and the sum apart, as eager's separate
//                        operations do: contracted, x*x*x - x*x*x was the product's rounding
//                        error instead of 0. Multiply-adds that are meant to round once are
//                        written as fma (the runtime's routines, Acc * s + t in epilogues)
//   -fno-semantic-interposition, -fvisibility-inlines-hidden
//                        calls within a module bind locally; fewer dynamic symbols to load
//   -ffunction-sections  the link drops functions no export reaches
//   -fno-gnu-unique      (g++ only) dlclose really unmaps a module
//   -DNDEBUG -I<runtime_include_dir()>
// Deliberately absent: -fno-trapping-math (GCC then folds (float)(int)x into trunc(x), which
// keeps the sign of a zero), -ffast-math and its parts -ffinite-math-only (breaks NaN/inf checks),
// -fassociative-math, -fno-signed-zeros and -freciprocal-math (change results). Generated
// code vectorizes its reductions explicitly instead.
std::vector<std::string> base_flags();
// How long one compiler process may run: EMBER_COMPILE_TIMEOUT seconds (default 600); past
// it the process is killed and the build fails with an ember::Error naming what it built.
double compile_timeout_seconds();
// How long a probe of the compiler (its --version, whether it links with gold) may run: 60 s,
// or less when compile_timeout_seconds() is less, so that a hung compiler is reported within
// the time a user allowed.
double probe_timeout_seconds();

// Compiles `sources` (paths of .cpp files) with `flags` and links them into the shared object
// `out_so`. Several sources compile in parallel, each to <out_so>.<i>.o, removed after
// linking; a single source is compiled and linked in one step. The compiler runs without a
// shell, and the number of compiler processes in the whole process is limited to the
// number of cores.
//
// When ember_rt/all.h exists, every unit is compiled with `-include` of it, so generated
// code sees the same declarations however it is compiled. With `use_pch` that header is
// precompiled once per (compiler, version, flags, header contents) into
// <cache_dir()>/pch/<hash>/ (written aside and renamed) and used from there; if it cannot be
// built, or the compiler rejects it, the plain header is used (logged with EMBER_LOG=debug).
//
// A module whose sources include ember_rt/pieces.h (the line ember_rt::kPiecesInclude of
// ember_rt/pieces_include.h; codegen writes it into the first unit of every module) links
// the pieces of the runtime's routines that take the compiler its time (the GEMM's
// micro-kernels, the blocked convolutions' micro-kernel tables; about five seconds of
// compiling) from an object compiled once per pch directory, <hash>/pieces.o, and compiles
// its units with -DEMBER_RT_PIECES_PREBUILT so that they do not define them again;
// --gc-sections keeps the pieces the module's kernels reach, so the machine code is the
// same. Without a precompiled header, or when that object cannot be built, the unit that
// includes pieces.h defines them; a module that does not build with the object is built
// without it, and the object is removed.
//
// A failure throws ember::InternalError with the command and the first 50 lines of the
// compiler's output: generated code that does not compile is ember's bug. A compiler that
// cannot be started is an ember::Error.
//
// `progress(done, total)`, when given, is called on the calling thread as sources finish
// compiling and after the link (total = sources + 1; 1 for a single source, compiled and
// linked in one step).
void compile_shared(const std::vector<std::string>& sources, const std::string& out_so,
                    const std::vector<std::string>& flags, bool use_pch = true,
                    const std::function<void(int, int)>& progress = {});

}  // namespace ember
