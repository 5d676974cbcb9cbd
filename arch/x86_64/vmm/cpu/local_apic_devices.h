// The bus's two ways into the VMM's local APICs (LocalApics): the xAPIC page at
// 0xfee00000 and the x2APIC MSRs 0x800-0x8ff. Both are shared by every vCPU thread, so
// each asks `calling_vcpu` whose APIC an access is for; they only turn bytes into
// register values and leave every rule about the registers to the model.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_LOCAL_APIC_DEVICES_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_LOCAL_APIC_DEVICES_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/cpu/local_apic.h"
#include "vmm/machine/device.h"

namespace sigvisor::x86 {

// One of the two windows; registered once for each: the xAPIC page (MMIO, offset =
// byte offset in the page, only 4-byte accesses at 16-byte aligned offsets, as the SDM
// allows; the machine puts it at the guest's SIGVISOR_XAPIC_GPA) or the x2APIC MSRs (the
// bus's MSR space, offset = MSR - kX2apicFirstMsr, 8 bytes of EDX:EAX).
class LocalApicWindow : public Device {
 public:
  enum class Kind { kXapicPage, kX2apicMsrs };
  static constexpr uint64_t kXapicPageSize = 0x1000;
  static constexpr uint64_t kX2apicFirstMsr = LocalApics::kX2apicFirstMsr;
  static constexpr uint64_t kX2apicMsrCount = 0x100;

  LocalApicWindow(Kind kind, LocalApics& apics, std::function<int()> calling_vcpu)
      : kind_(kind), apics_(apics), calling_vcpu_(std::move(calling_vcpu)) {}

  // "lapic" (the xAPIC page) or "x2apic".
  std::string_view name() const override { return x2apic() ? "x2apic" : "lapic"; }
  std::string AccessName(uint64_t offset) const override;
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

 private:
  bool x2apic() const { return kind_ == Kind::kX2apicMsrs; }
  // The register (its xAPIC offset) an access of `size` bytes at `offset` reaches, or
  // why the window refuses it.
  absl::StatusOr<uint32_t> RegisterOf(uint64_t offset, size_t size) const;

  Kind kind_;
  LocalApics& apics_;
  std::function<int()> calling_vcpu_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_LOCAL_APIC_DEVICES_H_
