// Waiting for the debugger: `sigvisor run --gdb` takes gdb's connection before the
// guest's first instruction. The wait is bounded: it ends when a client connects, when
// `timeout` has passed (the run's --timeout) or when `*interrupt` is set (`run`'s
// Ctrl-C and SIGTERM). A signal handler cannot wake a wait, and the run loop's thread
// blocks SIGINT and SIGTERM anyway, so the flag is looked at every few milliseconds.
#ifndef SIGVISOR_VMM_GDB_ACCEPT_H_
#define SIGVISOR_VMM_GDB_ACCEPT_H_

#include <atomic>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sigvisor::gdb {

// How often AcceptClient looks at the interrupt flag and the clock.
inline constexpr absl::Duration kAcceptPoll = absl::Milliseconds(20);

// Accepts one connection on the listening socket `listen_fd` (close-on-exec), or
// fails: DeadlineExceeded once `timeout` has passed (never when it is infinite),
// Aborted once `*interrupt` is set (never when null), Unavailable when accept fails.
// EINTR is retried.
absl::StatusOr<int> AcceptClient(int listen_fd, absl::Duration timeout,
                                 const std::atomic<bool>* interrupt);

}  // namespace sigvisor::gdb

#endif  // SIGVISOR_VMM_GDB_ACCEPT_H_
