#include "records.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/jit/cache.h"
#include "ember/jit/compiler.h"
#include "ember/support/hash.h"
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

std::string record_key(const std::string& kernel_source, const std::string& context) {
  std::ostringstream os;
  os << kMagic << "\n"
     << context << "\ncpu " << cpu_model() << "\nruntime " << runtime_include_hash() << "\nversion "
     << EMBER_VERSION << "\n"
     << kernel_source;
  return sha256_hex(os.str());
}

std::optional<TuneResult> read_record(const std::string& key) {
  std::ifstream in(record_path(key));
  if (!in) return std::nullopt;
  std::string magic, word;
  TuneResult r;
  codegen::GemmConfig& c = r.config;
  bool ok = static_cast<bool>(std::getline(in, magic)) && magic == kMagic;
  ok = ok && (in >> word) && word == "config" &&
       (in >> c.mc >> c.nc >> c.kc >> c.kernel >> c.split_k);
  ok = ok && (in >> word) && word == "seconds" &&
       (in >> r.default_seconds >> r.best_seconds >> r.candidates);
  if (!ok || c.mc < 0 || c.nc < 0 || c.kc < 0 || c.split_k < 0) {
    detail::debug_log("ignoring the malformed tuning record " + record_path(key).string());
    return std::nullopt;
  }
  r.from_record = true;
  return r;
}

void write_record(const std::string& key, const TuneResult& result, const std::string& about) {
  fs::path path = record_path(key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += "." + detail::unique_suffix() + ".tmp";
  {
    std::ofstream out(tmp);
    const codegen::GemmConfig& c = result.config;
    out << kMagic << "\nconfig " << c.mc << " " << c.nc << " " << c.kc << " " << c.kernel << " "
        << c.split_k << "\nseconds " << result.default_seconds << " " << result.best_seconds << " "
        << result.candidates << "\nkernel " << about << "\n";
    if (!out) {  // a record is an optimisation: failing to keep one is not an
                 // error
      detail::debug_log("cannot write the tuning record " + tmp.string());
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace ember::tune
