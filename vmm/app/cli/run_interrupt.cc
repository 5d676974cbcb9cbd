#include "vmm/app/cli/run_interrupt.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sigvisor::cli {
namespace {

std::atomic<bool> g_interrupted{false};
// RemoveOnInterrupt's path: written only while g_remove_armed is false.
char g_remove_path[PATH_MAX];
std::atomic<bool> g_remove_armed{false};

void OnInterrupt(int signo) {
  const int saved_errno = errno;
  // SA_RESETHAND reset the signal that came; the other one goes back to its default
  // too, so that after the first either ends the process at once.
  struct sigaction fallback;
  std::memset(&fallback, 0, sizeof(fallback));
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(SIGINT, &fallback, nullptr);
  sigaction(SIGTERM, &fallback, nullptr);
  if (g_interrupted.exchange(true, std::memory_order_acq_rel)) {
    // The second signal, taken by another thread while the first one's handler ran
    // (a SIGTERM right behind a SIGINT): it ends the process all the same, once this
    // handler returns and unblocks it.
    ::raise(signo);
    return;
  }
  if (g_remove_armed.exchange(false, std::memory_order_acq_rel)) ::unlink(g_remove_path);
  static const char kMessage[] =
      "\nsigvisor: interrupted: stopping the guest, then reporting what it measured "
      "(interrupt again to quit at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
  errno = saved_errno;
}

}  // namespace

void InstallRunInterruptHandler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnInterrupt;
  // Both blocked while the handler runs: a SIGTERM right behind a SIGINT finds the
  // default disposition.
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  // SA_RESETHAND: the second signal ends the process as usual. SA_RESTART keeps the
  // console's writes and the gdb stub's reads going; KVM_RUN returns EINTR all the
  // same (KVM does not restart it), which the run loop takes as a kick.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

const std::atomic<bool>* RunInterruptFlag() { return &g_interrupted; }

void RemoveOnInterrupt(const std::string& path) {
  g_remove_armed.store(false, std::memory_order_release);
  if (path.empty() || path.size() >= sizeof(g_remove_path)) return;
  std::memcpy(g_remove_path, path.c_str(), path.size() + 1);
  g_remove_armed.store(true, std::memory_order_release);
}

}  // namespace sigvisor::cli
