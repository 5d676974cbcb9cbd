// The emulator on decoded byte sequences against a fake vCPU: each instruction's
// effect on registers, segment state, descriptor tables, MSRs and debug registers is
// compared with what the architecture specifies, and so is each fault.
#include "arch/x86_64/vmm/trap/emulator.h"

#include <gtest/gtest.h>

#include <vector>

#include "arch/x86_64/vmm/trap/decoder.h"
#include "arch/x86_64/vmm/trap/fake_trap_cpu.h"

namespace sigvisor::trap {
namespace {

constexpr uint64_t kSite = 0x100000;
constexpr uint64_t kGdt = 0x5000;
constexpr uint64_t kData = 0x9000;   // mapped scratch memory
constexpr uint64_t kStack = 0xa000;  // mapped stack top area

// GDT slots used below.
constexpr uint16_t kFlatData = 0x18;       // base 0, 4 GiB, writable, DPL0
constexpr uint16_t kBasedData = 0x50;      // base 0x12345678, limit 0xfff, byte granular
constexpr uint16_t kAbsentData = 0x58;     // not present
constexpr uint16_t kExecOnlyCode = 0x60;   // code, not readable
constexpr uint16_t kReadableCode = 0x68;   // code, readable
constexpr uint16_t kUserData = 0x2b;       // DPL3 data
constexpr uint16_t kTssSlot = 0x40;        // a system descriptor
constexpr uint16_t kReadOnlyData = 0x70;   // data, not writable

class EmulatorTest : public ::testing::Test {
 protected:
  EmulatorTest() : decoder_(*Decoder::Create()) {
    cpu_.sregs.gdt.base = kGdt;
    cpu_.sregs.gdt.limit = 0x7f;
    cpu_.MapQuad(kGdt + kFlatData, 0x00cf93000000ffff);
    cpu_.MapQuad(kGdt + kBasedData, 0x1240923456780fff);
    cpu_.MapQuad(kGdt + kAbsentData, 0x00cf13000000ffff);
    cpu_.MapQuad(kGdt + kExecOnlyCode, 0x00af98000000ffff);
    cpu_.MapQuad(kGdt + kReadableCode, 0x00af9a000000ffff);
    cpu_.MapQuad(kGdt + (kUserData & ~7), 0x00cff3000000ffff);
    cpu_.MapQuad(kGdt + kTssSlot, 0x0000890060000067);
    cpu_.MapQuad(kGdt + kReadOnlyData, 0x00cf91000000ffff);
    cpu_.Map(kData, std::vector<uint8_t>(64, 0));
    cpu_.Map(kStack - 64, std::vector<uint8_t>(128, 0));
    cpu_.msrs = {{kMsrFsBase, 0}, {kMsrGsBase, 0}, {kMsrKernelGsBase, 0}, {0xc0000082, 0}};
    regs_.rip = kSite + 1;  // where a hlt trap leaves it
    regs_.rsp = kStack;
    regs_.rflags = 0x10002;  // RF set: a completed instruction clears it
  }

  TrapInsn Insn(std::vector<uint8_t> bytes) {
    std::optional<DecodedInsn> decoded = decoder_.Decode(bytes, kSite);
    EXPECT_TRUE(decoded && decoded->trap) << "not a trap instruction";
    return decoded && decoded->trap ? *decoded->trap : TrapInsn{};
  }

  // Emulates and expects success; returns the kind counted.
  TrapKind Run(std::vector<uint8_t> bytes) {
    TrapInsn insn = Insn(bytes);
    absl::StatusOr<Emulation> result = Emulate(insn, kSite, regs_, cpu_, shadow_);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return TrapKind::kDrWrite;
    EXPECT_FALSE(result->fault.has_value()) << "vector " << int(result->fault->vector);
    EXPECT_EQ(regs_.rip, kSite + insn.length);
    EXPECT_EQ(regs_.rflags & 0x10000, 0u);
    regs_.rip = kSite + 1;
    return result->kind;
  }

  // Emulates and expects `fault` with nothing changed and RIP at the site.
  void ExpectFault(std::vector<uint8_t> bytes, Fault fault) {
    const kvm_regs before = regs_;
    const kvm_sregs sregs_before = cpu_.sregs;
    const int sregs_sets = cpu_.sregs_sets;
    absl::StatusOr<Emulation> result = Emulate(Insn(bytes), kSite, regs_, cpu_, shadow_);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->fault.has_value());
    EXPECT_EQ(*result->fault, fault) << "vector " << int(result->fault->vector) << " error "
                                     << result->fault->error_code.value_or(~0u);
    EXPECT_EQ(regs_.rip, kSite);
    EXPECT_EQ(regs_.rax, before.rax);
    EXPECT_EQ(regs_.rsp, before.rsp);
    EXPECT_EQ(cpu_.sregs_sets, sregs_sets);
    EXPECT_EQ(cpu_.sregs.fs.selector, sregs_before.fs.selector);
    regs_.rip = kSite + 1;
  }

