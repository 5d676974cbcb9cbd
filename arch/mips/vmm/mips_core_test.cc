// Per-instruction tests of the MIPS interpreter: each runs a few hand-encoded
// instructions on a bare core and checks registers, CP0 and counters exactly.
#include "arch/mips/vmm/mips_core.h"

#include <cstring>

#include "arch/mips/vmm/cost_model.h"
#include "arch/mips/vmm/mips_encode.h"
#include "arch/mips/vmm/mips_test_machine.h"
#include "gtest/gtest.h"

namespace sigvisor::mips {
namespace {

using namespace encode;  // NOLINT: the instruction mnemonics

constexpr uint32_t Code(int n) { return TestMachine::kCode + 4 * static_cast<uint32_t>(n); }

TEST(MipsCoreTest, ResetStateIsTheContracts) {
  TestMachine m;
  EXPECT_EQ(m.core().pc(), TestMachine::kCode);
  EXPECT_EQ(m.core().status() & (kStatusIE | kStatusEXL | kStatusERL | kStatusBEV), 0u);
  EXPECT_FALSE(m.core().user_mode());
  EXPECT_EQ(m.core().ReadCp0(kCp0PrId, 0), 0x00019700u);
  EXPECT_EQ(m.core().ReadCp0(kCp0PrId, 1), 0x80000000u);
  EXPECT_EQ((m.core().ReadCp0(kCp0Config, 1) >> 25) & 63, 31u);  // 32 TLB entries
  EXPECT_EQ(m.core().ReadCp0(kCp0Config, 1) & 1, 0u);            // FP = 0
}

TEST(MipsCoreTest, Arithmetic) {
  TestMachine m;
  m.Load({Addiu(kT0, kZero, -5), Lui(kT1, 0x1234), Ori(kT1, kT1, 0x5678), Addu(kT2, kT0, kT1),
          Subu(kT3, kT0, kT1), Slt(kT4, kT0, kZero), Sltu(kT5, kT0, kZero), Slti(kT6, kT0, -4),
          Sltiu(kT7, kT0, -4), Nor(kS0, kT0, kZero), Xori(kS1, kT1, 0xffff), Andi(kS2, kT0, 0xff),
          And(kS3, kT0, kT1)});
  m.Step(13);
  EXPECT_EQ(m.core().gpr(kT0), 0xfffffffbu);
  EXPECT_EQ(m.core().gpr(kT1), 0x12345678u);
  EXPECT_EQ(m.core().gpr(kT2), 0x12345673u);
  EXPECT_EQ(m.core().gpr(kT3), 0xfffffffbu - 0x12345678u);
  EXPECT_EQ(m.core().gpr(kT4), 1u);
  EXPECT_EQ(m.core().gpr(kT5), 0u);
  EXPECT_EQ(m.core().gpr(kT6), 1u);
  EXPECT_EQ(m.core().gpr(kT7), 1u);  // 0xfffffffb < 0xfffffffc unsigned
  EXPECT_EQ(m.core().gpr(kS0), 4u);
  EXPECT_EQ(m.core().gpr(kS1), 0x1234a987u);
  EXPECT_EQ(m.core().gpr(kS2), 0xfbu);
  EXPECT_EQ(m.core().gpr(kS3), 0x12345678u & 0xfffffffbu);
  EXPECT_EQ(m.core().counters().instructions, 13u);
}

TEST(MipsCoreTest, RegisterZeroStaysZero) {
  TestMachine m;
  m.Load({Addiu(kZero, kZero, 7), Addu(kT0, kZero, kZero)});
  m.Step(2);
  EXPECT_EQ(m.core().gpr(kZero), 0u);
  EXPECT_EQ(m.core().gpr(kT0), 0u);
}

TEST(MipsCoreTest, Shifts) {
  TestMachine m;
  m.Load({Lui(kT0, 0x8000), Ori(kT0, kT0, 0x00f1), Sll(kT1, kT0, 4), Srl(kT2, kT0, 4),
          Sra(kT3, kT0, 4), Rotr(kT4, kT0, 4), Addiu(kA0, kZero, 36), Sllv(kT5, kT0, kA0),
          Srlv(kT6, kT0, kA0), Srav(kT7, kT0, kA0), Rotrv(kS0, kT0, kA0)});
  m.Step(11);
  EXPECT_EQ(m.core().gpr(kT1), 0x00000f10u);
  EXPECT_EQ(m.core().gpr(kT2), 0x0800000fu);
  EXPECT_EQ(m.core().gpr(kT3), 0xf800000fu);
  EXPECT_EQ(m.core().gpr(kT4), 0x1800000fu);
  EXPECT_EQ(m.core().gpr(kT5), 0x00000f10u);  // shift amounts are mod 32
  EXPECT_EQ(m.core().gpr(kT6), 0x0800000fu);
  EXPECT_EQ(m.core().gpr(kT7), 0xf800000fu);
  EXPECT_EQ(m.core().gpr(kS0), 0x1800000fu);
}

TEST(MipsCoreTest, MultiplyDivide) {
  TestMachine m;
  m.Load({Addiu(kT0, kZero, -7), Addiu(kT1, kZero, 3), Mult(kT0, kT1), Mfhi(kS0), Mflo(kS1),
          Multu(kT0, kT1), Mfhi(kS2), Div(kT0, kT1), Mflo(kS3), Mfhi(kA0), Divu(kT0, kT1),
          Mflo(kA1), Mfhi(kA2), Mul(kA3, kT0, kT1)});
  m.Step(14);
  EXPECT_EQ(m.core().gpr(kS0), 0xffffffffu);
  EXPECT_EQ(m.core().gpr(kS1), static_cast<uint32_t>(-21));
  EXPECT_EQ(m.core().gpr(kS2), 2u);  // 0xfffffff9 * 3 = 0x2_ffffffeb
  EXPECT_EQ(m.core().gpr(kS3), static_cast<uint32_t>(-2));
  EXPECT_EQ(m.core().gpr(kA0), static_cast<uint32_t>(-1));
  EXPECT_EQ(m.core().gpr(kA1), 0xfffffff9u / 3);
  EXPECT_EQ(m.core().gpr(kA2), 0xfffffff9u % 3);
  EXPECT_EQ(m.core().gpr(kA3), static_cast<uint32_t>(-21));
}

TEST(MipsCoreTest, DivisionByZeroAndOverflowDoNotCrash) {
  TestMachine m;
  m.Load({Addiu(kT0, kZero, 9), Mthi(kT0), Mtlo(kT0), Div(kT0, kZero), Divu(kT0, kZero),
          Lui(kT1, 0x8000), Addiu(kT2, kZero, -1), Div(kT1, kT2), Mflo(kS0), Mfhi(kS1)});
  m.Step(10);
  EXPECT_EQ(m.core().gpr(kS0), 0x80000000u);
  EXPECT_EQ(m.core().gpr(kS1), 0u);
  EXPECT_EQ(m.core().counters().exceptions, 0u);
}

TEST(MipsCoreTest, MultiplyAccumulateAndCounts) {
  TestMachine m;
  m.Load({Addiu(kT0, kZero, -2), Addiu(kT1, kZero, 5), Mthi(kZero), Addiu(kT2, kZero, 100),
          Mtlo(kT2), Madd(kT0, kT1), Mflo(kS0), Mfhi(kS1), Msubu(kT1, kT1), Mflo(kS2),
          Maddu(kT0, kT1), Mfhi(kS3), Clz(kA0, kT1), Clo(kA1, kT0), Clz(kA2, kZero), Msub(kT0, kT1),
          Mflo(kA3)});
  m.Step(17);
  EXPECT_EQ(m.core().gpr(kS0), 90u);
  EXPECT_EQ(m.core().gpr(kS1), 0u);
  EXPECT_EQ(m.core().gpr(kS2), 65u);
  // 65 + 0xfffffffe * 5 = 0x4_fffffff6 + 65 -> hi 5
  EXPECT_EQ(m.core().gpr(kS3), 5u);
  EXPECT_EQ(m.core().gpr(kA0), 29u);
  EXPECT_EQ(m.core().gpr(kA1), 31u);
  EXPECT_EQ(m.core().gpr(kA2), 32u);
  EXPECT_EQ(m.core().gpr(kA3), static_cast<uint32_t>(65 + 0xfffffffeu * 5u + 10u));
}

TEST(MipsCoreTest, BitFieldsAndByteShuffles) {
  TestMachine m;
  m.Load({Lui(kT0, 0x1234), Ori(kT0, kT0, 0x56f8), Ext(kS0, kT0, 4, 8), Ext(kS1, kT0, 0, 32),
          Addiu(kS2, kZero, -1), Ins(kS2, kT0, 8, 4), Seb(kS3, kT0), Seh(kA0, kT0), Wsbh(kA1, kT0),
          Addiu(kA2, kZero, 0), Movn(kA2, kT0, kT0), Addiu(kA3, kZero, 1), Movz(kA3, kT0, kT0)});
  m.Step(13);
  EXPECT_EQ(m.core().gpr(kS0), 0x6fu);
  EXPECT_EQ(m.core().gpr(kS1), 0x123456f8u);
  EXPECT_EQ(m.core().gpr(kS2), 0xfffff8ffu);
  EXPECT_EQ(m.core().gpr(kS3), 0xfffffff8u);
  EXPECT_EQ(m.core().gpr(kA0), 0x000056f8u);
  EXPECT_EQ(m.core().gpr(kA1), 0x3412f856u);
  EXPECT_EQ(m.core().gpr(kA2), 0x123456f8u);
  EXPECT_EQ(m.core().gpr(kA3), 1u);
}

TEST(MipsCoreTest, BranchRunsItsDelaySlot) {
  TestMachine m;
  m.Load({Beq(kZero, kZero, 2), Addiu(kT0, kZero, 1), Addiu(kT1, kZero, 1), Addiu(kT2, kZero, 1)});
  m.Step(3);
  EXPECT_EQ(m.core().gpr(kT0), 1u);  // the delay slot
  EXPECT_EQ(m.core().gpr(kT1), 0u);  // skipped
  EXPECT_EQ(m.core().gpr(kT2), 1u);  // the target
}

TEST(MipsCoreTest, BranchLikelyNotTakenNullifiesTheSlot) {
  TestMachine m;
  m.Load({Addiu(kT3, kZero, 1), Beql(kT3, kZero, 5), Addiu(kT0, kZero, 1), Addiu(kT1, kZero, 1)});
  m.Step(3);
  EXPECT_EQ(m.core().gpr(kT0), 0u);  // nullified
  EXPECT_EQ(m.core().gpr(kT1), 1u);
  EXPECT_EQ(m.core().pc(), Code(4));
  EXPECT_EQ(m.core().counters().instructions, 3u);
}

TEST(MipsCoreTest, BranchLikelyTakenRunsTheSlot) {
  TestMachine m;
  m.Load({Bnel(kZero, kZero, 5), Nop(), Bltzl(kZero, 5), Nop(), Addiu(kA0, kZero, -1),
          Bltzl(kA0, 2), Addiu(kT0, kZero, 7), Addiu(kT1, kZero, 1), Addiu(kT2, kZero, 1)});
  m.Step(6);
  EXPECT_EQ(m.core().gpr(kT0), 7u);
  EXPECT_EQ(m.core().gpr(kT1), 0u);
  EXPECT_EQ(m.core().gpr(kT2), 1u);
}

TEST(MipsCoreTest, JumpsLinkPastTheDelaySlot) {
  TestMachine m;
  m.Load({Jal(Code(8)), Nop()});
  m.Load(Code(8), {Lui(kT0, 0x8000), Ori(kT0, kT0, 0x1040), Jalr(kS0, kT0), Nop()});
  m.Load(Code(16), {Bal(4), Nop()});
  m.Step(2);
  EXPECT_EQ(m.core().pc(), Code(8));
  EXPECT_EQ(m.core().gpr(kRa), Code(2));
  m.Step(4);
  EXPECT_EQ(m.core().pc(), Code(16));
  EXPECT_EQ(m.core().gpr(kS0), Code(12));
  m.Step(2);
  EXPECT_EQ(m.core().pc(), Code(21));
  EXPECT_EQ(m.core().gpr(kRa), Code(18));
}

TEST(MipsCoreTest, ExceptionInADelaySlotSetsBdAndPointsEpcAtTheBranch) {
  TestMachine m;
  m.Load({Nop(), Beq(kZero, kZero, 4), Lw(kT0, 1, kZero)});  // misaligned kuseg load
  m.Step(3);
  EXPECT_EQ(m.core().pc(), TestMachine::kGeneral);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kAddressLoad));
  EXPECT_NE(m.core().cause() & kCauseBD, 0u);
  EXPECT_EQ(m.core().epc(), Code(1));
  EXPECT_EQ(m.core().bad_vaddr(), 1u);
  EXPECT_NE(m.core().status() & kStatusEXL, 0u);
  EXPECT_EQ(m.core().counters().instructions, 2u);  // the faulting load did not retire
  EXPECT_EQ(m.core().counters().exceptions, 1u);
}

