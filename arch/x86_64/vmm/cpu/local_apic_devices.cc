// Byte-level adapters from the bus to LocalApics. The access names come from the
// model's register table, so the ledger and the model's refusals name a register alike.
#include "arch/x86_64/vmm/cpu/local_apic_devices.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

uint64_t LoadLittleEndian(std::span<const uint8_t> bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i) value |= uint64_t{bytes[i]} << (8 * i);
  return value;
}

void StoreLittleEndian(uint64_t value, std::span<uint8_t> bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
}

// "lapic ICR", "x2apic EOI"; where the model has no register, the address the guest
// used: the page offset or the MSR.
std::string NameAccess(std::string_view device, std::optional<std::string_view> reg,
                       uint64_t address) {
  if (reg.has_value()) return absl::StrFormat("%s %s", device, *reg);
  return absl::StrFormat("%s 0x%x", device, address);
}

}  // namespace

absl::StatusOr<uint32_t> LocalApicWindow::RegisterOf(uint64_t offset, size_t size) const {
  if (!x2apic()) {
    if (size == 4 && offset % 16 == 0 && offset < kXapicPageSize) {
      return static_cast<uint32_t>(offset);
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d-byte local APIC access at offset %#x: its registers take 4-byte accesses at "
        "16-byte aligned offsets",
        size, offset));
  }
  const uint64_t msr = kX2apicFirstMsr + offset;
  if (offset >= kX2apicMsrCount) {
    return absl::InvalidArgumentError(absl::StrFormat("MSR %#x is not an x2APIC MSR", msr));
  }
  if (size != 8) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d-byte access to x2APIC MSR %#x: MSRs are 8 bytes", size, msr));
  }
  // MSR 0x800 + n is the register at xAPIC offset n << 4.
  return static_cast<uint32_t>(offset << 4);
}

std::string LocalApicWindow::AccessName(uint64_t offset) const {
  std::optional<std::string_view> reg;
  if (!x2apic()) {
    reg = LocalApicRegisterName(offset, /*x2apic=*/false);
  } else if (offset < kX2apicMsrCount) {
    reg = LocalApicRegisterName(offset << 4, /*x2apic=*/true);
  }
  return NameAccess(name(), reg, x2apic() ? kX2apicFirstMsr + offset : offset);
}

absl::StatusOr<DeviceAction> LocalApicWindow::Read(uint64_t offset, std::span<uint8_t> data) {
  absl::StatusOr<uint32_t> reg = RegisterOf(offset, data.size());
  if (!reg.ok()) return reg.status();
  absl::StatusOr<uint64_t> value = apics_.Read(calling_vcpu_(), *reg, x2apic());
  if (!value.ok()) return value.status();
  StoreLittleEndian(*value, data);
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> LocalApicWindow::Write(uint64_t offset,
                                                    std::span<const uint8_t> data) {
  absl::StatusOr<uint32_t> reg = RegisterOf(offset, data.size());
  if (!reg.ok()) return reg.status();
  if (absl::Status written = apics_.Write(calling_vcpu_(), *reg, LoadLittleEndian(data), x2apic());
      !written.ok()) {
    return written;
  }
  return DeviceAction::kContinue;
}

}  // namespace sigvisor::x86
