// The x86-64 registers the gdb stub offers, in gdb's numbering: the amd64 core
// feature (general registers, rip, eflags, segment selectors, and the x87 registers
// gdb requires of that feature, which sigvisor guests do not use: they read as zero
// and writes are ignored), fs_base/gs_base, and sigvisor's system feature with
// cr0, cr2, cr3, cr4 and efer (read-only: `p $cr3`).
#ifndef SIGVISOR_ARCH_X86_64_VMM_GDB_X86_64_TARGET_H_
#define SIGVISOR_ARCH_X86_64_VMM_GDB_X86_64_TARGET_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sigvisor::gdb {

struct X86Registers {
  uint64_t gpr[16] = {};  // gdb order: rax rbx rcx rdx rsi rdi rbp rsp r8 .. r15
  uint64_t rip = 0;
  uint64_t rflags = 0;
  uint32_t segment[6] = {};  // cs ss ds es fs gs (selectors)
  uint64_t fs_base = 0;
  uint64_t gs_base = 0;
  uint64_t cr0 = 0, cr2 = 0, cr3 = 0, cr4 = 0, efer = 0;
};

// gdb register numbers.
inline constexpr int kRegRip = 16;
inline constexpr int kRegEflags = 17;
inline constexpr int kRegCount = 47;

// Size in bytes of register `number` (0 if there is no such register).
size_t X86RegisterSize(int number);

std::string X86TargetXml();

// All registers, raw, in order (the `g` packet's payload).
std::vector<uint8_t> PackX86Registers(const X86Registers& regs);
// One register's raw bytes.
std::optional<std::vector<uint8_t>> PackX86Register(const X86Registers& regs, int number);
// Applies a `G` payload (or a prefix of it) / one `P` register; false when the
// layout does not fit. Read-only registers (x87, control registers) are ignored.
bool UnpackX86Registers(std::span<const uint8_t> raw, X86Registers& regs);
bool UnpackX86Register(int number, std::span<const uint8_t> raw, X86Registers& regs);

}  // namespace sigvisor::gdb

#endif  // SIGVISOR_ARCH_X86_64_VMM_GDB_X86_64_TARGET_H_