TEST(MipsCoreTest, ExceptionOutsideADelaySlotClearsBd) {
  TestMachine m;
  m.Load({Syscall()});
  m.Step(1);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kSyscall));
  EXPECT_EQ(m.core().cause() & kCauseBD, 0u);
  EXPECT_EQ(m.core().epc(), Code(0));
  EXPECT_EQ(m.core().counters().syscalls, 1u);
}

TEST(MipsCoreTest, OverflowTrapsAndLeavesTheDestination) {
  TestMachine m;
  m.Load({Lui(kT0, 0x7fff), Ori(kT0, kT0, 0xffff), Addiu(kT1, kZero, 5), Add(kT1, kT0, kT0)});
  m.Step(4);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kOverflow));
  EXPECT_EQ(m.core().gpr(kT1), 5u);
  EXPECT_EQ(m.core().epc(), Code(3));

  TestMachine n;
  n.Load({Lui(kT0, 0x8000), Addi(kT1, kT0, -1)});
  n.Step(2);
  EXPECT_EQ(n.exc_code(), static_cast<uint32_t>(ExcCode::kOverflow));

  TestMachine o;
  o.Load({Lui(kT0, 0x8000), Addiu(kT2, kZero, 1), Sub(kT1, kT0, kT2)});
  o.Step(3);
  EXPECT_EQ(o.exc_code(), static_cast<uint32_t>(ExcCode::kOverflow));
}

