// The instructions the trap engine intercepts, decoded into what emulating them
// needs: moves to and from DR0-DR15 and every segment-register load of x86-64
// (mov to a segment register, pop of one, lfs/lgs/lss, swapgs, wrfsbase/wrgsbase,
// and wrmsr, which loads a segment base when ECX names FS/GS/KERNEL_GS base).
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_TRAP_INSN_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_TRAP_INSN_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace sigvisor::trap {

enum class TrapOp : uint8_t {
  kMovToDr,        // mov %reg, %dbN
  kMovFromDr,      // mov %dbN, %reg
  kMovToSreg,      // mov %reg|mem16, %sreg
  kPopSreg,        // pop %fs / pop %gs
  kLoadFarPointer, // lfs / lgs / lss reg, m16:16|32|64
  kSwapgs,
  kWrFsBase,
  kWrGsBase,
  kWrmsr,          // a segment load only when ECX is an FS/GS base MSR (trap time)
};

// Segment registers in their ModRM encoding order.
enum class SegReg : uint8_t { kEs = 0, kCs = 1, kSs = 2, kDs = 3, kFs = 4, kGs = 5 };

// What a trap is counted as.
enum class TrapKind : uint8_t { kDrWrite, kDrRead, kSegmentLoad, kMsrWrite };
std::string_view TrapKindName(TrapKind kind);  // "dr_write", "dr_read", "segment_load", "msr_write"

// What a site is, as `sigvisor sites` lists it: the trap kind, or "wrmsr" for a
// wrmsr (segment_load or msr_write, decided by ECX when it runs).
std::string_view SiteClassName(TrapOp op);

// General registers by their encoding number (rax 0, rcx 1, rdx 2, rbx 3, rsp 4,
// rbp 5, rsi 6, rdi 7, r8-r15 8-15); kRipBase marks a RIP-relative operand.
inline constexpr int kRipBase = 16;

struct MemOperand {
  int base = -1;   // register number, kRipBase, or -1 for none
  int index = -1;  // register number or -1
  uint8_t scale = 1;
  int64_t disp = 0;
  // An FS or GS override adds that segment's base; the others are ignored in 64-bit mode.
  std::optional<SegReg> segment;
  uint8_t address_bytes = 8;  // 4 with an address-size prefix
};

struct TrapInsn {
  TrapOp op = TrapOp::kMovToDr;
  uint8_t length = 0;  // bytes of the original instruction
  int dr = -1;         // kMovToDr / kMovFromDr: 0-15 (8-15 are #UD)
  int gpr = -1;        // the general-register operand (source or destination), or -1
  // The general-register operand's width (2, 4 or 8); for pop, the operand size; for
  // a far pointer, the size of its offset part.
  uint8_t operand_bytes = 8;
  SegReg sreg = SegReg::kDs;       // the segment register loaded
  std::optional<MemOperand> mem;   // the memory operand, if any

  // The kind this instruction is counted as; for wrmsr, the kind given ECX.
  TrapKind Kind(uint32_t ecx = 0) const;
};

// The MSRs wrmsr loads a segment base through.
inline constexpr uint32_t kMsrFsBase = 0xc0000100;
inline constexpr uint32_t kMsrGsBase = 0xc0000101;
inline constexpr uint32_t kMsrKernelGsBase = 0xc0000102;
inline bool IsSegmentBaseMsr(uint32_t msr) { return msr >= kMsrFsBase && msr <= kMsrKernelGsBase; }

}  // namespace sigvisor::trap

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_TRAP_INSN_H_
