// Diagnostics on stderr by channel (include/ember/support/log.h).
#include "ember/support/log.h"

#include <cstdio>
#include <cstdlib>

namespace ember {

bool log_enabled(std::string_view channel) {
  const char* env = std::getenv("EMBER_LOG");
  if (env == nullptr) return false;
  std::string_view list(env);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (list.substr(0, comma) == channel) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

void log_message(std::string_view channel, const std::string& message) {
  const std::string line = "ember[" + std::string(channel) + "]: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void log_warning(const std::string& message) {
  const std::string line = "ember: warning: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace ember
