// What a VM exit means to a run loop before any device or interceptor sees it: one
// classifier for the Session's loop and the APs' (arch/x86_64/vmm/ap_runner), so
// that both fail the same way with the same words.
#ifndef SIGVISOR_VMM_RUN_EXIT_CLASSIFIER_H_
#define SIGVISOR_VMM_RUN_EXIT_CLASSIFIER_H_

#include <string>

#include "vmm/ledger/exit_ledger.h"
#include "vmm/run/outcome.h"
#include "vmm/run/vm_exit.h"

namespace sigvisor {

struct ExitClass {
  // Port I/O or MMIO: the loop carries it out (device_exit.h), whose answer is the
  // verdict. Otherwise the verdict is here: kContinue (a stray kick) or kRunFailed.
  bool device_access = false;
  RunVerdict verdict = RunVerdict::kContinue;
  Outcome outcome = Outcome::kUnexpectedExit;  // kRunFailed
  // kRunFailed: one line, without where the guest was (the loop adds it).
  std::string diagnosis;
};

// For an exit no interceptor took. Formats only when the run ends.
ExitClass ClassifyExit(const VmExit& exit);

// How the exit ledger keys an exit no interceptor took: its kind, and the access
// (port or address, direction) or KVM's suberror. Nothing is named here.
ExitKey ExitKeyOf(const VmExit& exit);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_EXIT_CLASSIFIER_H_
