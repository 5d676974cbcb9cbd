// The interpreter's decoded pages: a 4 KiB page of guest RAM decoded once into an
// array of ops (what to run, with the fields already extracted), so that the block
// engine (mips_core_blocks.cc) dispatches each instruction with one indirect jump
// and no decoding. Only instructions whose whole effect is registers and RAM (and
// CP0 registers that nothing else depends on) get an op of their own; every other
// instruction (Status, Count and TLB operations, eret, system calls, traps, cache
// ops, ll/sc, ...) is kBail: the engine stops before it and the reference
// interpreter runs it, exceptions, counters and all.
//
// An op keeps the word it was decoded from. The engine compares it with the word in
// RAM before running the op, so a store to code (self-modifying code, a trampoline
// the kernel writes, the host writing a page between runs), from any core, is seen
// at the next fetch exactly as the reference interpreter sees it, and no store has
// to look for decoded pages. A page is decoded by physical page: how it is mapped
// never matters, since the ops hold no addresses (branch targets are computed from
// the virtual pc when they run).
#ifndef SIGVISOR_ARCH_MIPS_VMM_PREDECODE_H_
#define SIGVISOR_ARCH_MIPS_VMM_PREDECODE_H_

#include <cstdint>

namespace sigvisor::mips {

// Every kind of op, in one list, so that the engine's two label tables (an op run
// normally and in a branch's delay slot) are made from the same list as the enum.
#define SIGVISOR_MIPS_OP_KINDS(X)                                                      \
  X(Bail) X(PageEnd) X(Nop)                                                            \
  X(Sll) X(Srl) X(Rotr) X(Sra) X(Sllv) X(Srlv) X(Rotrv) X(Srav) X(Movz) X(Movn)        \
  X(Mfhi) X(Mthi) X(Mflo) X(Mtlo) X(Mult) X(Multu) X(Div) X(Divu)                      \
  X(Add) X(Addu) X(Sub) X(Subu) X(And) X(Or) X(Xor) X(Nor) X(Slt) X(Sltu)              \
  X(Addi) X(Addiu) X(Slti) X(Sltiu) X(Andi) X(Ori) X(Xori) X(Lui)                      \
  X(Mul) X(Madd) X(Maddu) X(Msub) X(Msubu) X(Clz) X(Clo) X(Ext) X(Ins) X(Wsbh) X(Seb)  \
  X(Seh) X(Mfc0) X(Mtc0)                                                               \
  X(Lb) X(Lh) X(Lw) X(Lbu) X(Lhu) X(Lwl) X(Lwr) X(Sb) X(Sh) X(Sw) X(Swl) X(Swr)        \
  X(Beq) X(Bne) X(Blez) X(Bgtz) X(Beql) X(Bnel) X(Blezl) X(Bgtzl)                      \
  X(Bltz) X(Bgez) X(Bltzl) X(Bgezl) X(Bltzal) X(Bgezal) X(Bltzall) X(Bgezall)          \
  X(J) X(Jal) X(Jr) X(Jalr)

enum class OpKind : uint8_t {
#define SIGVISOR_MIPS_OP_ENUM(name) k##name,
  SIGVISOR_MIPS_OP_KINDS(SIGVISOR_MIPS_OP_ENUM)
#undef SIGVISOR_MIPS_OP_ENUM
      kCount
};

// Jumps and branches: each ends its block after its delay slot.
constexpr bool IsBranch(OpKind k) { return k >= OpKind::kBeq && k <= OpKind::kJalr; }

// The register a write to r0 lands in: the engine never writes r0 itself, so no op
// needs a "not r0" test (the general registers have one slot more for it).
inline constexpr uint8_t kSinkRegister = 32;

struct DecodedOp {
  const void* handler = nullptr;       // the engine's label for this op
  const void* slot_handler = nullptr;  // ... when it runs in a delay slot
  uint32_t raw = 0;                    // the instruction word it was decoded from
  uint32_t imm = 0;  // the immediate as the op uses it (extended, shifted, a mask;
                     // mfc0/mtc0: the CP0 register)
  uint8_t s = 0, t = 0;  // source registers (rs, rt)
  uint8_t d = 0;         // destination (rd or rt; r0 as kSinkRegister)
  uint8_t sa = 0;  // the shift amount or ext/ins lsb; mfc0/mtc0: the select
  OpKind kind = OpKind::kBail;
  uint8_t pad = 0;
  // Instructions from this one to the end of its block (the delay slot of the next
  // branch, the next kBail, or the page's end), at least: the engine starts a block
  // only when that many fit before the budget or the timer.
  uint16_t block_len = 0;
};
static_assert(sizeof(DecodedOp) == 32, "the engine finds an op's word from its offset");

inline constexpr uint32_t kWordsPerPage = 1024;

// One page's ops, and after them a kPageEnd that never matches a word.
struct DecodedPage {
  DecodedOp ops[kWordsPerPage + 1];
};

// The engine's labels for each kind, normal and in a delay slot.
struct OpLabels {
  const void* const* normal;
  const void* const* slot;
};

// Decodes all of `page` from `code` (the page's 4 KiB of RAM).
void DecodePage(DecodedPage& page, const uint8_t* code, const OpLabels& labels);
// Decodes word `index` again from `code` (it changed since) and the block lengths.
void RedecodeWord(DecodedPage& page, const uint8_t* code, uint32_t index, const OpLabels& labels);

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_PREDECODE_H_
