// The struct sigvisor_boot_info every sigvisor image boots with (guest-kit/abi/
// sigvisor_abi.h), written the same way for every arch's machine.
#ifndef SIGVISOR_VMM_MACHINE_BOOT_INFO_H_
#define SIGVISOR_VMM_MACHINE_BOOT_INFO_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor {

struct BootInfoParams {
  uint64_t image_end = 0;  // the image's highest load address: free memory starts after it
  uint64_t tsc_khz = 0;    // the guest's cycle counter rate, 0 if unknown
  uint32_t flags = 0;      // SIGVISOR_BOOT_*
  // Guest-physical address of the VMM's read-only vdso page, 0 for none (the x86-64
  // machine has none; the MIPS machine's is arch/mips/vmm/vdso_page.h). Must be
  // page-aligned and outside RAM: the page is the VMM's, not guest memory.
  uint32_t vdso_gpa = 0;
  std::string_view cmdline;
  // Guest-physical address of the paravirtual debug-register page (--trap=pv, x86-64),
  // 0 for none. Must be a page of RAM: the guest writes it.
  uint64_t pv_page_gpa = 0;
  // The machine's vCPUs (sigvisor_boot_info.cpus), 1 to SIGVISOR_MAX_CPUS, and how the
  // guest sends IPIs (SIGVISOR_IPI_*): SIGVISOR_IPI_NONE with one vCPU, another with
  // several.
  uint32_t cpus = 1;
  uint32_t ipi = 0;
};

// Writes the boot info at guest-physical `gpa`. A command line longer than the ABI
// holds, a vdso page that is not a page outside RAM, or a CPU count or IPI method the ABI
// does not have, is refused with one line.
absl::Status WriteBootInfo(GuestMemory& memory, uint64_t gpa, const BootInfoParams& params);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_MACHINE_BOOT_INFO_H_