  Decoder decoder_;
  FakeTrapCpu cpu_;
  DrShadow shadow_{DebugRegs{}};
  kvm_regs regs_ = {};
};

// [REX.B] 0f 23|21 /r: mov %gpr, %dbN or mov %dbN, %gpr.
std::vector<uint8_t> DrMove(bool to_dr, int dr, int gpr) {
  const uint8_t opcode = to_dr ? 0x23 : 0x21;
  const auto modrm = static_cast<uint8_t>(0xc0 | (dr << 3) | (gpr & 7));
  if (gpr >= 8) return {0x41, 0x0f, opcode, modrm};
  return {0x0f, opcode, modrm};
}

TEST_F(EmulatorTest, DebugRegistersRoundTripThroughEveryGeneralRegister) {
  for (int gpr = 0; gpr < 16; ++gpr) {
    if (gpr == 4) continue;  // rsp: checked below, it is the stack
    for (int dr : {0, 1, 2, 3}) {
      const uint64_t value = 0xffff800000001000ull + 0x100 * gpr + dr;
      Gpr(regs_, gpr) = value;
      EXPECT_EQ(Run(DrMove(true, dr, gpr)), TrapKind::kDrWrite);
      const int other = (gpr + 1) % 16 == 4 ? 5 : (gpr + 1) % 16;
      Gpr(regs_, other) = 0;
      EXPECT_EQ(Run(DrMove(false, dr, other)), TrapKind::kDrRead);
      EXPECT_EQ(Gpr(regs_, other), value);
    }
    Gpr(regs_, gpr) = 0x1ff;  // L0-G3 and LE: every breakpoint on
    Run(DrMove(true, 7, gpr));
    Gpr(regs_, gpr) = 0;
    Run(DrMove(false, 7, gpr));
    EXPECT_EQ(Gpr(regs_, gpr), 0x5ffu);  // bit 10 reads as 1
    Run(DrMove(true, 7, gpr));           // and off again
  }
  regs_.rsp = 0x400;  // an enable-free DR7 through rsp
  Run(DrMove(true, 7, 4));
  EXPECT_EQ(shadow_.guest().dr7, 0x400u);
  regs_.rsp = kStack;
  // DR6: only its status bits are writable.
  regs_.rdx = 0;
  Run(DrMove(true, 6, 2));
  Run(DrMove(false, 6, 3));
  EXPECT_EQ(regs_.rbx, 0xffff0ff0u);
}

TEST_F(EmulatorTest, Dr4AndDr5AliasDr6AndDr7UnlessCr4De) {
  regs_.rax = 0x100;  // LE
  Run(DrMove(true, 5, 0));
  EXPECT_EQ(shadow_.guest().dr7, 0x500u);
  Run(DrMove(false, 4, 1));
  EXPECT_EQ(regs_.rcx, 0xffff0ff0u);
  cpu_.sregs.cr4 |= 1u << 3;  // CR4.DE
  ExpectFault(DrMove(true, 5, 0), Fault{kVectorUd, std::nullopt, 0});
}

TEST_F(EmulatorTest, DebugRegisterFaults) {
  ExpectFault({0x44, 0x0f, 0x23, 0xc0}, Fault{kVectorUd, std::nullopt, 0});  // DR8
  regs_.rax = 1ull << 32;
  ExpectFault(DrMove(true, 7, 0), Fault{kVectorGp, 0, 0});
  ExpectFault(DrMove(true, 6, 0), Fault{kVectorGp, 0, 0});
  Run(DrMove(true, 0, 0));  // DR0-DR3 take 64-bit addresses
  EXPECT_EQ(shadow_.guest().dr[0], 1ull << 32);
}

TEST_F(EmulatorTest, GeneralDetectRaisesDebugExceptionOnce) {
  regs_.rax = kDr7Gd;
  Run(DrMove(true, 7, 0));
  ExpectFault(DrMove(false, 0, 1), Fault{kVectorDb, std::nullopt, 0});
  EXPECT_EQ(shadow_.guest().dr6 & kDr6Bd, kDr6Bd);
  // The #DB cleared GD: the handler's own accesses go through.
  Run(DrMove(false, 6, 1));
  EXPECT_EQ(regs_.rcx, 0xffff2ff0u);
}

TEST_F(EmulatorTest, LazyDr7ThroughTheEmulator) {
  regs_.rax = 0;
  for (int i = 0; i < 10; ++i) Run(DrMove(true, 7, 0));
  EXPECT_EQ(cpu_.debug_sets, 0);
  regs_.rax = kSite;
  Run(DrMove(true, 0, 0));
  regs_.rax = 1;
  Run(DrMove(true, 7, 0));
  EXPECT_EQ(cpu_.debug_sets, 1);
  EXPECT_EQ(cpu_.debug.dr[0], kSite);
  EXPECT_EQ(cpu_.debug.dr7, 0x401u);
}

void ExpectFlatData(const kvm_segment& seg, uint16_t selector) {
  EXPECT_EQ(seg.selector, selector);
  EXPECT_EQ(seg.base, 0u);
  EXPECT_EQ(seg.limit, 0xffffffffu);
  EXPECT_EQ(seg.type, 3);  // read/write, accessed
  EXPECT_EQ(seg.present, 1);
  EXPECT_EQ(seg.s, 1);
  EXPECT_EQ(seg.db, 1);
  EXPECT_EQ(seg.g, 1);
  EXPECT_EQ(seg.unusable, 0);
}

TEST_F(EmulatorTest, MovToSegmentRegisterFromRegisterLoadsTheDescriptor) {
  regs_.rax = 0xdead0000 | kFlatData;  // only the low 16 bits are the selector
  EXPECT_EQ(Run({0x8e, 0xd8}), TrapKind::kSegmentLoad);  // mov %eax, %ds
  ExpectFlatData(cpu_.sregs.ds, kFlatData);
  // The CPU marks the descriptor accessed in the GDT.
  EXPECT_EQ(cpu_.Quad(kGdt + kFlatData), 0x00cf93000000ffffu);  // already accessed
  regs_.r9 = kBasedData;
  Run({0x41, 0x8e, 0xe1});  // mov %r9d, %fs
  EXPECT_EQ(cpu_.sregs.fs.selector, kBasedData);
  EXPECT_EQ(cpu_.sregs.fs.base, 0x12345678u);
  EXPECT_EQ(cpu_.sregs.fs.limit, 0xfffu);
  EXPECT_EQ(cpu_.sregs.fs.type, 3);
  EXPECT_EQ(cpu_.sregs.fs.g, 0);
  EXPECT_EQ(cpu_.Quad(kGdt + kBasedData), 0x1240933456780fffu);  // accessed bit set
  regs_.rdx = kFlatData;
  Run({0x8e, 0xd2});  // mov %edx, %ss
  ExpectFlatData(cpu_.sregs.ss, kFlatData);
  regs_.rbx = kUserData;  // DPL3 data with RPL3 at CPL0: allowed
  Run({0x66, 0x8e, 0xc3});  // mov %bx, %es
  EXPECT_EQ(cpu_.sregs.es.selector, kUserData);
  EXPECT_EQ(cpu_.sregs.es.dpl, 3);
  regs_.rax = kReadableCode;
  Run({0x8e, 0xe8});  // mov %eax, %gs: readable code is allowed
  EXPECT_EQ(cpu_.sregs.gs.type, 0xb);
}

TEST_F(EmulatorTest, MovToSegmentRegisterFromMemory) {
  cpu_.Map(kData + 8, {kBasedData, 0});
  regs_.rax = kData + 8;
  Run({0x8e, 0x28});  // mov (%rax), %gs
  EXPECT_EQ(cpu_.sregs.gs.base, 0x12345678u);
  // RIP-relative: the displacement counts from the next instruction.
  cpu_.Map(kSite + 6 + 0x10, {kFlatData, 0});
  Run({0x8e, 0x15, 0x10, 0, 0, 0});  // mov 0x10(%rip), %ss
  EXPECT_EQ(cpu_.sregs.ss.selector, kFlatData);
  // An FS override adds FS's base: fs.base is 0x12345678 after this load.
  regs_.rcx = kBasedData;
  Run({0x8e, 0xe1});  // mov %ecx, %fs
  const uint64_t target = 0x12345678 + 0x20 + 2 * 4 + 8;
  cpu_.Map(target, {kFlatData, 0});
  regs_.rbx = 0x20;
  regs_.rcx = 2;
  Run({0x64, 0x8e, 0x5c, 0x8b, 0x08});  // mov %fs:8(%rbx,%rcx,4), %ds
  EXPECT_EQ(cpu_.sregs.ds.selector, kFlatData);
  // An address-size prefix truncates the address to 32 bits.
  regs_.rax = 0xffffffff00000000ull | (kData + 8);
  cpu_.Map(kData + 8, {kUserData, 0});
  Run({0x67, 0x8e, 0x18});  // mov (%eax), %ds
  EXPECT_EQ(cpu_.sregs.ds.selector, kUserData);
}

TEST_F(EmulatorTest, PopSegmentRegister) {
  cpu_.Map(kStack, {kBasedData, 0, 0, 0, 0, 0, 0, 0});
  Run({0x0f, 0xa1});  // pop %fs
  EXPECT_EQ(cpu_.sregs.fs.base, 0x12345678u);
  EXPECT_EQ(regs_.rsp, kStack + 8);
  regs_.rsp = kStack;
  cpu_.Map(kStack, {kFlatData, 0});
  Run({0x66, 0x0f, 0xa9});  // popw %gs
  EXPECT_EQ(cpu_.sregs.gs.selector, kFlatData);
  EXPECT_EQ(regs_.rsp, kStack + 2);
}

TEST_F(EmulatorTest, FarPointerLoads) {
  // lfs (%rax), %ecx: m16:32 -> ecx zero-extended, fs.
  cpu_.Map(kData, {0x78, 0x56, 0x34, 0x12, kBasedData, 0});
  regs_.rax = kData;
  regs_.rcx = 0xffffffffffffffff;
  Run({0x0f, 0xb4, 0x08});
  EXPECT_EQ(regs_.rcx, 0x12345678u);
  EXPECT_EQ(cpu_.sregs.fs.selector, kBasedData);
  // rex.w lgs (%rbx), %r10: m16:64.
  cpu_.Map(kData + 16, {1, 2, 3, 4, 5, 6, 7, 8, kFlatData, 0});
  regs_.rbx = kData + 16;
  Run({0x4c, 0x0f, 0xb5, 0x13});
  EXPECT_EQ(regs_.r10, 0x0807060504030201u);
  EXPECT_EQ(cpu_.sregs.gs.selector, kFlatData);
  // lss (%rsp), %dx: m16:16 -> dx merged into rdx.
  cpu_.Map(kStack, {0x34, 0x12, kFlatData, 0});
  regs_.rdx = 0xaaaaaaaaaaaaaaaa;
  Run({0x66, 0x0f, 0xb2, 0x14, 0x24});
  EXPECT_EQ(regs_.rdx, 0xaaaaaaaaaaaa1234u);
  ExpectFlatData(cpu_.sregs.ss, kFlatData);
}

TEST_F(EmulatorTest, NullSelectors) {
  regs_.rcx = kBasedData;
  Run({0x8e, 0xe1});  // mov %ecx, %fs
  regs_.rcx = 0;
  Run({0x8e, 0xe1});
  EXPECT_EQ(cpu_.sregs.fs.selector, 0);
  EXPECT_EQ(cpu_.sregs.fs.unusable, 1);
  EXPECT_EQ(cpu_.sregs.fs.base, 0u);
  regs_.rdx = 0;  // a null SS is fine at CPL0 in 64-bit mode (RPL = CPL)
  Run({0x8e, 0xd2});
  EXPECT_EQ(cpu_.sregs.ss.selector, 0);
  EXPECT_EQ(cpu_.sregs.ss.present, 1);
  regs_.rdx = 3;  // but not with RPL 3
  ExpectFault({0x8e, 0xd2}, Fault{kVectorGp, 0, 0});
}

TEST_F(EmulatorTest, SegmentLoadFaults) {
  regs_.rcx = 0;
  Run({0x8e, 0xe1});  // fs = null, to see that a fault changes nothing
  regs_.rcx = kAbsentData;
  ExpectFault({0x8e, 0xe1}, Fault{kVectorNp, kAbsentData, 0});
  regs_.rdx = kAbsentData;
  ExpectFault({0x8e, 0xd2}, Fault{kVectorSs, kAbsentData, 0});  // for SS: #SS, not #NP
}

TEST_F(EmulatorTest, SegmentLoadFaultsByRule) {
  // Beyond the GDT limit.
  regs_.rcx = 0x80;
  ExpectFault({0x8e, 0xe1}, Fault{kVectorGp, 0x80, 0});
  // A system descriptor.
  regs_.rcx = kTssSlot;
  ExpectFault({0x8e, 0xe1}, Fault{kVectorGp, kTssSlot, 0});
  // Code that cannot be read.
  regs_.rcx = kExecOnlyCode;
  ExpectFault({0x8e, 0xe1}, Fault{kVectorGp, kExecOnlyCode, 0});
  // RPL 3 on a DPL0 data segment.
  regs_.rcx = kFlatData | 3;
  ExpectFault({0x8e, 0xe1}, Fault{kVectorGp, kFlatData, 0});
  // SS: read-only data, DPL3 data, and a not-present segment (#SS).
  regs_.rdx = kReadOnlyData;
  ExpectFault({0x8e, 0xd2}, Fault{kVectorGp, kReadOnlyData, 0});
  regs_.rdx = kUserData;
  ExpectFault({0x8e, 0xd2}, Fault{kVectorGp, kUserData & ~3u, 0});
  // An LDT selector with no LDT.
  regs_.rcx = 0x0c;
  ExpectFault({0x8e, 0xe1}, Fault{kVectorGp, 0x0c, 0});
  // mov to CS does not exist.
  ExpectFault({0x8e, 0xc8}, Fault{kVectorUd, std::nullopt, 0});
  // An unmapped operand: #PF with CR2 = the address.
  regs_.rax = 0x777000;
  ExpectFault({0x8e, 0x28}, Fault{kVectorPf, 0, 0x777000});
  // A non-canonical one: #GP(0); on the stack, #SS(0).
  regs_.rax = 0x0000800000000000;
  ExpectFault({0x8e, 0x28}, Fault{kVectorGp, 0, 0});
  regs_.rsp = 0x0000800000000000;
  ExpectFault({0x0f, 0xa1}, Fault{kVectorSs, 0, 0});
}

TEST_F(EmulatorTest, SwapgsExchangesTheBases) {
  cpu_.msrs[kMsrGsBase] = 0x1111;
  cpu_.msrs[kMsrKernelGsBase] = 0xffff888000002222;
  EXPECT_EQ(Run({0x0f, 0x01, 0xf8}), TrapKind::kSegmentLoad);
  EXPECT_EQ(cpu_.msrs[kMsrGsBase], 0xffff888000002222u);
  EXPECT_EQ(cpu_.msrs[kMsrKernelGsBase], 0x1111u);
  Run({0x0f, 0x01, 0xf8});
  EXPECT_EQ(cpu_.msrs[kMsrGsBase], 0x1111u);
}

TEST_F(EmulatorTest, WriteFsGsBase) {
  ExpectFault({0xf3, 0x48, 0x0f, 0xae, 0xd0}, Fault{kVectorUd, std::nullopt, 0});  // CR4.FSGSBASE=0
  cpu_.sregs.cr4 |= 1u << 16;
  regs_.rax = 0xffff888000001000;
  EXPECT_EQ(Run({0xf3, 0x48, 0x0f, 0xae, 0xd0}), TrapKind::kSegmentLoad);  // wrfsbase %rax
  EXPECT_EQ(cpu_.msrs[kMsrFsBase], 0xffff888000001000u);
  regs_.r11 = 0xabcdef0012345678;
  Run({0xf3, 0x41, 0x0f, 0xae, 0xdb});  // wrgsbase %r11d: zero-extended
  EXPECT_EQ(cpu_.msrs[kMsrGsBase], 0x12345678u);
  regs_.r11 = 0x0000800000000000;
  ExpectFault({0xf3, 0x49, 0x0f, 0xae, 0xdb}, Fault{kVectorGp, 0, 0});
}

TEST_F(EmulatorTest, WrmsrIsASegmentLoadOnlyForTheBaseMsrs) {
  regs_.rcx = kMsrKernelGsBase;
  regs_.rdx = 0xffff8880;
  regs_.rax = 0xdeadbeef00001000;  // only eax counts
  EXPECT_EQ(Run({0x0f, 0x30}), TrapKind::kSegmentLoad);
  EXPECT_EQ(cpu_.msrs[kMsrKernelGsBase], 0xffff888000001000u);
  regs_.rcx = 0xc0000082;  // LSTAR
  regs_.rdx = 0;
  regs_.rax = 0x100000;
  EXPECT_EQ(Run({0x0f, 0x30}), TrapKind::kMsrWrite);
  EXPECT_EQ(cpu_.msrs[0xc0000082], 0x100000u);
  regs_.rcx = 0x12345;  // an MSR the vCPU does not have
  ExpectFault({0x0f, 0x30}, Fault{kVectorGp, 0, 0});
  regs_.rcx = kMsrFsBase;
  regs_.rdx = 0x8000;  // non-canonical base
  ExpectFault({0x0f, 0x30}, Fault{kVectorGp, 0, 0});
}

}  // namespace
}  // namespace sigvisor::trap
