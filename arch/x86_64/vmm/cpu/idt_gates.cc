#include "arch/x86_64/vmm/cpu/idt_gates.h"

#include <algorithm>
#include <array>

namespace sigvisor::x86 {

std::optional<IdtGate> ReadIdtGate(const VcpuState& cpu, const kvm_sregs& sregs, int vector) {
  if (vector < 0 || vector > 255) return std::nullopt;
  if ((static_cast<uint64_t>(vector) + 1) * kIdtGateBytes > uint64_t{sregs.idt.limit} + 1) {
    return std::nullopt;  // past the IDT's limit
  }
  std::array<uint8_t, kIdtGateBytes> gate;
  const uint64_t address = sregs.idt.base + vector * kIdtGateBytes;
  if (!cpu.ReadVirtual(sregs.cr3, address, gate)) return std::nullopt;
  if (!(gate[5] & 0x80)) return std::nullopt;  // not present
  const uint64_t handler = uint64_t{gate[0]} | uint64_t{gate[1]} << 8 |
                           uint64_t{gate[6]} << 16 | uint64_t{gate[7]} << 24 |
                           uint64_t{gate[8]} << 32 | uint64_t{gate[9]} << 40 |
                           uint64_t{gate[10]} << 48 | uint64_t{gate[11]} << 56;
  return IdtGate{vector, address, handler};
}

std::vector<IdtGate> ReadIdtGates(const VcpuState& cpu, const kvm_sregs& sregs) {
  std::vector<IdtGate> gates;
  const uint64_t count = std::min<uint64_t>((sregs.idt.limit + 1) / kIdtGateBytes, 256);
  for (uint64_t vector = 0; vector < count; ++vector) {
    if (std::optional<IdtGate> gate = ReadIdtGate(cpu, sregs, static_cast<int>(vector))) {
      gates.push_back(*gate);
    }
  }
  return gates;
}

}  // namespace sigvisor::x86
