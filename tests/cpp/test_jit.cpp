// Tests of the JIT: compiler discovery, compilation, the kernel cache (memory, disk, a
// second process, corrupt entries) and the user-facing errors.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ember/jit/cache.h"
#include "ember/jit/compiler.h"
#include "ember/jit/isa.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "jit_fixture.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

using namespace ember::jit_test;  // NOLINT(google-build-using-namespace)

TEST_F(JitTest, BuildsLoadsAndRunsAKernel) {
  BuildRequest r = request(1);
  std::shared_ptr<Module> m = get_or_build(r);
  expect_adds(*m, "add", 1);
  CacheStats s = cache_stats();
  EXPECT_EQ(s.builds, 1);
  EXPECT_EQ(s.disk_hits, 0);
  EXPECT_EQ(s.memory_hits, 0);
  EXPECT_GT(s.build_seconds, 0.0);
  // The entry keeps the readable source, the shared object and a manifest.
  fs::path entry = entry_dir(r);
  EXPECT_EQ(m->dir(), entry.string());
  EXPECT_NE(read_text(entry / "kernel_0.cpp").find("y[i] = x[i] + 1.0f"), std::string::npos);
  EXPECT_NE(read_text(entry / "kernel_0.cpp").find("ember_module_abi"), std::string::npos);
  std::string manifest = read_text(entry / "manifest.txt");
  EXPECT_NE(manifest.find("key " + cache_key(r)), std::string::npos);
  EXPECT_NE(manifest.find("module.so.sha256 " + *sha256_file_hex((entry / "module.so").string())),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(cache_root() / "kernels" / "tmp"));
}

// Whether `<cc> <flag> -Wl,--version` names GNU gold (the linker the compiler would run).
bool links_with_gold(const std::string& flag) {
  std::string cmd = find_compiler().path + " " + flag + " -Wl,--version 2>&1 | grep -q 'GNU gold'";
  return std::system(cmd.c_str()) == 0;
}

bool linked_by_gold(const fs::path& so) {  // gold leaves its version note in what it links
  return read_text(so).find(".note.gnu.gold-version") != std::string::npos;
}

// Modules are linked by gold where the compiler can run it, and by the compiler's default
// linker with EMBER_LINKER=default; both work.
TEST_F(JitTest, ModulesAreLinkedByGoldWhereItRunsElseByTheDefaultLinker) {
  BuildRequest r = request(4);
  std::shared_ptr<Module> m = get_or_build(r);
  expect_adds(*m, "add", 4);
  EXPECT_EQ(linked_by_gold(entry_dir(r) / "module.so"), links_with_gold("-fuse-ld=gold"));
  ScopedEnv linker("EMBER_LINKER", "default");
  BuildRequest d = request(5);
  std::shared_ptr<Module> md = get_or_build(d);
  expect_adds(*md, "add", 5);
  EXPECT_EQ(linked_by_gold(entry_dir(d) / "module.so"), links_with_gold(""));
}

// EMBER_LINKER=gold links with gold or refuses; a value ember does not know is an error that
// names it (a misspelt `default` must not link with gold), and nothing is left in the cache.
TEST_F(JitTest, AnUnknownLinkerIsAnErrorAndGoldIsGoldOrAnError) {
  {
    ScopedEnv linker("EMBER_LINKER", "defualt");
    BuildRequest r = request(6);
    try {
      get_or_build(r);
      FAIL() << "expected ember::Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "EMBER_LINKER is set to 'defualt', which is not a linker ember knows. Valid "
                    "values are: default (the compiler's own linker), gold"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(entry_dir(r) / "module.so"));
  }
  ScopedEnv linker("EMBER_LINKER", "gold");
  BuildRequest g = request(7);
  if (links_with_gold("-fuse-ld=gold")) {
    std::shared_ptr<Module> m = get_or_build(g);
    expect_adds(*m, "add", 7);
    EXPECT_TRUE(linked_by_gold(entry_dir(g) / "module.so"));
  } else {
    EXPECT_THROW(get_or_build(g), Error);
  }
  ScopedEnv unset("EMBER_LINKER", std::nullopt);
  expect_adds(*get_or_build(request(6)), "add", 6);  // the refused request builds now
}

