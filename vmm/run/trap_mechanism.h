// The trap mechanisms: how a run's guest debug-register accesses and segment-register
// loads reach the VMM (the x86-64 machine arms them: arch/x86_64/vmm/trap/trap_engine.h
// says how each works). Here, not in the machine, because the generic layers carry
// them too (a bench matrix's runs, a study's figures, a run's report) and must not
// depend on the x86-64 machine for a name. Everything carries the enum; the name is
// for what a person or a document reads: --trap's values, the reports' text, CSV and
// JSON (docs/schema: "trap_mechanism", a bench matrix's "traps").
#ifndef SIGVISOR_VMM_RUN_TRAP_MECHANISM_H_
#define SIGVISOR_VMM_RUN_TRAP_MECHANISM_H_

#include <optional>
#include <string_view>

namespace sigvisor {

enum class TrapMechanism {
  kOff,    // nothing is trapped: the control run
  kPatch,  // each site starts with hlt, which exits
  kHwGd,   // DR7.GD for debug-register accesses (hardware KVM); segment loads patched
  kPv,     // a debugreg=pv kernel counts its own writes in a page it shares with the VMM
};

// "off", "patch", "hw-gd", "pv".
std::string_view TrapMechanismName(TrapMechanism mechanism);

// The mechanism `name` names, or nullopt: each flag and document that reads a name
// words its own refusal. (`auto` is none: the CLI resolves it before anything runs.)
std::optional<TrapMechanism> ParseTrapMechanism(std::string_view name);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_TRAP_MECHANISM_H_
