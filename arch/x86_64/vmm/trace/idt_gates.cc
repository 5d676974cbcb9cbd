#include "arch/x86_64/vmm/trace/idt_gates.h"

#include <algorithm>
#include <array>

namespace sigvisor::x86 {

std::vector<IdtGate> ReadIdtGates(const VcpuState& cpu, const kvm_sregs& sregs) {
  std::vector<IdtGate> gates;
  const uint64_t count = std::min<uint64_t>((sregs.idt.limit + 1) / kIdtGateBytes, 256);
  for (uint64_t vector = 0; vector < count; ++vector) {
    std::array<uint8_t, kIdtGateBytes> gate;
    const uint64_t address = sregs.idt.base + vector * kIdtGateBytes;
    if (!cpu.ReadVirtual(sregs.cr3, address, gate)) continue;
    if (!(gate[5] & 0x80)) continue;  // not present
    const uint64_t handler = uint64_t{gate[0]} | uint64_t{gate[1]} << 8 |
                             uint64_t{gate[6]} << 16 | uint64_t{gate[7]} << 24 |
                             uint64_t{gate[8]} << 32 | uint64_t{gate[9]} << 40 |
                             uint64_t{gate[10]} << 48 | uint64_t{gate[11]} << 56;
    gates.push_back(IdtGate{static_cast<int>(vector), address, handler});
  }
  return gates;
}

}  // namespace sigvisor::x86