TEST_F(JitTest, SameKeyIsAMemoryHit) {
  std::shared_ptr<Module> a = get_or_build(request(2));
  std::shared_ptr<Module> b = get_or_build(request(2));
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(cache_stats().memory_hits, 1);
  EXPECT_EQ(cache_stats().builds, 1);
  std::shared_ptr<Module> c = get_or_build(request(3));  // other source, other key
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(cache_stats().builds, 2);
}

TEST_F(JitTest, KeyCoversFlagsAndIsa) {
  BuildRequest r = request();
  BuildRequest flags = r;
  flags.extra_flags = {"-DEMBER_TEST=1"};
  EXPECT_NE(cache_key(r), cache_key(flags));
  BuildRequest isa = r;
  isa.isa = Isa::Avx2;
  EXPECT_NE(cache_key(r), cache_key(isa));
  BuildRequest renamed = r;
  renamed.name = "other";  // the name is for people only
  EXPECT_EQ(cache_key(r), cache_key(renamed));
}

TEST_F(JitTest, SecondLoadIsADiskHit) {
  get_or_build(request(4));
  clear_memory_cache();
  reset_cache_stats();
  std::shared_ptr<Module> m = get_or_build(request(4));
  expect_adds(*m, "add", 4);
  EXPECT_EQ(cache_stats().disk_hits, 1);
  EXPECT_EQ(cache_stats().builds, 0);
}

