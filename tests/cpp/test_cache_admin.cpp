// Tests of the disk cache's management: cache_usage, clear_cache, prune_cache (least
// recently used first, stale temporaries), EMBER_CACHE_MAX_SIZE and parse_size.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/jit/cache.h"
#include "ember/support/error.h"
#include "jit_fixture.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using namespace ember::jit_test;  // NOLINT(google-build-using-namespace)

const std::string kKeyA(64, 'a');
const std::string kKeyB = "ab" + std::string(62, '1');
const std::string kKeyC = "cd" + std::string(62, '2');

void write_bytes(const fs::path& path, size_t n) {
  fs::create_directories(path.parent_path());
  write_text(path, std::string(n, 'x'));
}

// `seconds` ago, as a file time.
fs::file_time_type ago(double seconds) {
  return fs::file_time_type::clock::now() -
         std::chrono::duration_cast<fs::file_time_type::duration>(
             std::chrono::duration<double>(seconds));
}

int64_t entries(const std::string& category) { return cache_usage().category(category).entries; }

class CacheAdminTest : public JitTest {
 protected:
  // Files of each kind ember keeps, with known sizes, and files that are not ember's.
  void lay_out_cache() {
    const fs::path c = cache_root();
    write_bytes(c / "kernels" / "ab" / kKeyB / "module.so", 100);
    write_bytes(c / "kernels" / "ab" / kKeyB / "manifest.txt", 10);
    write_bytes(c / "pch" / kKeyA / "all.h.gch", 1000);
    write_bytes(c / "tuning" / "cd" / (kKeyC + ".txt"), 5);
    write_bytes(c / "tuning" / "cd" / (kKeyC + ".txt.12.34.tmp"), 3);             // being written
    write_bytes(c / "kernels" / "tmp" / (kKeyB + ".12.34") / "kernel_0.cpp", 7);  // a build
    write_text(c / "compiler", "/usr/bin/c++\nc++ 1\n");
    // Not ember's: left alone and not counted.
    write_bytes(c / "README", 50);
    write_bytes(c / "kernels" / "zz" / "notakey" / "module.so", 20);
    write_bytes(c / "kernels" / "ab" / kKeyA / "module.so", 20);  // in the wrong shard
    write_bytes(c / "pch" / "notes.txt", 20);
    write_bytes(outside() / "precious" / "data.bin", 4000);
    fs::create_directory_symlink(outside() / "precious",
                                 c / "kernels" / "ab" / ("ab" + kKeyA.substr(2)));
    fs::create_directory_symlink(outside() / "precious", c / "pch" / kKeyC);
  }
  fs::path outside() const { return root_ / "outside"; }
};

TEST_F(CacheAdminTest, UsageCountsEmbersFilesByCategory) {
  lay_out_cache();
  CacheUsage u = cache_usage();
  EXPECT_EQ(u.dir, cache_root().string());
  ASSERT_EQ(u.categories.size(), 4u);
  EXPECT_EQ(u.categories[0].name, "kernels");
  EXPECT_EQ(u.category("kernels").entries, 1);
  EXPECT_EQ(u.category("kernels").bytes, 110);
  EXPECT_EQ(u.category("pch").entries, 1);
  EXPECT_EQ(u.category("pch").bytes, 1000);
  EXPECT_EQ(u.category("tuning").entries, 1);
  EXPECT_EQ(u.category("tuning").bytes, 5);
  EXPECT_EQ(u.category("tmp").entries, 2);
  EXPECT_EQ(u.category("tmp").bytes, 10);
  EXPECT_EQ(u.total_bytes, 1125);
  EXPECT_THROW(u.category("nope"), Error);
}

TEST_F(CacheAdminTest, ClearRemovesOnlyEmbersFiles) {
  lay_out_cache();
  const fs::path c = cache_root();
  // A stale build (a killed process) goes; the fresh one may be a build in progress.
  write_bytes(c / "kernels" / "tmp" / (kKeyC + ".56.78") / "kernel_0.cpp", 9);
  fs::last_write_time(c / "kernels" / "tmp" / (kKeyC + ".56.78"), ago(2 * 3600));
  PruneResult r = clear_cache();
  EXPECT_EQ(r.kernels_removed, 1);
  EXPECT_EQ(r.pch_removed, 1);
  EXPECT_EQ(r.tuning_removed, 1);
  EXPECT_EQ(r.temporaries_removed, 1);
  EXPECT_EQ(r.bytes_freed, 110 + 1000 + 5 + 9);
  EXPECT_EQ(r.bytes_left, 10);  // the two fresh temporaries
  EXPECT_FALSE(fs::exists(c / "kernels" / "ab" / kKeyB));
  EXPECT_FALSE(fs::exists(c / "pch" / kKeyA));
  EXPECT_FALSE(fs::exists(c / "tuning" / "cd" / (kKeyC + ".txt")));
  EXPECT_FALSE(fs::exists(c / "compiler"));
  EXPECT_TRUE(fs::exists(c / "kernels" / "tmp" / (kKeyB + ".12.34") / "kernel_0.cpp"));
  EXPECT_TRUE(fs::exists(c / "README"));
  EXPECT_TRUE(fs::exists(c / "kernels" / "zz" / "notakey" / "module.so"));
  EXPECT_TRUE(fs::exists(c / "kernels" / "ab" / kKeyA / "module.so"));
  EXPECT_TRUE(fs::exists(c / "pch" / "notes.txt"));
  // Links are neither followed nor removed.
  EXPECT_TRUE(fs::is_symlink(c / "pch" / kKeyC));
  EXPECT_EQ(fs::file_size(outside() / "precious" / "data.bin"), 4000u);
  // Nothing of ember's in any other directory: only the graves' parent and the shards held
  // by foreign files are left.
  for (const auto& e : fs::recursive_directory_iterator(c)) {
    EXPECT_EQ(e.path().string().find(".old."), std::string::npos) << e.path();
  }
}

