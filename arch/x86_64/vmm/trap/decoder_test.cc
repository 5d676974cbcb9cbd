// The decoder on byte sequences: every DR0-DR7 move in both directions with every
// general register (REX.B and REX.R forms), each segment-load form with register and
// memory operands, swapgs, wrfsbase/wrgsbase, wrmsr, and instructions that are not
// trap sites. Expected bytes are what GNU as emits.
#include "arch/x86_64/vmm/trap/decoder.h"

#include <gtest/gtest.h>

#include <vector>

namespace sigvisor::trap {
namespace {

class DecoderTest : public ::testing::Test {
 protected:
  DecoderTest() : decoder_(*Decoder::Create()) {}

  TrapInsn DecodeTrap(std::vector<uint8_t> bytes) {
    bytes.push_back(0x90);  // trailing bytes must not count
    std::optional<DecodedInsn> decoded = decoder_.Decode(bytes, 0x100000);
    EXPECT_TRUE(decoded.has_value());
    if (!decoded) return {};
    EXPECT_EQ(decoded->length, bytes.size() - 1);
    EXPECT_TRUE(decoded->trap.has_value()) << decoded->text;
    if (!decoded->trap) return {};
    EXPECT_EQ(decoded->trap->length, bytes.size() - 1);
    return *decoded->trap;
  }

  std::string Text(std::vector<uint8_t> bytes) {
    std::optional<DecodedInsn> decoded = decoder_.Decode(bytes, 0x100000);
    return decoded ? decoded->text : "(invalid)";
  }

