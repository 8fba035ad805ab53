// Diagnostics on stderr, switched on per channel by EMBER_LOG (docs/building.md): a
// comma-separated list of channels, such as "debug" or "debug,fusion".
#pragma once

#include <string>
#include <string_view>

namespace ember {

// Whether EMBER_LOG names `channel`. The variable is read at every call.
bool log_enabled(std::string_view channel);

// Writes "ember[<channel>]: <message>" to stderr, as one write.
void log_message(std::string_view channel, const std::string& message);

// Writes "ember: warning: <message>" to stderr, as one write, whatever EMBER_LOG says:
// something the user should know about went wrong, and ember carried on.
void log_warning(const std::string& message);

}  // namespace ember