TEST_F(JitTest, SecondProcessCompilesNothing) {
  get_or_build(request(5));
  clear_memory_cache();
  // The child starts with the in-memory cache empty, like a new process.
  EXPECT_EXIT(
      {
        reset_cache_stats();
        std::shared_ptr<Module> m = get_or_build(request(5));
        expect_adds(*m, "add", 5);
        CacheStats s = cache_stats();
        std::exit(s.builds == 0 && s.disk_hits == 1 ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

// Two processes miss the same key at once: both compile, one publishes, the other keeps
// the published entry and deletes its own.
TEST_F(JitTest, TwoProcessesBuildingOneKeyBothSucceed) {
  BuildRequest r = request(16);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 1;
    try {
      std::shared_ptr<Module> m = get_or_build(r);
      code = m->find_symbol("add") != nullptr ? 0 : 2;
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  std::shared_ptr<Module> m = get_or_build(r);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  expect_adds(*m, "add", 16);
  EXPECT_TRUE(fs::is_empty(cache_root() / "kernels" / "tmp"));
  clear_memory_cache();
  m.reset();
  reset_cache_stats();
  get_or_build(r);
  EXPECT_EQ(cache_stats().disk_hits, 1);
}

TEST_F(JitTest, ModuleStillHeldIsReturnedAfterClearingMemory) {
  std::shared_ptr<Module> a = get_or_build(request(6));
  clear_memory_cache();
  EXPECT_EQ(get_or_build(request(6)).get(), a.get());
  EXPECT_EQ(cache_stats().memory_hits, 1);
}

TEST_F(JitTest, CorruptSharedObjectIsRebuilt) {
  expect_rebuilt_after(request(7), 7, [](const fs::path& entry) {
    std::string so = read_text(entry / "module.so");
    for (size_t i = 0; i < so.size(); i += 7) so[i] = static_cast<char>(so[i] ^ 0x5a);
    write_text(entry / "module.so", so);  // same size, different bytes
  });
}

TEST_F(JitTest, TruncatedSharedObjectIsRebuilt) {
  expect_rebuilt_after(request(8), 8,
                       [](const fs::path& entry) { fs::resize_file(entry / "module.so", 100); });
}

TEST_F(JitTest, TruncatedManifestIsRebuilt) {
  expect_rebuilt_after(request(9), 9, [](const fs::path& entry) {
    std::string manifest = read_text(entry / "manifest.txt");
    write_text(entry / "manifest.txt", manifest.substr(0, manifest.size() / 2));
  });
}

TEST_F(JitTest, MissingManifestIsRebuilt) {
  expect_rebuilt_after(request(10), 10,
                       [](const fs::path& entry) { fs::remove(entry / "manifest.txt"); });
}

// A shared object that matches its manifest but cannot be loaded is rebuilt, not trusted.
TEST_F(JitTest, UnloadableSharedObjectIsRebuilt) {
  expect_rebuilt_after(request(11), 11, [](const fs::path& entry) {
    std::string junk(4096, 'x');
    write_text(entry / "module.so", junk);
    std::string manifest = read_text(entry / "manifest.txt");
    std::string old_sha = manifest.substr(manifest.find("module.so.sha256 ") + 17, 64);
    manifest.replace(manifest.find(old_sha), 64, sha256_hex(junk));
    std::string size_line = "module.so.size ";
    size_t at = manifest.find(size_line) + size_line.size();
    manifest.replace(at, manifest.find('\n', at) - at, "4096");
    write_text(entry / "manifest.txt", manifest);
  });
}

TEST_F(JitTest, SeveralTranslationUnitsMakeOneModule) {
  BuildRequest r{
      "multi",     {add_kernel("add_a", 1), add_kernel("add_b", 2), add_kernel("add_c", 3)},
      Isa::Scalar, {},
      {},          {}};
  std::shared_ptr<Module> m = get_or_build(r);
  expect_adds(*m, "add_a", 1);
  expect_adds(*m, "add_b", 2);
  expect_adds(*m, "add_c", 3);
  fs::path entry = entry_dir(r);
  EXPECT_TRUE(fs::exists(entry / "kernel_2.cpp"));
  for (const auto& file : fs::directory_iterator(entry)) {
    EXPECT_NE(file.path().extension(), ".o") << "object files are removed after linking";
  }
}

TEST_F(JitTest, ConcurrentRequestsForOneKeyBuildOnce) {
  std::vector<std::shared_ptr<Module>> modules(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < modules.size(); ++i) {
    threads.emplace_back([&, i] { modules[i] = get_or_build(request(12)); });
  }
  for (auto& t : threads) t.join();
  for (const auto& m : modules) EXPECT_EQ(m.get(), modules[0].get());
  EXPECT_EQ(cache_stats().builds, 1);
  EXPECT_EQ(cache_stats().memory_hits, 3);
}

TEST_F(JitTest, MissingSymbolIsAnInternalError) {
  std::shared_ptr<Module> m = get_or_build(request(13));
  EXPECT_EQ(m->find_symbol("no_such_kernel"), nullptr);
  try {
    m->symbol("no_such_kernel");
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("has no symbol 'no_such_kernel'"), std::string::npos);
  }
}

TEST_F(JitTest, CompileErrorIsAnInternalErrorWithDiagnostics) {
  BuildRequest r{
      "broken", {"extern \"C\" void broken() { this is not C++; }\n"}, Isa::Scalar, {}, {}, {}};
  try {
    get_or_build(r);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("ember internal error: the C++ code ember generated failed to compile.", 0),
              0u)
        << msg;
    EXPECT_NE(msg.find("command: " + find_compiler().path), std::string::npos) << msg;
    EXPECT_NE(msg.find("kernel_0.cpp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("error:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(this is a bug in ember; please report it)"), std::string::npos) << msg;
  }
  EXPECT_EQ(cache_stats().builds, 0);
}

TEST_F(JitTest, AbiMismatchIsAnInternalError) {
  std::string source =
      add_kernel("add", 1) + "extern \"C\" int ember_module_abi() { return 12345; }\n";
  try {
    get_or_build(BuildRequest{"abi", {source}, Isa::Scalar, {}, {}, {}});
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("built for runtime ABI 12345"), std::string::npos)
        << e.what();
  }
}

TEST_F(JitTest, MissingCompilerIsAUserError) {
  ScopedEnv cxx("EMBER_CXX", "/nonexistent");
  const std::string expected =
      "no C++ compiler was found: EMBER_CXX is set to '/nonexistent', which is not an executable "
      "file. ember compiles the kernels it generates with a C++ compiler at run time. Point "
      "EMBER_CXX at a C++ compiler (for example EMBER_CXX=/usr/bin/g++), or unset it to use g++, "
      "c++ or clang++ from PATH.";
  try {
    find_compiler();
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  EXPECT_THROW(get_or_build(request(14)), Error);
}

TEST_F(JitTest, NoCompilerOnPathIsAUserError) {
  ScopedEnv ember_cxx("EMBER_CXX", std::nullopt);
  ScopedEnv cxx("CXX", std::nullopt);
  ScopedEnv path("PATH", root_.string());
  try {
    find_compiler();
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "no C++ compiler was found. ember compiles the kernels it generates with a C++ "
              "compiler at run time; it tried g++, c++, clang++ (PATH=" +
                  root_.string() +
                  "). Install g++ or clang++ (for example `apt install g++`), or set EMBER_CXX "
                  "to the path of a C++ compiler.");
  }
}

TEST_F(JitTest, CompilerFoundAgainWhenEnvironmentChanges) {
  std::string path = find_compiler().path;
  {
    ScopedEnv cxx("EMBER_CXX", "/nonexistent");
    EXPECT_THROW(find_compiler(), Error);
  }
  EXPECT_EQ(find_compiler().path, path);
  reset_compiler_cache();
  EXPECT_EQ(find_compiler().path, path);
  EXPECT_FALSE(find_compiler().version.empty());
}

TEST_F(JitTest, UnwritableCacheDirectoryIsAUserError) {
  write_text(root_ / "a_file", "x");
  std::string bad = (root_ / "a_file" / "cache").string();
  ScopedEnv cache("EMBER_CACHE_DIR", bad);
  try {
    get_or_build(request(15));
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("ember cannot use '" + bad +
                            "' (set by EMBER_CACHE_DIR) as its kernel "
                            "cache directory: ",
                        0),
              0u)
        << msg;
    EXPECT_NE(msg.find(". ember keeps the kernels it compiles there. Set EMBER_CACHE_DIR to a "
                       "writable directory, for example EMBER_CACHE_DIR=/tmp/ember."),
              std::string::npos)
        << msg;
  }
}

TEST_F(JitTest, CacheDirectoryDefaultsFollowXdg) {
  ScopedEnv cache("EMBER_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", (root_ / "xdg").string());
    EXPECT_EQ(cache_dir(), (root_ / "xdg" / "ember").string());
    EXPECT_TRUE(fs::is_directory(root_ / "xdg" / "ember"));
  }
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv home("HOME", (root_ / "home").string());
  EXPECT_EQ(cache_dir(), (root_ / "home" / ".cache" / "ember").string());
}

TEST_F(JitTest, BadRuntimeIncludeIsAUserError) {
  ScopedEnv include("EMBER_RUNTIME_INCLUDE", "/nonexistent");
  try {
    runtime_include_dir();
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "EMBER_RUNTIME_INCLUDE is set to '/nonexistent', but that directory has no "
              "ember_rt/kernel.h. Point it at the runtime_include directory of an ember "
              "installation (the directory that holds ember_rt/), or unset it.");
  }
}

TEST_F(JitTest, RuntimeIncludeFoundWithoutEnvironment) {
  ScopedEnv include("EMBER_RUNTIME_INCLUDE", std::nullopt);
  EXPECT_TRUE(fs::exists(fs::path(runtime_include_dir()) / "ember_rt" / "kernel.h"));
}

// The directory a build registers (the source tree's here) comes after EMBER_RUNTIME_INCLUDE
// and is skipped when it lacks the headers.
TEST_F(JitTest, RegisteredRuntimeIncludeComesAfterTheEnvironment) {
  ScopedEnv include("EMBER_RUNTIME_INCLUDE", std::nullopt);
  const std::string registered = runtime_include_dir();
  // This file is <source>/tests/cpp/test_jit.cpp.
  EXPECT_EQ(registered, (fs::path(__FILE__).parent_path() / ".." / ".." / "runtime_include")
                            .lexically_normal()
                            .string());
  set_runtime_include_default(include_dir().string());
  EXPECT_EQ(runtime_include_dir(), include_dir().string());
  {
    ScopedEnv env("EMBER_RUNTIME_INCLUDE", registered);
    EXPECT_EQ(runtime_include_dir(), registered);
  }
  const std::string missing = (root_ / "missing").string();
  set_runtime_include_default(missing);
  try {
    EXPECT_NE(runtime_include_dir(), missing);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("It looked in:\n  " + missing), std::string::npos)
        << e.what();
  }
  set_runtime_include_default(registered);
  EXPECT_EQ(runtime_include_dir(), registered);
}