TEST(MipsCoreTest, TrapsAndBreak) {
  for (uint32_t insn : {Teq(kZero, kZero), Tne(kT0, kZero), Tge(kZero, kZero), Teqi(kZero, 0)}) {
    TestMachine m;
    m.Load({Addiu(kT0, kZero, 1), insn});
    m.Step(2);
    EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kTrap)) << std::hex << insn;
  }
  TestMachine m;
  m.Load({Teq(kZero, kAt), Break()});  // at = 0: teq traps... use a non-trapping one first
  m.core().set_gpr(kAt, 1);
  m.Step(2);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kBreakpoint));
  EXPECT_EQ(m.core().epc(), Code(1));
}

TEST(MipsCoreTest, LoadsAndStores) {
  TestMachine m;
  m.Poke32(0x2000, 0x8081f2f3);
  m.Load({Lui(kS0, 0x8000), Ori(kS0, kS0, 0x2000), Lb(kT0, 0, kS0), Lbu(kT1, 0, kS0),
          Lh(kT2, 2, kS0), Lhu(kT3, 2, kS0), Lw(kT4, 0, kS0), Sb(kT4, 4, kS0), Sh(kT4, 6, kS0),
          Sw(kT4, 8, kS0)});
  m.Step(10);
  EXPECT_EQ(m.core().gpr(kT0), 0xfffffff3u);
  EXPECT_EQ(m.core().gpr(kT1), 0xf3u);
  EXPECT_EQ(m.core().gpr(kT2), 0xffff8081u);
  EXPECT_EQ(m.core().gpr(kT3), 0x8081u);
  EXPECT_EQ(m.core().gpr(kT4), 0x8081f2f3u);
  EXPECT_EQ(m.Peek32(0x2004), 0xf2f300f3u);
  EXPECT_EQ(m.Peek32(0x2008), 0x8081f2f3u);
}

