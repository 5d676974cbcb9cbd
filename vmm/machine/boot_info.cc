#include "vmm/machine/boot_info.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {

absl::Status WriteBootInfo(GuestMemory& memory, uint64_t gpa, const BootInfoParams& params) {
  constexpr uint64_t kPageSize = 4096;
  sigvisor_boot_info info = {};
  info.magic = SIGVISOR_BOOT_INFO_MAGIC;
  info.abi_version = SIGVISOR_ABI_VERSION;
  info.mem_bytes = memory.size();
  info.free_gpa = (params.image_end + kPageSize - 1) & ~(kPageSize - 1);
  info.tsc_khz = params.tsc_khz;
  info.flags = params.flags;
  if (params.vdso_gpa != 0 &&
      (params.vdso_gpa % SIGVISOR_VDSO_PAGE_BYTES != 0 || params.vdso_gpa < memory.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a vdso page at guest-physical %#x: it must be page-aligned and above RAM (%#x bytes)",
        params.vdso_gpa, memory.size()));
  }
  info.vdso_gpa = params.vdso_gpa;
  if (params.pv_page_gpa != 0 &&
      (params.pv_page_gpa % SIGVISOR_PV_PAGE_BYTES != 0 ||
       params.pv_page_gpa + SIGVISOR_PV_PAGE_BYTES > memory.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a pv page at guest-physical %#x: it must be a page inside RAM (%#x bytes)",
        params.pv_page_gpa, memory.size()));
  }
  info.pv_page_gpa = params.pv_page_gpa;
  if (params.cpus < 1 || params.cpus > SIGVISOR_MAX_CPUS) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d CPUs in the boot info: the ABI has 1 to %d", params.cpus, SIGVISOR_MAX_CPUS));
  }
  if (params.ipi > SIGVISOR_IPI_PV || (params.cpus == 1) != (params.ipi == SIGVISOR_IPI_NONE)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "IPI method %d on %d CPUs in the boot info: none with one CPU, x2apic (1), xapic (2) "
        "or pv (3) with several",
        params.ipi, params.cpus));
  }
  info.cpus = params.cpus;
  info.ipi = params.ipi;
  if (params.cmdline.size() >= sizeof(info.cmdline)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the guest command line is %d bytes; the boot ABI holds at most %d",
                        params.cmdline.size(), sizeof(info.cmdline) - 1));
  }
  // copy, not memcpy: an empty command line's data() may be null.
  std::copy(params.cmdline.begin(), params.cmdline.end(), info.cmdline);
  return memory.WriteObject(gpa, info);
}

}  // namespace sigvisor
