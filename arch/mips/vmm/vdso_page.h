// The MIPS machine's vdso page (docs/mips-platform.md, "The vdso page"): one page of
// host memory holding the signal-return trampoline, mapped read-only into guest
// physical memory at kVdsoAddress and shared by every core of the machine (each core
// reads the same host bytes; none has a copy). The boot info names its address
// (sigvisor_boot_info.vdso_gpa) and the guest kernel maps it into every process.
//
// Its contents come from the ABI header's one definition of the trampoline
// (SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN*), which the kernel's own copy (arch/mips/
// guest/vdso.S, used under QEMU) is assembled from too.
#ifndef SIGVISOR_ARCH_MIPS_VMM_VDSO_PAGE_H_
#define SIGVISOR_ARCH_MIPS_VMM_VDSO_PAGE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor::mips {

// Guest-physical: beside sigvisor's own devices (0x1f100000 hypercalls, 0x1f200000
// IPIs), above any RAM the machine takes (at most 256 MiB) and below 512 MiB, so that
// the kernel reaches it through kseg0/kseg1 as well as through a user mapping.
inline constexpr uint64_t kVdsoAddress = 0x1f300000;

class VdsoPage {
 public:
  static constexpr size_t kBytes = SIGVISOR_VDSO_PAGE_BYTES;

  // The page as the VMM supplies it: the trampoline at its offset, zeros elsewhere.
  static std::array<uint8_t, kBytes> Contents();

  VdsoPage() : bytes_(Contents()) {}
  VdsoPage(const VdsoPage&) = delete;
  VdsoPage& operator=(const VdsoPage&) = delete;

  // The host page the cores read. The interpreter never stores to it: a guest store
  // faults (MipsCore). Non-const only so that the cores' soft TLBs, which hold plain
  // byte pointers for RAM and this page alike, can point at it.
  uint8_t* host() { return bytes_.data(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  // Still exactly Contents(): nothing the guest did changed the VMM's copy.
  bool Intact() const { return bytes_ == Contents(); }

 private:
  alignas(kBytes) std::array<uint8_t, kBytes> bytes_;
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_VDSO_PAGE_H_