TEST(MipsCoreTest, UnalignedPairsLoadAndStoreEveryOffset) {
  for (uint32_t offset = 0; offset < 4; ++offset) {
    TestMachine m;
    m.Poke32(0x2000, 0x44332211);
    m.Poke32(0x2004, 0x88776655);
    m.Load({Lui(kS0, 0x8000), Ori(kS0, kS0, 0x2000 + offset), Lwr(kT0, 0, kS0), Lwl(kT0, 3, kS0),
            Lui(kT1, 0xaabb), Ori(kT1, kT1, 0xccdd), Swr(kT1, 8, kS0), Swl(kT1, 11, kS0)});
    m.Step(8);
    uint8_t bytes[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    uint32_t expected;
    std::memcpy(&expected, bytes + offset, 4);
    EXPECT_EQ(m.core().gpr(kT0), expected) << "offset " << offset;
    const uint64_t stored = (uint64_t{m.Peek32(0x200c)} << 32) | m.Peek32(0x2008);
    EXPECT_EQ(static_cast<uint32_t>(stored >> (8 * offset)), 0xaabbccddu) << "offset " << offset;
    if (offset > 0) {
      EXPECT_EQ(stored & ((uint64_t{1} << (8 * offset)) - 1), 0u);  // bytes below untouched
    }
  }
}

TEST(MipsCoreTest, LlScSucceedsAndAnEretBetweenMakesItFail) {
  TestMachine m;
  m.Load({Lui(kS0, 0x8000), Ori(kS0, kS0, 0x2000), Ll(kT0, 0, kS0), Addiu(kT0, kT0, 1),
          Sc(kT0, 0, kS0), Ll(kT1, 0, kS0), Syscall(), Addiu(kT1, kT1, 1), Sc(kT1, 0, kS0)});
  // The syscall handler returns past the syscall with eret.
  m.Load(TestMachine::kGeneral,
         {Mfc0(kK0, kCp0Epc), Addiu(kK0, kK0, 4), Mtc0(kK0, kCp0Epc), Eret()});
  m.Poke32(0x2000, 41);
  m.Step(5);
  EXPECT_EQ(m.core().gpr(kT0), 1u);  // sc succeeded
  EXPECT_EQ(m.Peek32(0x2000), 42u);
  m.Step(1 + 1 + 4 + 2);
  EXPECT_FALSE(m.core().ll_bit());
  EXPECT_EQ(m.core().gpr(kT1), 0u);  // sc failed: the eret cleared LLbit
  EXPECT_EQ(m.Peek32(0x2000), 42u);
  EXPECT_EQ(m.core().pc(), Code(9));
}

TEST(MipsCoreTest, EretReturnsToEpcAndLeavesExceptionLevel) {
  TestMachine m;
  m.Load({Break(), Addiu(kT0, kZero, 3)});
  m.Load(TestMachine::kGeneral, {Mfc0(kK0, kCp0Epc), Addiu(kK0, kK0, 4), Mtc0(kK0, kCp0Epc), Eret(),
                                 Addiu(kT1, kZero, 1)});
  m.Step(6);
  EXPECT_EQ(m.core().gpr(kT0), 3u);
  EXPECT_EQ(m.core().gpr(kT1), 0u);  // eret has no delay slot
  EXPECT_EQ(m.core().status() & kStatusEXL, 0u);
}

// Maps virtual page 0x00400000 (even) to physical 0x3000 with the given EntryLo0 bits.
void MapUserPage(TestMachine& m, uint32_t lo_flags, uint32_t asid = 5) {
  m.core().WriteCp0(kCp0EntryHi, 0, 0x00400000u | asid);
  m.core().WriteCp0(kCp0EntryLo0, 0, ((0x3000u >> 12) << 6) | lo_flags);
  m.core().WriteCp0(kCp0EntryLo1, 0, 0);
  m.core().WriteCp0(kCp0PageMask, 0, 0);
  m.core().WriteCp0(kCp0Index, 0, 3);
  m.Load(Code(100), {Tlbwi()});
  m.core().set_pc(Code(100));
  m.Step(1);
  m.core().set_pc(TestMachine::kCode);
}

TEST(MipsCoreTest, TlbHitTranslatesWithTheAsid) {
  TestMachine m;
  MapUserPage(m, kEntryLoV | kEntryLoD);
  m.Poke32(0x3010, 0xfeedface);
  m.Load({Lui(kS0, 0x0040), Lw(kT0, 0x10, kS0), Sw(kT0, 0x14, kS0)});
  m.Step(3);
  EXPECT_EQ(m.core().gpr(kT0), 0xfeedfaceu);
  EXPECT_EQ(m.Peek32(0x3014), 0xfeedfaceu);
  EXPECT_EQ(m.core().counters().exceptions, 0u);
}

TEST(MipsCoreTest, TlbRefillGoesToTheRefillVector) {
  TestMachine m;
  MapUserPage(m, kEntryLoV | kEntryLoD, /*asid=*/5);
  m.core().WriteCp0(kCp0EntryHi, 0, 6);  // another ASID: the entry is not global
  m.core().WriteCp0(kCp0Context, 0, 0xff800000u);
  m.Load({Lui(kS0, 0x0040), Lw(kT0, 0x10, kS0)});
  m.Step(2);
  EXPECT_EQ(m.core().pc(), TestMachine::kRefill);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kTlbLoad));
  EXPECT_EQ(m.core().bad_vaddr(), 0x00400010u);
  EXPECT_EQ(m.core().entry_hi(), 0x00400006u);
  EXPECT_EQ(m.core().context(), 0xff800000u | (0x00400010u >> 9 & 0x7ffff0u));
  EXPECT_EQ(m.core().counters().tlb_refills, 1u);
}