  Decoder decoder_;
};

// mov %gpr, %dbN is [REX] 0f 23 /r with reg = N and rm = the register; mov %dbN,
// %gpr is 0f 21. REX.B selects r8-r15, REX.R DR8-DR15.
std::vector<uint8_t> DrMove(bool to_dr, int dr, int gpr) {
  std::vector<uint8_t> bytes;
  const uint8_t rex = 0x40 | (dr >= 8 ? 4 : 0) | (gpr >= 8 ? 1 : 0);
  if (rex != 0x40) bytes.push_back(rex);
  bytes.push_back(0x0f);
  bytes.push_back(to_dr ? 0x23 : 0x21);
  bytes.push_back(static_cast<uint8_t>(0xc0 | ((dr & 7) << 3) | (gpr & 7)));
  return bytes;
}

TEST_F(DecoderTest, EveryDebugRegisterMoveWithEveryGeneralRegister) {
  for (bool to_dr : {true, false}) {
    for (int dr = 0; dr < 8; ++dr) {
      for (int gpr = 0; gpr < 16; ++gpr) {
        SCOPED_TRACE(testing::Message() << (to_dr ? "to" : "from") << " dr" << dr << " gpr " << gpr);
        TrapInsn insn = DecodeTrap(DrMove(to_dr, dr, gpr));
        EXPECT_EQ(insn.op, to_dr ? TrapOp::kMovToDr : TrapOp::kMovFromDr);
        EXPECT_EQ(insn.dr, dr);
        EXPECT_EQ(insn.gpr, gpr);
        EXPECT_EQ(insn.operand_bytes, 8);
        EXPECT_FALSE(insn.mem.has_value());
        EXPECT_EQ(insn.Kind(), to_dr ? TrapKind::kDrWrite : TrapKind::kDrRead);
      }
    }
  }
}

TEST_F(DecoderTest, DebugRegisterMovesAsTheAssemblerWritesThem) {
  EXPECT_EQ(Text({0x0f, 0x23, 0xf8}), "movq %rax, %dr7");
  EXPECT_EQ(Text({0x41, 0x0f, 0x23, 0xc7}), "movq %r15, %dr0");
  EXPECT_EQ(Text({0x41, 0x0f, 0x21, 0xf1}), "movq %dr6, %r9");
  TrapInsn r9 = DecodeTrap({0x41, 0x0f, 0x21, 0xf1});
  EXPECT_EQ(r9.dr, 6);
  EXPECT_EQ(r9.gpr, 9);
  // REX.R names DR8, which does not exist (the emulator raises #UD).
  TrapInsn dr8 = DecodeTrap({0x44, 0x0f, 0x23, 0xc0});
  EXPECT_EQ(dr8.dr, 8);
  // In 64-bit mode the ModRM mod field is ignored: still a register move.
  TrapInsn mod0 = DecodeTrap({0x0f, 0x23, 0x00});
  EXPECT_EQ(mod0.op, TrapOp::kMovToDr);
  EXPECT_EQ(mod0.dr, 0);
  EXPECT_EQ(mod0.gpr, 0);
}

TEST_F(DecoderTest, MovToSegmentRegisterFromRegisters) {
  TrapInsn ds = DecodeTrap({0x8e, 0xd8});  // mov %eax, %ds
  EXPECT_EQ(ds.op, TrapOp::kMovToSreg);
  EXPECT_EQ(ds.sreg, SegReg::kDs);
  EXPECT_EQ(ds.gpr, 0);
  EXPECT_EQ(ds.Kind(), TrapKind::kSegmentLoad);
  TrapInsn fs = DecodeTrap({0x41, 0x8e, 0xe1});  // mov %r9d, %fs
  EXPECT_EQ(fs.sreg, SegReg::kFs);
  EXPECT_EQ(fs.gpr, 9);
  TrapInsn ss = DecodeTrap({0x8e, 0xd2});  // mov %edx, %ss
  EXPECT_EQ(ss.sreg, SegReg::kSs);
  EXPECT_EQ(ss.gpr, 2);
  TrapInsn es = DecodeTrap({0x66, 0x8e, 0xc3});  // mov %bx, %es
  EXPECT_EQ(es.sreg, SegReg::kEs);
  EXPECT_EQ(es.gpr, 3);
  TrapInsn cs = DecodeTrap({0x8e, 0xc8});  // mov %eax, %cs: decoded, #UD when run
  EXPECT_EQ(cs.sreg, SegReg::kCs);
}

TEST_F(DecoderTest, MovToSegmentRegisterFromMemory) {
  TrapInsn gs = DecodeTrap({0x8e, 0x28});  // mov (%rax), %gs
  EXPECT_EQ(gs.sreg, SegReg::kGs);
  ASSERT_TRUE(gs.mem.has_value());
  EXPECT_EQ(gs.mem->base, 0);
  EXPECT_EQ(gs.mem->index, -1);
  EXPECT_EQ(gs.mem->disp, 0);
  TrapInsn ss = DecodeTrap({0x8e, 0x15, 0x10, 0, 0, 0});  // mov 0x10(%rip), %ss
  ASSERT_TRUE(ss.mem.has_value());
  EXPECT_EQ(ss.mem->base, kRipBase);
  EXPECT_EQ(ss.mem->disp, 0x10);
  TrapInsn ds = DecodeTrap({0x64, 0x8e, 0x5c, 0x8b, 0x08});  // mov %fs:8(%rbx,%rcx,4), %ds
  ASSERT_TRUE(ds.mem.has_value());
  EXPECT_EQ(ds.mem->base, 3);
  EXPECT_EQ(ds.mem->index, 1);
  EXPECT_EQ(ds.mem->scale, 4);
  EXPECT_EQ(ds.mem->disp, 8);
  EXPECT_EQ(ds.mem->segment, SegReg::kFs);
  TrapInsn es = DecodeTrap({0x43, 0x8e, 0x44, 0x3d, 0xf0});  // mov -0x10(%r13,%r15), %es
  ASSERT_TRUE(es.mem.has_value());
  EXPECT_EQ(es.mem->base, 13);
  EXPECT_EQ(es.mem->index, 15);
  EXPECT_EQ(es.mem->disp, -0x10);
  TrapInsn narrow = DecodeTrap({0x67, 0x8e, 0x18});  // mov (%eax), %ds
  ASSERT_TRUE(narrow.mem.has_value());
  EXPECT_EQ(narrow.mem->address_bytes, 4);
}

TEST_F(DecoderTest, PopSegmentRegister) {
  TrapInsn fs = DecodeTrap({0x0f, 0xa1});
  EXPECT_EQ(fs.op, TrapOp::kPopSreg);
  EXPECT_EQ(fs.sreg, SegReg::kFs);
  EXPECT_EQ(fs.operand_bytes, 8);
  TrapInsn gs = DecodeTrap({0x0f, 0xa9});
  EXPECT_EQ(gs.sreg, SegReg::kGs);
  EXPECT_EQ(DecodeTrap({0x66, 0x0f, 0xa1}).operand_bytes, 2);  // popw %fs
  EXPECT_EQ(DecodeTrap({0x48, 0x0f, 0xa1}).operand_bytes, 8);  // rex.w popq %fs
}

TEST_F(DecoderTest, FarPointerLoads) {
  TrapInsn lfs = DecodeTrap({0x0f, 0xb4, 0x08});  // lfs (%rax), %ecx
  EXPECT_EQ(lfs.op, TrapOp::kLoadFarPointer);
  EXPECT_EQ(lfs.sreg, SegReg::kFs);
  EXPECT_EQ(lfs.gpr, 1);
  EXPECT_EQ(lfs.operand_bytes, 4);
  ASSERT_TRUE(lfs.mem.has_value());
  EXPECT_EQ(lfs.mem->base, 0);
  TrapInsn lgs = DecodeTrap({0x4c, 0x0f, 0xb5, 0x13});  // rex.w lgs (%rbx), %r10
  EXPECT_EQ(lgs.sreg, SegReg::kGs);
  EXPECT_EQ(lgs.gpr, 10);
  EXPECT_EQ(lgs.operand_bytes, 8);
  TrapInsn lss = DecodeTrap({0x66, 0x0f, 0xb2, 0x14, 0x24});  // lss (%rsp), %dx
  EXPECT_EQ(lss.sreg, SegReg::kSs);
  EXPECT_EQ(lss.gpr, 2);
  EXPECT_EQ(lss.operand_bytes, 2);
  ASSERT_TRUE(lss.mem.has_value());
  EXPECT_EQ(lss.mem->base, 4);
  TrapInsn rip = DecodeTrap({0x0f, 0xb4, 0x05, 0x08, 0, 0, 0});  // lfs 8(%rip), %eax
  ASSERT_TRUE(rip.mem.has_value());
  EXPECT_EQ(rip.mem->base, kRipBase);
}

TEST_F(DecoderTest, SwapgsBaseWritesAndWrmsr) {
  EXPECT_EQ(DecodeTrap({0x0f, 0x01, 0xf8}).op, TrapOp::kSwapgs);
  TrapInsn fs = DecodeTrap({0xf3, 0x48, 0x0f, 0xae, 0xd0});  // wrfsbase %rax
  EXPECT_EQ(fs.op, TrapOp::kWrFsBase);
  EXPECT_EQ(fs.gpr, 0);
  EXPECT_EQ(fs.operand_bytes, 8);
  TrapInsn gs = DecodeTrap({0xf3, 0x49, 0x0f, 0xae, 0xdb});  // wrgsbase %r11
  EXPECT_EQ(gs.op, TrapOp::kWrGsBase);
  EXPECT_EQ(gs.gpr, 11);
  TrapInsn gs32 = DecodeTrap({0xf3, 0x41, 0x0f, 0xae, 0xdb});  // wrgsbase %r11d
  EXPECT_EQ(gs32.operand_bytes, 4);
  TrapInsn wrmsr = DecodeTrap({0x0f, 0x30});
  EXPECT_EQ(wrmsr.op, TrapOp::kWrmsr);
  EXPECT_EQ(wrmsr.Kind(kMsrGsBase), TrapKind::kSegmentLoad);
  EXPECT_EQ(wrmsr.Kind(kMsrKernelGsBase), TrapKind::kSegmentLoad);
  EXPECT_EQ(wrmsr.Kind(0xc0000082), TrapKind::kMsrWrite);
  EXPECT_EQ(SiteClassName(wrmsr.op), "wrmsr");
}

TEST_F(DecoderTest, OtherInstructionsAreNotSites) {
  for (std::vector<uint8_t> bytes : std::vector<std::vector<uint8_t>>{
           {0x8c, 0xd8},                    // mov %ds, %eax (a store, not a load)
           {0x0f, 0x22, 0xd8},              // mov %rax, %cr3
           {0xf3, 0x48, 0x0f, 0xae, 0xc8},  // rdgsbase %rax
           {0x0f, 0x32},                    // rdmsr
           {0x0f, 0x00, 0xd8},              // ltr %ax
           {0x48, 0xcb},                    // lretq
           {0x90},
       }) {
    std::optional<DecodedInsn> decoded = decoder_.Decode(bytes, 0);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_FALSE(decoded->trap.has_value()) << decoded->text;
  }
  EXPECT_FALSE(decoder_.Decode(std::vector<uint8_t>{0x0f}, 0).has_value());
}

TEST_F(DecoderTest, SweepFindsEachSiteOnce) {
  // nop; mov %rax,%db7; (garbage byte 0x06 is invalid in 64-bit mode); swapgs; ret
  std::vector<uint8_t> code = {0x90, 0x0f, 0x23, 0xf8, 0x06, 0x0f, 0x01, 0xf8, 0xc3};
  std::vector<DecodedInsn> found;
  decoder_.Sweep(code, 0x1000, [&](const DecodedInsn& insn) { found.push_back(insn); });
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].address, 0x1001u);
  EXPECT_EQ(found[0].text, "movq %rax, %dr7");
  EXPECT_EQ(found[1].address, 0x1005u);
  EXPECT_EQ(found[1].text, "swapgs");
}

}  // namespace
}  // namespace sigvisor::trap
