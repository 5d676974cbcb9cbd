// Fault injection on x86-64 (`--inject`, docs/inject.md): an exit interceptor that
// fires injections at their triggers and follows the guest's reports of what came
// of them.
//
// Triggers, all deterministic for a given image, spec and seed:
//  - at=ADDRESS: a VMM hardware execution breakpoint (this host fires them at CPL0);
//    after each hit the breakpoint is lifted for one single step, as gdb does.
//  - op=K / random: while a phase with such a spec runs, a breakpoint on the kernel's
//    syscall_dispatch counts entries into the phase's per-op system call (the guest
//    names it in the phase_begin hypercall).
//  - exit=N: the N-th exit the guest caused (instrument exits excluded).
// Actions:
//  - an exception in the kernel is raised at once (KVM_SET_VCPU_EVENTS); one for
//    the user task, and a signal from the host (mailbox + KVM_INTERRUPT), wait for
//    the interrupt window, which opens exactly when the kernel's iretq returns to
//    user mode (the kernel runs with interrupts off, user code with them on);
//  - a page edit writes the guest's leaf PTE, then flushes KVM's shadow MMU by
//    re-registering guest RAM (a host write to a guest page table is invisible to
//    KVM's write tracking).
#ifndef SIGVISOR_ARCH_X86_64_VMM_INJECT_FAULT_INJECTOR_H_
#define SIGVISOR_ARCH_X86_64_VMM_INJECT_FAULT_INJECTOR_H_

#include <cstdint>
#include <vector>

#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/inject/injection_record.h"
#include "vmm/inject/injection_spec.h"

namespace sigvisor::x86 {

struct FaultInjectorOptions {
  std::vector<InjectionSpec> specs;
  uint64_t seed = 1;  // for `random` triggers
};

// A factory for MachineConfig::interceptors. The records (one per injection planned,
// fired or not) go to `out`, which must outlive the run. Specs that cannot work in
// this image (an unknown symbol) fail the factory with a one-line error.
InterceptorFactory FaultInjectorFactory(FaultInjectorOptions options,
                                      std::vector<InjectionRecord>* out);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_INJECT_FAULT_INJECTOR_H_