TEST(MipsCoreTest, TlbRefillAtExceptionLevelGoesToTheGeneralVector) {
  TestMachine m;
  m.core().WriteCp0(kCp0Status, 0, kStatusCU0 | kStatusEXL);
  m.Load({Lui(kS0, 0x0040), Sw(kT0, 0, kS0)});
  m.Step(2);
  EXPECT_EQ(m.core().pc(), TestMachine::kGeneral);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kTlbStore));
}

TEST(MipsCoreTest, TlbInvalidGoesToTheGeneralVector) {
  TestMachine m;
  MapUserPage(m, kEntryLoD);  // V = 0
  m.Load({Lui(kS0, 0x0040), Lw(kT0, 0, kS0)});
  m.Step(2);
  EXPECT_EQ(m.core().pc(), TestMachine::kGeneral);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kTlbLoad));
  EXPECT_EQ(m.core().counters().tlb_invalid, 1u);
  EXPECT_EQ(m.core().counters().tlb_refills, 0u);
}

TEST(MipsCoreTest, StoreToACleanPageIsTlbModified) {
  TestMachine m;
  MapUserPage(m, kEntryLoV);  // D = 0
  m.Load({Lui(kS0, 0x0040), Lw(kT0, 0, kS0), Sw(kT0, 4, kS0)});
  m.Step(3);
  EXPECT_EQ(m.core().pc(), TestMachine::kGeneral);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kTlbModified));
  EXPECT_EQ(m.core().bad_vaddr(), 0x00400004u);
  EXPECT_EQ(m.core().counters().tlb_modified, 1u);
  EXPECT_EQ(m.core().counters().instructions, 1u + 2u);  // tlbwi, lui, lw
}

TEST(MipsCoreTest, TlbProbeAndRead) {
  TestMachine m;
  MapUserPage(m, kEntryLoV | kEntryLoG);
  m.core().WriteCp0(kCp0EntryLo0, 0, 0);
  m.Load({Tlbp(), Mfc0(kT0, kCp0Index), Tlbr(), Mfc0(kT1, kCp0EntryLo0), Lui(kT2, 0x0050),
          Mtc0(kT2, kCp0EntryHi), Tlbp(), Mfc0(kT3, kCp0Index)});
  m.Step(8);
  EXPECT_EQ(m.core().gpr(kT0), 3u);
  // G reads back only when both halves had it (tlbwi stores their AND).
  EXPECT_EQ(m.core().gpr(kT1), ((0x3000u >> 12) << 6) | kEntryLoV);
  EXPECT_EQ(m.core().gpr(kT3) & 0x80000000u, 0x80000000u);  // no match
}

TEST(MipsCoreTest, UserModeCannotTouchKernelAddressesOrCp0) {
  TestMachine m;
  MapUserPage(m, kEntryLoV | kEntryLoD);
  m.core().WriteCp0(kCp0Status, 0, 0x10);  // KSU = user, CU0 = 0
  // Run the user program from the mapped page at 0x00400000 (physical 0x3000).
  m.Poke32(0x3000, Lui(kS0, 0x8000));
  m.Poke32(0x3004, Lw(kT0, 0, kS0));
  m.core().set_pc(0x00400000);
  m.Step(2);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kAddressLoad));
  EXPECT_EQ(m.core().bad_vaddr(), 0x80000000u);
  EXPECT_EQ(m.core().epc(), 0x00400004u);

  TestMachine n;
  MapUserPage(n, kEntryLoV | kEntryLoD);
  n.core().WriteCp0(kCp0Status, 0, 0x10);
  n.Poke32(0x3000, Mfc0(kT0, kCp0Status));
  n.core().set_pc(0x00400000);
  n.Step(1);
  EXPECT_EQ(n.exc_code(), static_cast<uint32_t>(ExcCode::kCoprocessorUnusable));
  EXPECT_EQ((n.core().cause() >> kCauseCeShift) & 3, 0u);
}

