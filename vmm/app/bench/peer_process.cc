#include "vmm/app/bench/peer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "vmm/base/clock.h"
#include "vmm/base/unique_fd.h"

extern char** environ;

namespace sigvisor::bench {
namespace {

uint64_t TimevalNs(const timeval& tv) {
  return uint64_t(tv.tv_sec) * 1000000000ull + uint64_t(tv.tv_usec) * 1000ull;
}

// Waits for `pid` until `deadline_ns` (CLOCK_MONOTONIC); false when it is still
// running then. Sleeps in poll() on a pidfd, so the wait takes no CPU from the run
// it times; without pidfds (old kernels) it polls every 500 us.
bool WaitUntil(pid_t pid, uint64_t deadline_ns) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  for (;;) {
    const uint64_t now = MonotonicNs();
    if (now >= deadline_ns) return false;
    if (pidfd.get() >= 0) {
      pollfd ready = {pidfd.get(), POLLIN, 0};
      const int ms = static_cast<int>(std::min<uint64_t>((deadline_ns - now) / 1000000 + 1, 1000));
      if (::poll(&ready, 1, ms) > 0) return true;
      continue;
    }
    siginfo_t info = {};
    if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

}  // namespace

// `binary` on $PATH, or "".
std::string FindOnPath(const std::string& binary) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    if (dir.empty()) continue;
    std::string candidate = absl::StrCat(dir, "/", binary);
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

// Runs argv with stdin /dev/null and stdout/stderr into files; kills it after `timeout`.
Spawned Spawn(const std::vector<std::string>& argv, const std::string& out_path,
              const std::string& err_path, absl::Duration timeout) {
  Spawned result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const uint64_t start = MonotonicNs();
  pid_t pid;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    result.error = absl::StrFormat("cannot start %s: %s", argv[0], std::strerror(rc));
    return result;
  }
  const uint64_t deadline = start + static_cast<uint64_t>(absl::ToInt64Nanoseconds(timeout));
  if (!WaitUntil(pid, deadline)) {
    ::kill(pid, SIGKILL);
    result.timed_out = true;
  }
  int status = 0;
  struct rusage usage = {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.wall_ns = MonotonicNs() - start;
  result.cpu_ns = TimevalNs(usage.ru_utime) + TimevalNs(usage.ru_stime);
  if (!result.timed_out && WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

}  // namespace sigvisor::bench
