// A vCPU for emulator and DR-shadow tests: segment registers, MSRs, debug registers
// and a sparse, identity-mapped guest memory, with counts of what was done to them.
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_FAKE_TRAP_CPU_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_FAKE_TRAP_CPU_H_

#include <map>
#include <vector>

#include "arch/x86_64/vmm/trap/emulator.h"

namespace sigvisor::trap {

class FakeTrapCpu : public TrapCpu {
 public:
  FakeTrapCpu() {
    // 64-bit mode at CPL0.
    sregs.cs.selector = 0x10;
    sregs.cs.l = 1;
    sregs.cs.present = 1;
    sregs.cs.s = 1;
    sregs.cs.type = 0xb;
    sregs.ldt.unusable = 1;
    sregs.efer = 0xd01;
  }

  kvm_sregs sregs = {};
  std::map<uint32_t, uint64_t> msrs;  // an MSR not here is refused
  DebugRegs debug;                    // the "hardware" debug registers
  int debug_gets = 0;
  int debug_sets = 0;
  int sregs_sets = 0;
  std::map<uint64_t, uint8_t> memory;  // mapped bytes; cr3 is ignored
  std::vector<Fault> injected;

  void Map(uint64_t address, std::vector<uint8_t> bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) memory[address + i] = bytes[i];
  }
  void MapQuad(uint64_t address, uint64_t value) {
    for (int i = 0; i < 8; ++i) memory[address + i] = static_cast<uint8_t>(value >> (8 * i));
  }
  uint64_t Quad(uint64_t address) const {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= uint64_t{memory.at(address + i)} << (8 * i);
    return value;
  }

  absl::StatusOr<DebugRegs> GetDebugRegs() override {
    ++debug_gets;
    return debug;
  }
  absl::Status SetDebugRegs(const DebugRegs& regs) override {
    ++debug_sets;
    debug = regs;
    return absl::OkStatus();
  }
  absl::StatusOr<kvm_sregs> GetSregs() override { return sregs; }
  absl::Status SetSregs(const kvm_sregs& value) override {
    ++sregs_sets;
    sregs = value;
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<uint64_t>> GetMsr(uint32_t index) override {
    auto it = msrs.find(index);
    if (it == msrs.end()) return std::optional<uint64_t>();
    return std::optional<uint64_t>(it->second);
  }
  absl::StatusOr<bool> SetMsr(uint32_t index, uint64_t value) override {
    auto it = msrs.find(index);
    if (it == msrs.end()) return false;
    it->second = value;
    return true;
  }
  bool ReadVirtual(uint64_t, uint64_t gva, std::span<uint8_t> out) override {
    for (size_t i = 0; i < out.size(); ++i) {
      auto it = memory.find(gva + i);
      if (it == memory.end()) return false;
      out[i] = it->second;
    }
    return true;
  }
  bool WriteVirtual(uint64_t, uint64_t gva, std::span<const uint8_t> data) override {
    for (size_t i = 0; i < data.size(); ++i) {
      if (!memory.contains(gva + i)) return false;
    }
    for (size_t i = 0; i < data.size(); ++i) memory[gva + i] = data[i];
    return true;
  }
  absl::Status InjectFault(const Fault& fault) override {
    injected.push_back(fault);
    return absl::OkStatus();
  }
};

}  // namespace sigvisor::trap

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_FAKE_TRAP_CPU_H_