TEST(MipsCoreTest, FpuAndUnknownInstructions) {
  TestMachine m;
  m.Load({Lwc1(0, 0, kZero)});
  m.Step(1);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kCoprocessorUnusable));
  EXPECT_EQ((m.core().cause() >> kCauseCeShift) & 3, 1u);

  TestMachine n;
  n.Load({0x44000000u});  // mfc1
  n.Step(1);
  EXPECT_EQ((n.core().cause() >> kCauseCeShift) & 3, 1u);

  for (uint32_t insn : {0xfc000000u /* sd */, 0x0000003fu /* dsra32 */, 0x7000003fu /* sdbbp */}) {
    TestMachine o;
    o.Load({insn});
    o.Step(1);
    EXPECT_EQ(o.exc_code(), static_cast<uint32_t>(ExcCode::kReservedInstruction))
        << std::hex << insn;
  }
}

TEST(MipsCoreTest, RdhwrFollowsHwrEnaInUserMode) {
  TestMachine m;
  m.core().WriteCp0(kCp0Context, 2, 0x1234);  // UserLocal
  m.core().WriteCp0(kCp0HwrEna, 0, 1u << kHwrUserLocal);
  MapUserPage(m, kEntryLoV | kEntryLoD);
  m.core().WriteCp0(kCp0Status, 0, 0x10);
  m.Poke32(0x3000, Rdhwr(kV1, kHwrUserLocal));
  m.Poke32(0x3004, Rdhwr(kV0, kHwrCpuNum));
  m.core().set_pc(0x00400000);
  m.Step(2);
  EXPECT_EQ(m.core().gpr(kV1), 0x1234u);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kReservedInstruction));
  EXPECT_EQ(m.core().epc(), 0x00400004u);

  TestMachine k;  // kernel mode reads all of them
  k.Load({Rdhwr(kT0, kHwrCpuNum), Rdhwr(kT1, kHwrSynciStep), Rdhwr(kT2, kHwrCcRes)});
  k.Step(3);
  EXPECT_EQ(k.core().gpr(kT0), 0u);
  EXPECT_EQ(k.core().gpr(kT1), 32u);
  EXPECT_EQ(k.core().gpr(kT2), 2u);
}

TEST(MipsCoreTest, AccessToNothingIsABusError) {
  TestMachine m;
  m.Load({Lui(kS0, 0xbfe0), Lw(kT0, 0, kS0)});
  m.Step(2);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kDataBusError));
  EXPECT_EQ(m.core().counters().bus_errors, 1u);

  TestMachine n;
  n.Load({Lui(kS0, 0xbfe0), Jr(kS0), Nop()});
  n.Step(4);
  EXPECT_EQ(n.exc_code(), static_cast<uint32_t>(ExcCode::kInstructionBusError));
  EXPECT_EQ(n.core().epc(), 0xbfe00000u);
}

TEST(MipsCoreTest, DeviceAccessStopsAndResumesInTheDelaySlot) {
  TestMachine m;
  // A load from the fake device in a branch's delay slot.
  m.Load(
      {Lui(kS0, 0xbf00), Beq(kZero, kZero, 3), Lw(kT0, 8, kS0), Nop(), Nop(), Addiu(kT1, kT0, 1)});
  uint64_t steps = 0;
  EXPECT_EQ(m.core().Run(100, steps), StopReason::kMmio);
  EXPECT_EQ(steps, 2u);
  const PendingMmio& p = m.core().pending_mmio();
  EXPECT_FALSE(p.is_write);
  EXPECT_EQ(p.paddr, 0x1f000008u);
  EXPECT_EQ(p.size, 4u);
  const uint32_t answer = 0x55;
  std::memcpy(m.core().mutable_pending_mmio().data.data(), &answer, 4);
  m.core().CompleteMmio();
  m.Step(2);
  EXPECT_EQ(m.core().gpr(kT0), 0x55u);
  EXPECT_EQ(m.core().gpr(kT1), 0x56u);  // the branch went to its target
  EXPECT_EQ(m.core().counters().mmio_exits, 1u);
  EXPECT_EQ(m.core().counters().instructions, 4u);
}

TEST(MipsCoreTest, DeviceStoreCarriesItsBytes) {
  TestMachine m;
  m.Load({Lui(kS0, 0xbf00), Addiu(kT0, kZero, 0x41), Sb(kT0, 3, kS0), Addiu(kT1, kZero, 1)});
  uint64_t steps = 0;
  EXPECT_EQ(m.core().Run(100, steps), StopReason::kMmio);
  EXPECT_TRUE(m.core().pending_mmio().is_write);
  EXPECT_EQ(m.core().pending_mmio().size, 1u);
  EXPECT_EQ(m.core().pending_mmio().data[0], 0x41);
  m.core().CompleteMmio();
  m.Step(2);  // the store again, consuming the completed access, then addiu
  EXPECT_EQ(m.core().gpr(kT1), 1u);
  EXPECT_FALSE(m.core().pending_mmio().active);
}

