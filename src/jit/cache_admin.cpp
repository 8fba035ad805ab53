// Counting, clearing and pruning the disk cache (ember/jit/cache.h); the layout is
// cache_layout.h.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "cache_layout.h"
#include "ember/jit/cache.h"
#include "ember/jit/compiler.h"
#include "ember/support/error.h"
#include "process.h"

namespace ember {
namespace fs = std::filesystem;

namespace {

using detail::is_key;

enum class Category { Kernels, Pch, Tuning, Tmp };
constexpr std::array<const char*, 4> kCategoryNames = {"kernels", "pch", "tuning", "tmp"};

// Something ember put in the cache: a directory (a module, a precompiled header, a build)
// or a file (a tuning record, a temporary record).
struct Item {
  fs::path path;
  Category category;
  fs::file_time_type used;  // modification time: when it was last used
  int64_t bytes = 0;
};

fs::file_type type_of(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type();  // never follows a link
}

// The sizes of the regular files at or under `p`, without following symbolic links.
int64_t tree_bytes(const fs::path& p) {
  std::error_code ec;
  const fs::file_type type = type_of(p);
  if (type == fs::file_type::regular) {
    const uintmax_t n = fs::file_size(p, ec);
    return ec ? 0 : static_cast<int64_t>(n);
  }
  if (type != fs::file_type::directory) return 0;
  int64_t total = 0;
  fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->symlink_status(ec2).type() != fs::file_type::regular) continue;
    const uintmax_t n = it->file_size(ec2);
    if (!ec2) total += static_cast<int64_t>(n);
  }
  return total;
}

// The entries of directory `dir` (none when it is missing or a link).
std::vector<fs::path> children(const fs::path& dir) {
  std::vector<fs::path> out;
  if (type_of(dir) != fs::file_type::directory) return out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  return out;
}

