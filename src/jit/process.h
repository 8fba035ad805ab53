// Running a child program (the C++ compiler) without a shell.
#pragma once

#include <string>
#include <vector>

namespace ember::detail {

struct ProcessResult {
  bool started = false;  // false: the program could not be started; `output` says why
  int exit_code = -1;    // exit status, or 128 + signal number when it was killed
  std::string output;    // stdout and stderr, interleaved
  bool timed_out = false;  // killed (SIGKILL) after the time limit
};

// Runs argv (argv[0] a path) with posix_spawn (vfork-like, cheap even from a process with a
// large address space such as a PyTorch process), stdin from /dev/null, stdout and stderr
// into one pipe. With timeout_seconds > 0, a child still running after that long is killed
// (SIGKILL) and the result says timed_out.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds = 0);

// The value of environment variable `name`, or "" when it is not set.
std::string env_or_empty(const char* name);

// The command as a shell would read it, for error messages.
std::string quote_command(const std::vector<std::string>& argv);

}  // namespace ember::detail