TEST(MipsCoreTest, CacheAndSynciCountFlushedLines) {
  TestMachine m;
  m.Load({Lui(kS0, 0x8000), Cache(0x10, 0, kS0), Cache(0x10, 32, kS0), Cache(0x15, 0, kS0),
          Synci(kS0, 64)});
  m.Step(5);
  EXPECT_EQ(m.core().counters().icache_lines_flushed, 3u);
  EXPECT_EQ(m.core().counters().modelled_cycles(), 5u + 3u * 10u);
}

TEST(MipsCoreTest, TimerInterruptArrivesWhenCountReachesCompare) {
  TestMachine m;
  // Compare = 10: Count reaches it after 20 instructions (one count per 2).
  m.Load({Addiu(kT0, kZero, 10), Mtc0(kZero, kCp0Count), Mtc0(kT0, kCp0Compare), Lui(kT1, 0x1000),
          Ori(kT1, kT1, 0x8001), Mtc0(kT1, kCp0Status)});
  // Then a run of nops.
  for (int i = 6; i < 64; ++i) m.Load(Code(i), {Addiu(kS0, kS0, 1)});
  m.Step(2 + 20 + 1);  // through mtc0 Count, 20 more, then the interrupt entry
  EXPECT_EQ(m.core().pc(), TestMachine::kGeneral);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kInterrupt));
  EXPECT_NE(m.core().cause() & kCauseTI, 0u);
  EXPECT_NE(m.core().cause() & kCauseIP7, 0u);
  EXPECT_EQ(m.core().gpr(kS0), 16u);  // 20 instructions after mtc0 Count: 4 mtc0/lui/ori/mtc0
  EXPECT_EQ(m.core().epc(), Code(22));
  EXPECT_EQ(m.core().counters().interrupts, 1u);
  // Writing Compare acknowledges it.
  m.core().WriteCp0(kCp0Compare, 0, 1000);
  EXPECT_EQ(m.core().cause() & kCauseTI, 0u);
}

TEST(MipsCoreTest, MaskedTimerDoesNotInterrupt) {
  TestMachine m;
  m.Load({Addiu(kT0, kZero, 2), Mtc0(kZero, kCp0Count), Mtc0(kT0, kCp0Compare),
          Addiu(kT1, kZero, 0x0001), Mtc0(kT1, kCp0Status)});  // IE but IM7 = 0
  for (int i = 5; i < 64; ++i) m.Load(Code(i), {Nop()});
  m.Step(40);
  EXPECT_EQ(m.core().counters().interrupts, 0u);
  EXPECT_NE(m.core().cause() & kCauseTI, 0u);
}