// With ember_rt/all.h present, every unit is compiled with it in front, precompiled once
// into <cache>/pch/.
TEST_F(JitTest, PrecompiledHeaderIsBuiltAndUsed) {
  write_text(include_dir() / "ember_rt" / "all.h",
             "#pragma once\n#include <cmath>\n#include <ember_rt/kernel.h>\n"
             "inline int ember_test_prelude_value() { return 3; }\n");
  std::string source = add_kernel("add", 1);
  source.replace(source.find("+ 1.0f"), 6, "+ ember_test_prelude_value()");
  std::shared_ptr<Module> m = get_or_build(BuildRequest{"pch", {source}, Isa::Scalar, {}, {}, {}});
  expect_adds(*m, "add", 3);
  int gch_files = 0;
  for (const auto& f : fs::recursive_directory_iterator(cache_root() / "pch")) {
    gch_files += f.path().filename() == "all.h.gch";
  }
  EXPECT_EQ(gch_files, 1);
}

// When the precompiled header cannot be written, all.h is still included, just parsed.
TEST_F(JitTest, BuildsWithoutPrecompiledHeaderWhenItCannotBeMade) {
  write_text(include_dir() / "ember_rt" / "all.h",
             "#pragma once\n#include <ember_rt/kernel.h>\n"
             "inline int ember_test_prelude_value() { return 4; }\n");
  fs::create_directories(cache_root());
  write_text(cache_root() / "pch", "not a directory");
  std::string source = add_kernel("add", 1);
  source.replace(source.find("+ 1.0f"), 6, "+ ember_test_prelude_value()");
  std::shared_ptr<Module> m =
      get_or_build(BuildRequest{"nopch", {source}, Isa::Scalar, {}, {}, {}});
  expect_adds(*m, "add", 4);
}

