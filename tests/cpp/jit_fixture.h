// The fixture of the kernel cache tests (test_jit.cpp, test_cache_admin.cpp): a cache
// directory and a runtime include directory of their own per test, and a small kernel.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/jit/cache.h"
#include "ember/jit/compiler.h"
#include "ember/jit/isa.h"
#include "ember/runtime/thread_pool.h"

namespace ember::jit_test {

namespace fs = std::filesystem;

// Sets an environment variable for the lifetime of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A kernel y[i] = x[i] + addend over syms[0] elements, split through the launch context.
inline std::string add_kernel(const std::string& name, int addend) {
  std::ostringstream s;
  s << "#include <ember_rt/kernel.h>\n"
    << "extern \"C\" void " << name
    << "(void* const* args, const int64_t* syms, const ember_rt::LaunchContext* ctx) {\n"
    << "  const float* x = static_cast<const float*>(args[0]);\n"
    << "  float* y = static_cast<float*>(args[1]);\n"
    << "  auto body = [&](int64_t b, int64_t e) {\n"
    << "    for (int64_t i = b; i < e; ++i) y[i] = x[i] + " << addend << ".0f;\n"
    << "  };\n"
    << "  ctx->parallel_run(ctx->pool, syms[0], [](void* c, int64_t b, int64_t e) {\n"
    << "    (*static_cast<decltype(body)*>(c))(b, e);\n"
    << "  }, &body);\n"
    << "}\n";
  return s.str();
}

// Runs kernel `name` of `module` and checks y = x + addend.
inline void expect_adds(const Module& module, const std::string& name, int addend) {
  ThreadPool pool(2);
  ember_rt::LaunchContext ctx = pool.context();
  std::vector<float> x(1000), y(1000, -1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  void* args[] = {x.data(), y.data()};
  int64_t syms[] = {static_cast<int64_t>(x.size())};
  module.symbol(name)(args, syms, &ctx);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] + addend) << "index " << i;
}

// Every test gets its own cache directory and a runtime include directory holding only
// ember_rt/kernel.h (copied from the real one), so no precompiled header is built unless
// a test asks for one.
class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ember-test-jit-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    fs::path real_kernel_h = fs::path(runtime_include_dir()) / "ember_rt" / "kernel.h";
    fs::create_directories(include_dir() / "ember_rt");
    fs::copy_file(real_kernel_h, include_dir() / "ember_rt" / "kernel.h");
    cache_env_.emplace("EMBER_CACHE_DIR", cache_root().string());
    include_env_.emplace("EMBER_RUNTIME_INCLUDE", include_dir().string());
    clear_memory_cache();
    reset_cache_stats();
  }
  void TearDown() override {
    clear_memory_cache();
    include_env_.reset();
    cache_env_.reset();
    fs::remove_all(root_);
  }

  fs::path cache_root() const { return root_ / "cache"; }
  fs::path include_dir() const { return root_ / "include"; }
  fs::path entry_dir(const BuildRequest& r) const {
    std::string key = cache_key(r);
    return cache_root() / "kernels" / key.substr(0, 2) / key;
  }
  static BuildRequest request(int addend = 1) {
    return BuildRequest{"add", {add_kernel("add", addend)}, Isa::Scalar, {}, {}, {}};
  }

  // Damages the cache entry of `r` with `damage`, then checks that the next request rebuilds
  // it (one build, no disk hit) and that the rebuilt kernel works.
  template <class Damage>
  void expect_rebuilt_after(const BuildRequest& r, int addend, Damage damage) {
    get_or_build(r);
    clear_memory_cache();  // no one holds the module: it is unloaded
    damage(entry_dir(r));
    reset_cache_stats();
    std::shared_ptr<Module> m = get_or_build(r);
    expect_adds(*m, "add", addend);
    EXPECT_EQ(cache_stats().builds, 1);
    EXPECT_EQ(cache_stats().disk_hits, 0);
    // The rebuilt entry is valid: a fresh lookup is a disk hit.
    m.reset();
    clear_memory_cache();
    reset_cache_stats();
    get_or_build(r);
    EXPECT_EQ(cache_stats().disk_hits, 1);
  }

  fs::path root_;
  std::optional<ScopedEnv> cache_env_, include_env_;
};

}  // namespace ember::jit_test
