// The Capstone that sigvisor links (capstone_x86_only.c): x86 decodes, the other
// architectures are out of the link. If a Capstone update renames the functions that
// keep them out, the second test fails, which is the sign that every sigvisor start
// is back to relocating their tables.
#include <capstone/capstone.h>

#include <cstdint>

#include "gtest/gtest.h"

namespace {

TEST(CapstoneX86Only, X86StillDecodes) {
  csh handle = 0;
  ASSERT_EQ(cs_open(CS_ARCH_X86, CS_MODE_64, &handle), CS_ERR_OK);
  const uint8_t mov_dr7_rax[] = {0x0f, 0x23, 0xf8};  // mov %rax,%dr7
  cs_insn* insn = nullptr;
  ASSERT_EQ(cs_disasm(handle, mov_dr7_rax, sizeof(mov_dr7_rax), 0x1000, 1, &insn), 1u);
  EXPECT_EQ(insn[0].id, X86_INS_MOV);
  EXPECT_EQ(insn[0].size, 3);
  cs_free(insn, 1);
  cs_close(&handle);
}

TEST(CapstoneX86Only, OtherArchitecturesAreLeftOut) {
  for (cs_arch arch : {CS_ARCH_ARM, CS_ARCH_ARM64, CS_ARCH_MIPS, CS_ARCH_PPC, CS_ARCH_SPARC,
                       CS_ARCH_SYSZ, CS_ARCH_XCORE, CS_ARCH_M68K, CS_ARCH_TMS320C64X,
                       CS_ARCH_M680X, CS_ARCH_EVM}) {
    csh handle = 0;
    EXPECT_EQ(cs_open(arch, CS_MODE_LITTLE_ENDIAN, &handle), CS_ERR_ARCH) << "arch " << arch;
  }
}

}  // namespace
