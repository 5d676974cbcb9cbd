#include "vmm/sandbox/seccomp_filter.h"

#include <errno.h>
#include <seccomp.h>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

// What the run loop, the watchdog thread, the devices, the trap engine, the tracer
// and the allocator call while the guest runs.
constexpr const char* kRunLoopSyscalls[] = {
    // KVM: KVM_RUN and the vCPU/VM ioctls (registers, debug registers, MSRs, events).
    "ioctl",
    // Console streaming and KVM's binary stats fd (pread), already open descriptors.
    "read", "write", "writev", "pread64", "lseek", "fstat", "newfstatat",
    // The allocator.
    "mmap", "munmap", "mremap", "mprotect", "madvise", "brk",
    // The watchdog thread: created, waited for, kicks the vCPU with a signal.
    "clone", "clone3", "set_robust_list", "rseq", "futex", "exit", "exit_group",
    "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "tgkill", "tkill", "getpid", "gettid",
    "sched_yield", "sched_getaffinity",
    // Clocks (usually the vDSO; the syscall is the fallback).
    "clock_gettime", "clock_nanosleep", "nanosleep", "gettimeofday",
    // Reading /dev/urandom-free randomness (absl hashing seeds).
    "getrandom",
};

constexpr const char* kGdbSyscalls[] = {
    "accept", "accept4", "recvfrom", "sendto", "recvmsg", "sendmsg", "poll", "ppoll",
    "select", "pselect6", "shutdown", "close", "setsockopt", "getsockopt", "fcntl", "pipe2",
};

}  // namespace

std::vector<std::string> SandboxAllowlist(const SandboxPolicy& policy) {
  std::vector<std::string> names(std::begin(kRunLoopSyscalls), std::end(kRunLoopSyscalls));
  if (policy.allow_gdb_sockets) names.insert(names.end(), std::begin(kGdbSyscalls), std::end(kGdbSyscalls));
  return names;
}

absl::Status InstallRunLoopSandbox(const SandboxPolicy& policy) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  // No TSYNC: the filter confines this thread and the threads it creates.
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 0);
  for (const std::string& name : SandboxAllowlist(policy)) {
    const int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // not a syscall on this architecture
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0); rc < 0) {
      seccomp_release(ctx);
      return absl::InternalError(absl::StrFormat("seccomp_rule_add(%s): %s", name, strerror(-rc)));
    }
  }
  const int rc = seccomp_load(ctx);  // sets no_new_privs (SCMP_FLTATR_CTL_NNP defaults on)
  seccomp_release(ctx);
  if (rc < 0) return absl::InternalError(absl::StrFormat("seccomp_load: %s", strerror(-rc)));
  return absl::OkStatus();
}

std::string SandboxDescription(bool enabled, const SandboxPolicy& policy) {
  if (!enabled) return "off";
  return absl::StrFormat("seccomp allowlist on the run-loop thread (%d syscalls%s, EPERM otherwise)",
                         SandboxAllowlist(policy).size(),
                         policy.allow_gdb_sockets ? " incl. gdb sockets" : "");
}

}  // namespace sigvisor
