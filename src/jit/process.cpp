// Child processes: posix_spawn, no shell.
#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace ember::detail {

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds) {
  ProcessResult result;
  int fds[2];
  // O_CLOEXEC: other threads spawn compilers at the same time, and a child that inherited
  // our write end would keep the pipe open, so our read would not see end-of-file.
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.output = std::string("pipe2 failed: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);  // dup2 clears O_CLOEXEC
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Its own process group, so that a time-out kills the compiler driver's children too.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (timeout_seconds > 0) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    result.output = std::strerror(rc);
    return result;
  }
  result.started = true;
  char buf[8192];
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_seconds > 0 ? timeout_seconds : 0);
  for (;;) {
    if (timeout_seconds > 0 && !result.timed_out) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fds[0], POLLIN, 0};
      const int ready =
          left.count() > 0
              ? poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000 * 1000)))
              : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0 && std::chrono::steady_clock::now() >= deadline) {
        // Out of time: kill it; its end of the pipe closes, so the reads below see EOF
        // (unless a grandchild holds it: the compiler's own subprocesses die with it).
        kill(-pid, SIGKILL);
        result.timed_out = true;
        break;
      }
      if (ready == 0) continue;
    }
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n > 0) {
      result.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno == EINTR) continue;
    // ECHILD: the host process ignores SIGCHLD, so the exit status is lost. Report
    // success; callers also check that the expected output file exists.
    status = 0;
    break;
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string quote_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\"'\\$") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

}  // namespace ember::detail