TEST_F(CacheAdminTest, PruneRemovesStaleTemporaries) {
  const fs::path tmp = cache_root() / "kernels" / "tmp";
  write_bytes(tmp / (kKeyA + ".1.2") / "kernel_0.cpp", 10);  // a build in progress
  write_bytes(tmp / (kKeyB + ".3.4") / "kernel_0.cpp", 20);  // a crashed build
  fs::last_write_time(tmp / (kKeyB + ".3.4"), ago(3 * 3600));
  write_bytes(tmp / (kKeyC + ".old.5.6") / "module.so", 30);  // an interrupted removal
  write_bytes(tmp / (kKeyC + ".bad.7.8") / "module.so", 40);  // a damaged entry's
  const fs::path rec = cache_root() / "tuning" / "cd" / (kKeyC + ".txt.9.9.tmp");
  write_bytes(rec, 5);
  fs::last_write_time(rec, ago(2 * 3600));
  PruneResult r = prune_cache(1 << 30);
  EXPECT_EQ(r.temporaries_removed, 4);
  EXPECT_EQ(r.bytes_freed, 95);
  EXPECT_EQ(r.bytes_left, 10);
  EXPECT_TRUE(fs::exists(tmp / (kKeyA + ".1.2")));
  EXPECT_EQ(entries("tmp"), 1);
}

TEST_F(CacheAdminTest, PruneEvictsTheLeastRecentlyUsedFirst) {
  std::vector<BuildRequest> requests = {request(1), request(2), request(3)};
  for (const BuildRequest& r : requests) get_or_build(r);
  clear_memory_cache();
  // Built 3, 2 and 1 hours ago; then the oldest is loaded from disk, which marks it used.
  for (int i = 0; i < 3; ++i) fs::last_write_time(entry_dir(requests[i]), ago(3600 * (3 - i)));
  reset_cache_stats();
  get_or_build(requests[0]);
  ASSERT_EQ(cache_stats().disk_hits, 1);
  EXPECT_GT(fs::last_write_time(entry_dir(requests[0])), ago(60));
  clear_memory_cache();
  CacheUsage before = cache_usage();
  ASSERT_EQ(before.category("kernels").entries, 3);
  // Room for two of the three modules (they are the same size give or take a digit).
  const int64_t one = before.total_bytes / 3;
  PruneResult r = prune_cache(before.total_bytes - one / 2);
  EXPECT_EQ(r.kernels_removed, 1);
  EXPECT_EQ(r.bytes_left, before.total_bytes - r.bytes_freed);
  EXPECT_TRUE(fs::exists(entry_dir(requests[0])));
  EXPECT_FALSE(fs::exists(entry_dir(requests[1])));  // the least recently used
  EXPECT_TRUE(fs::exists(entry_dir(requests[2])));
  // Pruned to 0 bytes, nothing evictable is left.
  r = prune_cache(0);
  EXPECT_EQ(r.kernels_removed, 2);
  EXPECT_EQ(r.bytes_left, 0);
  EXPECT_EQ(entries("kernels"), 0);
  EXPECT_THROW(prune_cache(-1), Error);
}

TEST_F(CacheAdminTest, PrunedEntryIsRebuiltAndModulesLoadedStayUsable) {
  BuildRequest r = request(5);
  std::shared_ptr<Module> held = get_or_build(r);
  clear_memory_cache();
  clear_cache();
  EXPECT_FALSE(fs::exists(entry_dir(r)));
  expect_adds(*held, "add", 5);  // still mapped
  held.reset();
  reset_cache_stats();
  std::shared_ptr<Module> m = get_or_build(r);
  expect_adds(*m, "add", 5);
  EXPECT_EQ(cache_stats().builds, 1);
  m.reset();
  clear_memory_cache();
  reset_cache_stats();
  get_or_build(r);
  EXPECT_EQ(cache_stats().disk_hits, 1);
}

