#include "records.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/jit/cache.h"
#include "ember/jit/compiler.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/cpu.h"
#include "ember/support/hash.h"
#include "ember/support/log.h"
#include "jit/cache_layout.h"

namespace ember::tune {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "ember-tuning 1";

fs::path record_path(const std::string& key) { return detail::tuning_record(cache_dir(), key); }

}  // namespace

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 1);
    }
  }
  return "unknown";
}

std::string record_context(const TuneOptions& o, const std::vector<std::string>& symbols) {
  std::ostringstream os;
  os << "space " << o.search_space << " parallel_k " << static_cast<int>(o.parallel_k.mode) << "/"
     << o.parallel_k.parts << " threads " << default_pool().num_threads() << " isa "
     << isa_name(isa_from_env()) << " syms";
  for (const std::string& s : symbols) {
    auto it = o.symbol_values.find(s);
    os << " " << s << "=" << (it == o.symbol_values.end() ? 0 : it->second);
  }
  return os.str();
}

std::string record_key(const std::string& measured, const std::string& context) {
  std::ostringstream os;
  os << kMagic << "\n"
     << context << "\ncpu " << cpu_model() << "\nruntime " << runtime_include_hash() << "\nversion "
     << EMBER_VERSION << "\n"
     << measured;
  return sha256_hex(os.str());
}

void ignore_record(const std::string& key, const std::string& why) {
  log_warning("ignoring the damaged tuning record " + record_path(key).string() + " (" + why +
              "); measuring again");
}

std::optional<Record> read_record(const std::string& key, const std::string& kind) {
  std::ifstream in(record_path(key));
  if (!in) return std::nullopt;
  std::string magic, word, rest;
  Record r;
  if (!std::getline(in, magic) || magic != kMagic) {
    ignore_record(key, "it does not start with '" + std::string(kMagic) + "'");
    return std::nullopt;
  }
  if (!(in >> r.kind) || r.kind != kind || !std::getline(in, r.choice)) {
    ignore_record(key, "no '" + kind + "' line");
    return std::nullopt;
  }
  if (!r.choice.empty() && r.choice[0] == ' ') r.choice.erase(0, 1);
  if (!(in >> word) || word != "seconds" ||
      !(in >> r.default_seconds >> r.best_seconds >> r.candidates)) {
    ignore_record(key, "no 'seconds' line");
    return std::nullopt;
  }
  return r;
}

void write_record(const std::string& key, const Record& record, const std::string& about) {
  fs::path path = record_path(key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += "." + detail::unique_suffix() + ".tmp";
  {
    std::ofstream out(tmp);
    out << kMagic << "\n"
        << record.kind << " " << record.choice << "\nseconds " << record.default_seconds << " "
        << record.best_seconds << " " << record.candidates << "\nabout " << about << "\n";
    if (!out) {  // a record is an optimisation: failing to keep one is not an error
      detail::debug_log("cannot write the tuning record " + tmp.string());
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace ember::tune