TEST(Isa, NamesFlagsAndEnvironment) {
  EXPECT_EQ(isa_name(Isa::Avx512), "avx512");
  EXPECT_EQ(parse_isa("avx2"), Isa::Avx2);
  EXPECT_TRUE(isa_flags(Isa::Scalar).empty());
  EXPECT_EQ(isa_flags(Isa::Avx2), (std::vector<std::string>{"-mavx2", "-mfma", "-mf16c"}));
  EXPECT_EQ(isa_flags(Isa::Avx512)[0], "-mavx512f");
  {
    ScopedEnv env("EMBER_ISA", "scalar");
    EXPECT_EQ(isa_from_env(), Isa::Scalar);
  }
  {
    ScopedEnv env("EMBER_ISA", "avx512");  // lowered to what the CPU has
    EXPECT_LE(static_cast<int>(isa_from_env()), static_cast<int>(detect_isa()));
  }
  ScopedEnv env("EMBER_ISA", "sse9");
  try {
    isa_from_env();
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "EMBER_ISA is set to 'sse9', which is not an instruction set ember knows. Valid "
              "values are: scalar, avx2, avx512; unset EMBER_ISA to use the best one this CPU "
              "supports.");
  }
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 h;  // a million 'a', fed in uneven pieces to exercise the buffering
  std::string piece(997, 'a');
  size_t fed = 0;
  for (; fed + piece.size() <= 1000000; fed += piece.size()) h.update(piece);
  h.update(std::string(1000000 - fed, 'a'));
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_NE(Sha256().field("ab").field("c").hex_digest(),
            Sha256().field("a").field("bc").hex_digest());
}

}  // namespace
}  // namespace ember
