#include "vmm/gdb/accept.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace sigvisor::gdb {

absl::StatusOr<int> AcceptClient(int listen_fd, absl::Duration timeout,
                                 const std::atomic<bool>* interrupt) {
  const bool bounded = timeout != absl::InfiniteDuration();
  const absl::Time deadline = bounded ? absl::Now() + timeout : absl::InfiniteFuture();
  for (;;) {
    if (interrupt != nullptr && interrupt->load(std::memory_order_acquire)) {
      return absl::AbortedError("interrupted while waiting for a debugger");
    }
    const absl::Duration left = deadline - absl::Now();
    if (bounded && left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrFormat("no debugger attached within %s", absl::FormatDuration(timeout)));
    }
    // Without a flag to look at, only the deadline bounds each wait.
    absl::Duration slice = interrupt != nullptr ? kAcceptPoll : absl::InfiniteDuration();
    if (bounded) slice = std::min(slice, left);
    const int wait_ms =
        slice == absl::InfiniteDuration()
            ? -1
            : static_cast<int>(std::max<int64_t>(
                  1, absl::ToInt64Milliseconds(absl::Ceil(slice, absl::Milliseconds(1)))));
    pollfd listening = {listen_fd, POLLIN, 0};
    const int ready = ::poll(&listening, 1, wait_ms);
    if (ready < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrFormat("--gdb: poll: %s", strerror(errno)));
    }
    if (ready <= 0) continue;  // the slice passed, or a signal came: look again
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return fd;
    // A client that went away between poll and accept, or a signal: wait on.
    if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN || errno == EWOULDBLOCK) {
      continue;
    }
    return absl::UnavailableError(absl::StrFormat("--gdb: accept: %s", strerror(errno)));
  }
}

}  // namespace sigvisor::gdb
