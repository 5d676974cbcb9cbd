// Exits per op of the embedded Linux init's phases (guest-kit/linux/workloads.c), as
// the VMM counts them. Where CPL0 runs directly, nothing a workload does leaves the
// guest (timer ticks are KVM's own, in its stats, not exits to the VMM). Where it is
// emulated (PVM), each system call is one exit, the VMM's SYSCALL completion:
// divzero's sigreturn; sig_inst's sigaction; sig_hndl's kill and sigreturn;
// sigpingpong's kill, sigsuspend and sigreturn in each of its two processes; pipe_rw's
// write and read. One place for the Linux tests: a booted run is checked against it
// (linux_guest_test), and so is a restored one on a PVM host, where a second boot to
// set beside it would cost minutes (linux_snapshot_test).
#ifndef SIGVISOR_TESTS_LINUX_EXITS_PER_OP_H_
#define SIGVISOR_TESTS_LINUX_EXITS_PER_OP_H_

#include <map>
#include <string>

namespace sigvisor::testing {

// -1 for a phase the table does not know.
inline int LinuxExitsPerOp(const std::string& phase, bool cpl0_emulated) {
  static const std::map<std::string, int> kSyscallsPerOp = {
      {"divzero", 1}, {"sig_inst", 1}, {"sig_hndl", 2}, {"sigpingpong", 6}, {"pipe_rw", 2}};
  const auto found = kSyscallsPerOp.find(phase);
  if (found == kSyscallsPerOp.end()) return -1;
  return cpl0_emulated ? found->second : 0;
}

}  // namespace sigvisor::testing

#endif  // SIGVISOR_TESTS_LINUX_EXITS_PER_OP_H_