TEST(MipsCoreTest, WaitIdlesUntilTheTimer) {
  TestMachine m(1);
  m.Load({Addiu(kT0, kZero, 100), Mtc0(kZero, kCp0Count), Mtc0(kT0, kCp0Compare), Lui(kT1, 0x1000),
          Ori(kT1, kT1, 0x8001), Mtc0(kT1, kCp0Status), Wait(), Nop()});
  SystemEvent e = m.system().Run(10'000);
  EXPECT_EQ(e.stop, SystemStop::kBudget);
  EXPECT_EQ(m.core().counters().interrupts, 1u);
  EXPECT_EQ(m.core().epc(), Code(7));  // after the wait
}

TEST(MipsCoreTest, WaitWithNothingToWakeHalts) {
  TestMachine m(2);
  m.Load({Wait(), Nop()});
  SystemEvent e = m.system().Run(1'000'000);
  EXPECT_EQ(e.stop, SystemStop::kHalted);
}

TEST(MipsCoreTest, Kseg2IsMappedAndErlUnmapsKuseg) {
  TestMachine m;
  m.Load({Lui(kS0, 0xc000), Lw(kT0, 0, kS0)});
  m.Step(2);
  EXPECT_EQ(m.core().pc(), TestMachine::kRefill);
  EXPECT_EQ(m.core().bad_vaddr(), 0xc0000000u);

  TestMachine n;
  n.core().WriteCp0(kCp0Status, 0, kStatusCU0 | kStatusERL);
  n.Poke32(0x2000, 77);
  n.Load({Addiu(kS0, kZero, 0x2000), Lw(kT0, 0, kS0)});
  n.Step(2);
  EXPECT_EQ(n.core().gpr(kT0), 77u);  // kuseg 0x2000 is physical 0x2000 under ERL
}

TEST(MipsCoreTest, LargePagesSelectTheOddHalf) {
  TestMachine m;
  // 16 KiB pages: the pair covers 0x00400000-0x00407fff; odd half at 0x00404000.
  m.core().WriteCp0(kCp0PageMask, 0, 0x6000);
  m.core().WriteCp0(kCp0EntryHi, 0, 0x00400000u);
  m.core().WriteCp0(kCp0EntryLo0, 0, ((0x10000u >> 12) << 6) | kEntryLoV | kEntryLoD);
  m.core().WriteCp0(kCp0EntryLo1, 0, ((0x20000u >> 12) << 6) | kEntryLoV | kEntryLoD);
  m.core().WriteCp0(kCp0Index, 0, 7);
  m.Poke32(0x20000 + 0x1230, 0xabcd);
  m.Poke32(0x10000 + 0x3ffc, 0x1234);
  m.Load({Tlbwi(), Lui(kS0, 0x0040), Ori(kS0, kS0, 0x5230), Lw(kT0, 0, kS0), Lui(kS1, 0x0040),
          Ori(kS1, kS1, 0x3ffc), Lw(kT1, 0, kS1)});
  m.Step(7);
  EXPECT_EQ(m.core().gpr(kT0), 0xabcdu);
  EXPECT_EQ(m.core().gpr(kT1), 0x1234u);
  EXPECT_EQ(m.core().counters().exceptions, 0u);
}

TEST(MipsCoreTest, TlbwrStaysAboveWired) {
  TestMachine m;
  m.core().WriteCp0(kCp0Wired, 0, 30);
  for (int i = 0; i < 40; ++i) {
    const uint32_t random = m.core().ReadCp0(kCp0Random, 0);
    EXPECT_GE(random, 30u);
    EXPECT_LE(random, 31u);
    m.Load(Code(i), {Nop()});
    m.Step(1);
  }
}

TEST(MipsCoreTest, VectoredInterruptsAndBootVectors) {
  TestMachine m;
  m.core().WriteCp0(kCp0Cause, 0, kCauseIV | (1u << kCauseIpShift));  // IV, software IP0
  m.core().WriteCp0(kCp0Status, 0, kStatusCU0 | (1u << kStatusImShift) | kStatusIE);
  m.Load({Nop()});
  m.Step(1);
  EXPECT_EQ(m.core().pc(), TestMachine::kInterrupt);
  EXPECT_EQ(m.exc_code(), 0u);

  TestMachine n;
  n.core().WriteCp0(kCp0Status, 0, kStatusCU0 | kStatusBEV);
  n.Load({Syscall()});
  n.Step(1);
  EXPECT_EQ(n.core().pc(), 0xbfc00380u);
}

TEST(MipsCoreTest, ExceptionAtExceptionLevelKeepsEpc) {
  TestMachine m;
  m.core().WriteCp0(kCp0Status, 0, kStatusCU0 | kStatusEXL);
  m.core().WriteCp0(kCp0Epc, 0, 0x1234);
  m.Load({Beq(kZero, kZero, 2), Syscall()});
  m.Step(2);
  EXPECT_EQ(m.core().pc(), TestMachine::kGeneral);
  EXPECT_EQ(m.core().epc(), 0x1234u);
  EXPECT_EQ(m.core().cause() & kCauseBD, 0u);
}

TEST(MipsCoreTest, MisalignedJumpTargetFaultsAtTheTarget) {
  TestMachine m;
  m.Load({Lui(kS0, 0x8000), Ori(kS0, kS0, 0x1102), Jr(kS0), Nop()});
  m.Step(5);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kAddressLoad));
  EXPECT_EQ(m.core().epc(), 0x80001102u);
  EXPECT_EQ(m.core().bad_vaddr(), 0x80001102u);
  EXPECT_EQ(m.core().cause() & kCauseBD, 0u);
}

TEST(MipsCoreTest, PartialWordAccessToADeviceIsABusError) {
  TestMachine m;
  m.Load({Lui(kS0, 0xbf00), Swl(kT0, 3, kS0)});
  m.Step(2);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kDataBusError));
  EXPECT_FALSE(m.core().pending_mmio().active);
}

TEST(MipsCoreTest, ScWithoutLlFailsAndDiEiReturnStatus) {
  TestMachine m;
  m.Poke32(0x2000, 5);
  m.Load({Lui(kS0, 0x8000), Addiu(kT0, kZero, 9), Sc(kT0, 0x2000, kS0), Ei(kT1), Di(kT2),
          Mfc0(kT3, kCp0Status)});
  m.Step(6);
  EXPECT_EQ(m.core().gpr(kT0), 0u);
  EXPECT_EQ(m.Peek32(0x2000), 5u);
  EXPECT_EQ(m.core().gpr(kT1) & kStatusIE, 0u);
  EXPECT_EQ(m.core().gpr(kT2) & kStatusIE, kStatusIE);
  EXPECT_EQ(m.core().gpr(kT3) & kStatusIE, 0u);
}

TEST(MipsCoreTest, CountRunsOnModelledCycles) {
  TestMachine m;
  // 1 instruction (mtc0 Count), then a syscall: Count counts the syscall's exception
  // charge (20 cycles) too, at one count per 2 cycles.
  m.Load({Mtc0(kZero, kCp0Count), Syscall()});
  m.Load(TestMachine::kGeneral, {Mfc0(kT0, kCp0Count)});
  m.Step(3);
  EXPECT_EQ(m.core().gpr(kT0), (0u + CostModel::kCyclesPerException) / 2);
}

}  // namespace
}  // namespace sigvisor::mips