// What a removal interrupted at any point leaves is never loaded as a complete module: the
// entry renamed into tmp/ is not looked at, and a directory missing some of its files fails
// the manifest's checks.
TEST_F(CacheAdminTest, HalfRemovedEntryIsNeverLoaded) {
  BuildRequest r = request(6);
  get_or_build(r);
  clear_memory_cache();
  const fs::path entry = entry_dir(r);
  const fs::path grave = cache_root() / "kernels" / "tmp" / (cache_key(r) + ".old.1.2");
  fs::rename(entry, grave);
  reset_cache_stats();
  expect_adds(*get_or_build(r), "add", 6);
  EXPECT_EQ(cache_stats().builds, 1);
  clear_memory_cache();
  for (const char* file : {"module.so", "manifest.txt"}) {
    ASSERT_TRUE(fs::remove(entry / file)) << file;
    reset_cache_stats();
    expect_adds(*get_or_build(r), "add", 6);
    EXPECT_EQ(cache_stats().builds, 1) << file;
    EXPECT_EQ(cache_stats().disk_hits, 0) << file;
    clear_memory_cache();
  }
}

TEST_F(CacheAdminTest, PrecompiledHeadersAreTouchedEvictedAndRebuilt) {
  write_text(include_dir() / "ember_rt" / "all.h",
             "#pragma once\n#include <ember_rt/kernel.h>\n"
             "inline int ember_test_prelude_value() { return 2; }\n");
  auto build = [](int addend) {
    std::string source = add_kernel("add", addend);
    source.replace(source.find(".0f;"), 4, ".0f + ember_test_prelude_value();");
    return get_or_build(BuildRequest{"pch", {source}, Isa::Scalar, {}, {}, {}});
  };
  expect_adds(*build(1), "add", 3);
  ASSERT_EQ(entries("pch"), 1);
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(cache_root() / "pch")) dirs.push_back(e.path());
  ASSERT_EQ(dirs.size(), 1u);
  fs::last_write_time(dirs[0], ago(7200));
  expect_adds(*build(2), "add", 4);  // uses the header: marks it used
  EXPECT_GT(fs::last_write_time(dirs[0]), ago(60));
  EXPECT_EQ(clear_cache().pch_removed, 1);
  expect_adds(*build(3), "add", 5);  // the header is made again
  EXPECT_TRUE(fs::exists(dirs[0] / "all.h.gch"));
}

TEST_F(CacheAdminTest, MaxSizeFromTheEnvironmentBoundsTheCache) {
  {
    ScopedEnv bad("EMBER_CACHE_MAX_SIZE", "lots");
    try {
      get_or_build(request(7));
      FAIL() << "no error for EMBER_CACHE_MAX_SIZE=lots";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("EMBER_CACHE_MAX_SIZE must be a size such as 500M"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(entries("kernels"), 0);  // refused before building
  }
  {
    ScopedEnv big("EMBER_CACHE_MAX_SIZE", "1G");
    get_or_build(request(7));
    EXPECT_EQ(entries("kernels"), 1);
  }
  ScopedEnv tiny("EMBER_CACHE_MAX_SIZE", "1k");  // smaller than any module
  std::shared_ptr<Module> m = get_or_build(request(8));
  expect_adds(*m, "add", 8);  // pruned from disk, still loaded
  EXPECT_EQ(entries("kernels"), 0);
  EXPECT_EQ(cache_max_size_from_env(), 1024);
}

TEST(CacheSize, ParsesSizes) {
  EXPECT_EQ(parse_size("4096", "x"), 4096);
  EXPECT_EQ(parse_size("0", "x"), 0);
  EXPECT_EQ(parse_size("100B", "x"), 100);
  EXPECT_EQ(parse_size("1k", "x"), 1024);
  EXPECT_EQ(parse_size("1K", "x"), 1024);
  EXPECT_EQ(parse_size("500M", "x"), 500LL << 20);
  EXPECT_EQ(parse_size("2G", "x"), 2LL << 30);
  EXPECT_EQ(parse_size("2GB", "x"), 2LL << 30);
  EXPECT_EQ(parse_size("2GiB", "x"), 2LL << 30);
  EXPECT_EQ(parse_size("1.5T", "x"), 3LL << 39);
  EXPECT_EQ(parse_size("0.5k", "x"), 512);
}

TEST(CacheSize, RejectsOtherText) {
  for (const char* text :
       {"", "G", "2X", "-1G", "1.2.3M", "2 G", "2GG", "2iB", ".", "1e3", "99999999999T"}) {
    try {
      parse_size(text, "--max-size");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find("--max-size "), 0u) << msg;
      EXPECT_NE(msg.find("'" + std::string(text) + "'"), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace ember
