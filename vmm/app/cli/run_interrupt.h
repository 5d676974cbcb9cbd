// Ctrl-C (SIGINT) and SIGTERM during `sigvisor run`: the first sets a flag the run's
// watchdog looks at (SessionOptions::interrupt), which stops the guest as a timeout
// does, so that the run ends with Outcome::kInterrupted and reports what it measured;
// it prints one line saying so and removes the file registered with
// RemoveOnInterrupt. The handler is installed with SA_RESETHAND: a second signal ends
// the process at once (the default disposition).
#ifndef SIGVISOR_VMM_APP_CLI_RUN_INTERRUPT_H_
#define SIGVISOR_VMM_APP_CLI_RUN_INTERRUPT_H_

#include <atomic>
#include <string>

namespace sigvisor::cli {

void InstallRunInterruptHandler();

// The flag the handler sets, for SessionOptions::interrupt.
const std::atomic<bool>* RunInterruptFlag();

// A temporary file the handler itself removes (unlink(2) is async-signal-safe), so
// that it goes even when a second signal ends the process before the run's own
// clean-up does: --gdb's symbols file. "" forgets it (once the run removed it).
void RemoveOnInterrupt(const std::string& path);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_RUN_INTERRUPT_H_
