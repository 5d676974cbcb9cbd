// The run-loop sandbox: a seccomp allowlist (Debian's libseccomp) installed on the
// thread that runs KVM_RUN, before the first guest instruction, as Solo5's hvt and
// Firecracker do. Everything the VMM needs from the kernel while the guest runs is
// on the list (KVM ioctls, reads and writes of already open descriptors, memory
// management for the allocator, futexes and the watchdog's thread and kick signal,
// clocks); anything else (opening files, exec, new sockets, ptrace, ...) fails with
// EPERM. The filter is per thread (no TSYNC): the rest of the process (argument
// parsing, report writing after the run) is unaffected, and it ends with the thread.
//
// EPERM rather than a kill: a syscall the list forgot makes one operation fail with
// an error the VMM reports, instead of killing the process and losing everything
// the run measured so far.
#ifndef SIGVISOR_VMM_SANDBOX_SECCOMP_FILTER_H_
#define SIGVISOR_VMM_SANDBOX_SECCOMP_FILTER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace sigvisor {

struct SandboxPolicy {
  // --gdb: the stub's socket I/O (accept, recv/send, poll, shutdown, close).
  bool allow_gdb_sockets = false;
};

// The syscall names the policy allows (for reports and tests).
std::vector<std::string> SandboxAllowlist(const SandboxPolicy& policy);

// Installs the filter on the calling thread (and threads it creates later). Sets
// no_new_privs for the thread, as seccomp requires without CAP_SYS_ADMIN.
absl::Status InstallRunLoopSandbox(const SandboxPolicy& policy);

// One line for reports: "seccomp allowlist (N syscalls, EPERM otherwise)" or "off".
std::string SandboxDescription(bool enabled, const SandboxPolicy& policy);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_SANDBOX_SECCOMP_FILTER_H_
