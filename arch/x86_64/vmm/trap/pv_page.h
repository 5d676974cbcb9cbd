// The VMM's side of the paravirtual debug-register page (--trap=pv; the layout and
// the protocol are guest-kit/abi/sigvisor_abi.h's, "The paravirtual debug-register
// page"). A kernel built with debugreg=pv writes its debug registers into the page
// and counts every write there, per register and per calling site, without an exit;
// it makes hypercall SIGVISOR_HC_PV_DEBUGREG_LOAD only when the hardware must change.
//
// The page is guest memory: the guest can write anything into it at any time, so
// everything read from it is validated, and nothing in it can make the VMM fail or
// grow without bound. A counter that went backwards counts nothing; a site entry of
// an unknown kind is skipped; site counts are capped by their kind's counters, and
// what no site entry accounts for is reported at address 0 ("no site recorded").
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_PV_PAGE_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_PV_PAGE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/trap/dr_shadow.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::trap {

// Writes the guest counted since the last Collect(), from one site.
struct PvTraps {
  std::string_view kind;  // "dr_write" or "segment_load" (as the patch mechanism names them)
  uint64_t address = 0;   // the caller's return address; 0: no site recorded
  uint64_t count = 0;
  bool operator==(const PvTraps&) const = default;
};

class PvPage {
 public:
  // Lays the page out at `gpa` (page-aligned, inside RAM): magic, ABI version, and
  // the registers as `hardware` holds them, both as the guest's values and as loaded.
  static absl::StatusOr<PvPage> Create(GuestMemory& memory, uint64_t gpa,
                                       const DebugRegs& hardware);
  // The page a restored guest already uses (docs/snapshots.md): read as it stands, its
  // counters then counted from there, as Create's from zero.
  static absl::StatusOr<PvPage> Adopt(GuestMemory& memory, uint64_t gpa);

  // What the guest counted since the last call, by kind and site, in site order,
  // then the writes no site accounts for. Never fails: the page is in RAM (checked
  // at Create), and whatever the guest wrote there is only counted or skipped.
  std::vector<PvTraps> Collect();

  // The guest's load request (the hypercall's argument: the page's address). Hands
  // the page's registers to `shadow`, which loads `hw` at most once, and writes what
  // the hardware holds back into the page's `loaded`. Returns the loads made (0 or
  // 1). InvalidArgument: the guest's fault (another argument, DR6/DR7 with bits
  // 63:32 set, which `mov` would refuse with #GP); anything else is the host's.
  absl::StatusOr<uint64_t> Load(uint64_t argument, DrShadow& shadow, DrHardware& hw);

  uint64_t gpa() const { return gpa_; }

 private:
  PvPage(GuestMemory& memory, uint64_t gpa) : memory_(&memory), gpa_(gpa) {}
  absl::StatusOr<sigvisor_pv_page> Read() const;

  GuestMemory* memory_;
  uint64_t gpa_;
  sigvisor_pv_page last_ = {};     // the counters as Collect() last took them
  uint64_t dr6_writes_seen_ = 0;   // dr_writes[6] at the last Load()
};

}  // namespace sigvisor::trap

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_PV_PAGE_H_