bool is_shard(const std::string& name) {
  return name.size() == 2 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

bool starts_with_key(const std::string& name, const std::string& tail) {
  return name.size() > 64 + tail.size() && is_key(name.substr(0, 64)) &&
         name.compare(64, tail.size(), tail) == 0;
}

// Everything of ember's under `root`, with sizes when `with_bytes`.
std::vector<Item> scan(const fs::path& root, bool with_bytes) {
  std::vector<Item> items;
  auto add = [&](const fs::path& path, Category category, fs::file_type want) {
    if (type_of(path) != want) return;
    std::error_code ec;
    fs::file_time_type used = fs::last_write_time(path, ec);
    if (ec) used = fs::file_time_type::clock::now();
    items.push_back({path, category, used, with_bytes ? tree_bytes(path) : 0});
  };
  const auto dir = fs::file_type::directory;
  for (const fs::path& shard : children(detail::kernels_dir(root))) {
    const std::string name = shard.filename().string();
    if (shard == detail::kernels_tmp_dir(root)) {
      for (const fs::path& t : children(shard)) {
        add(t, Category::Tmp, type_of(t) == dir ? dir : fs::file_type::regular);
      }
      continue;
    }
    if (!is_shard(name)) continue;
    for (const fs::path& entry : children(shard)) {
      const std::string key = entry.filename().string();
      if (is_key(key) && key.compare(0, 2, name) == 0) add(entry, Category::Kernels, dir);
    }
  }
  for (const fs::path& pch : children(detail::pch_root(root))) {
    const std::string name = pch.filename().string();
    if (is_key(name)) add(pch, Category::Pch, dir);
    if (starts_with_key(name, ".old.")) add(pch, Category::Tmp, dir);
  }
  for (const fs::path& shard : children(detail::tuning_dir(root))) {
    if (!is_shard(shard.filename().string())) continue;
    for (const fs::path& record : children(shard)) {
      const std::string name = record.filename().string();
      if (name.size() == 68 && is_key(name.substr(0, 64)) && name.ends_with(".txt")) {
        add(record, Category::Tuning, fs::file_type::regular);
      } else if (starts_with_key(name, ".txt.") && name.ends_with(".tmp")) {
        add(record, Category::Tmp, fs::file_type::regular);
      }
    }
  }
  return items;
}

// Temporaries older than this are left over from builds that failed or were killed: no
// compiler process runs longer than compile_timeout_seconds(), and a build writes into its
// directory between its steps.
fs::file_time_type stale_cutoff() {
  double seconds = 3600;
  try {
    seconds = std::max(seconds, 3 * compile_timeout_seconds() + 60);
  } catch (const Error&) {
    // An invalid EMBER_COMPILE_TIMEOUT is reported by the build that reads it.
  }
  return fs::file_time_type::clock::now() -
         std::chrono::duration_cast<fs::file_time_type::duration>(
             std::chrono::duration<double>(seconds));
}

// A temporary that no build can still be writing: one being removed, or a stale one.
bool is_stale(const Item& item, fs::file_time_type cutoff) {
  const std::string name = item.path.filename().string();
  return name.find(".old.") != std::string::npos || name.find(".bad.") != std::string::npos ||
         item.used < cutoff;
}

// Removes `item`; returns false when it could not (it is left whole).
bool remove_item(const fs::path& root, const Item& item) {
  std::error_code ec;
  const std::string name = item.path.filename().string();
  switch (item.category) {
    case Category::Kernels: {
      fs::create_directories(detail::kernels_tmp_dir(root), ec);
      fs::path grave = detail::kernels_tmp_dir(root) / (name + ".old." + detail::unique_suffix());
      return detail::retire_dir(item.path, grave) >= 0;
    }
    case Category::Pch: {
      fs::path grave = item.path;
      grave += ".old." + detail::unique_suffix();
      return detail::retire_dir(item.path, grave) >= 0;
    }
    case Category::Tuning:
    case Category::Tmp:
      // A file is removed at once; a temporary directory is never loaded by anyone.
      fs::remove_all(item.path, ec);
      return !ec;
  }
  return false;
}

// Removes the directories of `parent` that are empty (shards left by removed entries).
void remove_empty_shards(const fs::path& parent) {
  for (const fs::path& shard : children(parent)) {
    if (!is_shard(shard.filename().string())) continue;
    std::error_code ec;
    fs::remove(shard, ec);  // fails, as wanted, unless it is empty
  }
}

// prune_cache(max_bytes), or clear_cache() when max_bytes < 0.
PruneResult clean(int64_t max_bytes) {
  const fs::path root = cache_dir();
  std::vector<Item> items = scan(root, true);
  PruneResult result;
  const fs::file_time_type cutoff = stale_cutoff();
  std::vector<Item> evictable;
  int64_t total = 0;
  for (const Item& item : items) {
    const bool evict_now = (item.category == Category::Tmp && is_stale(item, cutoff)) ||
                           (max_bytes < 0 && item.category != Category::Tmp);
    if (evict_now && remove_item(root, item)) {
      result.bytes_freed += item.bytes;
      switch (item.category) {
        case Category::Kernels: ++result.kernels_removed; break;
        case Category::Pch: ++result.pch_removed; break;
        case Category::Tuning: ++result.tuning_removed; break;
        case Category::Tmp: ++result.temporaries_removed; break;
      }
      continue;
    }
    total += item.bytes;
    if (item.category == Category::Kernels || item.category == Category::Pch) {
      evictable.push_back(item);
    }
  }
  if (max_bytes >= 0) {
    std::stable_sort(evictable.begin(), evictable.end(),
                     [](const Item& a, const Item& b) { return a.used < b.used; });
    for (const Item& item : evictable) {
      if (total <= max_bytes) break;
      if (!remove_item(root, item)) continue;
      total -= item.bytes;
      result.bytes_freed += item.bytes;
      ++(item.category == Category::Kernels ? result.kernels_removed : result.pch_removed);
    }
  } else {
    std::error_code ec;
    fs::remove(detail::compiler_identity_file(root), ec);
  }
  remove_empty_shards(detail::kernels_dir(root));
  remove_empty_shards(detail::tuning_dir(root));
  result.bytes_left = cache_usage().total_bytes;
  detail::debug_log("cache " + root.string() + ": removed " +
                    std::to_string(result.kernels_removed) + " modules, " +
                    std::to_string(result.pch_removed) + " precompiled headers, " +
                    std::to_string(result.tuning_removed) + " tuning records, " +
                    std::to_string(result.temporaries_removed) + " temporaries (" +
                    std::to_string(result.bytes_freed) + " bytes); " +
                    std::to_string(result.bytes_left) + " bytes left");
  return result;
}

}  // namespace

namespace detail {

void touch(const fs::path& dir) noexcept {
  utimensat(AT_FDCWD, dir.c_str(), nullptr, 0);  // now; a read-only cache stays as it is
}

long long retire_dir(const fs::path& dir, const fs::path& grave) {
  if (std::rename(dir.c_str(), grave.c_str()) != 0) return -1;
  const int64_t bytes = tree_bytes(grave);
  std::error_code ec;
  fs::remove_all(grave, ec);
  return bytes;
}

void remove_stale_temporaries(const fs::path& root) {
  const fs::file_time_type cutoff = stale_cutoff();
  for (const Item& item : scan(root, false)) {
    if (item.category == Category::Tmp && is_stale(item, cutoff)) remove_item(root, item);
  }
}

void bound_cache(int64_t max_bytes, int64_t added_bytes) {
  // A running estimate of the cache's size, so that most builds cost no walk of the cache.
  // It misses what other processes add, hence a fresh count every kRecount builds.
  constexpr int kRecount = 32;
  static std::mutex mu;
  static std::string dir;
  static int64_t estimate = -1;
  static int builds = 0;
  std::lock_guard<std::mutex> lock(mu);
  try {
    const std::string root = cache_dir();
    if (root != dir || estimate < 0 || ++builds >= kRecount) {
      dir = root;
      builds = 0;
      estimate = cache_usage().total_bytes;
    } else {
      estimate += added_bytes;
    }
    if (estimate > max_bytes) estimate = prune_cache(max_bytes).bytes_left;
  } catch (const Error& e) {  // the build succeeded: a cache that cannot shrink is no error
    debug_log(std::string("cannot prune the kernel cache: ") + e.what());
    estimate = -1;
  }
}

}  // namespace detail

const CacheCategoryUsage& CacheUsage::category(const std::string& name) const {
  for (const CacheCategoryUsage& c : categories) {
    if (c.name == name) return c;
  }
  EMBER_THROW("the kernel cache has no category '" << name
                                                   << "'; its categories are kernels, pch, "
                                                      "tuning and tmp");
}

CacheUsage cache_usage() {
  CacheUsage usage;
  usage.dir = cache_dir();
  for (const char* name : kCategoryNames) usage.categories.push_back({name, 0, 0});
  for (const Item& item : scan(usage.dir, true)) {
    CacheCategoryUsage& c = usage.categories[static_cast<size_t>(item.category)];
    ++c.entries;
    c.bytes += item.bytes;
    usage.total_bytes += item.bytes;
  }
  return usage;
}

PruneResult clear_cache() { return clean(-1); }

PruneResult prune_cache(int64_t max_bytes) {
  EMBER_CHECK(max_bytes >= 0,
              "prune_cache: the size to prune the cache to must be >= 0 bytes, got " << max_bytes);
  return clean(max_bytes);
}

int64_t parse_size(const std::string& text, const std::string& what) {
  auto bad = [&]() {
    EMBER_THROW(what << " must be a size such as 500M, 2G or 1.5T (a number of bytes with an "
                     << "optional suffix k, M, G or T, powers of 1024), got '" << text << "'");
  };
  size_t pos = 0;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) != 0 || text[pos] == '.')) {
    ++pos;
  }
  const std::string number = text.substr(0, pos);
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
    bad();
  }
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "b") shift = 0;
  const std::string letters = "kmgt";
  for (size_t i = 0; i < letters.size(); ++i) {
    const std::string l(1, letters[i]);
    if (unit == l || unit == l + "b" || unit == l + "ib") shift = 10 * static_cast<int>(i + 1);
  }
  if (shift < 0) bad();
  const double value = std::ldexp(std::strtod(number.c_str(), nullptr), shift);
  EMBER_CHECK(value < 9.2e18, what << " is too large: '" << text << "'");
  return static_cast<int64_t>(std::llround(value));
}

int64_t cache_max_size_from_env() {
  const std::string env = detail::env_or_empty("EMBER_CACHE_MAX_SIZE");
  return env.empty() ? -1 : parse_size(env, "EMBER_CACHE_MAX_SIZE");
}

}  // namespace ember
