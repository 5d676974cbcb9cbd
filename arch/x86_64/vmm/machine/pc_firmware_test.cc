// The firmware's hand-assembled handlers, read back by Capstone as 16-bit code: each
// handler is the instructions its comment says, and ends in `iret`.
#include "arch/x86_64/vmm/machine/pc_firmware.h"

#include <capstone/capstone.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sigvisor::x86 {
namespace {

// The instructions from `offset` up to and including the first iret, "mnemonic op_str".
std::vector<std::string> Disassemble(uint16_t offset) {
  csh handle;
  EXPECT_EQ(cs_open(CS_ARCH_X86, CS_MODE_16, &handle), CS_ERR_OK);
  std::span<const uint8_t> code = FirmwareHandlerCode().subspan(offset);
  const uint8_t* bytes = code.data();
  size_t size = code.size();
  uint64_t address = offset;
  cs_insn* insn = cs_malloc(handle);
  std::vector<std::string> out;
  while (cs_disasm_iter(handle, &bytes, &size, &address, insn)) {
    std::string text = insn->mnemonic;
    if (insn->op_str[0] != '\0') text += std::string(" ") + insn->op_str;
    out.push_back(text);
    if (text == "iret") break;
  }
  cs_free(insn, 1);
  cs_close(&handle);
  return out;
}

TEST(PcFirmwareTest, HandlersAreTheInstructionsTheySayTheyAre) {
  EXPECT_EQ(Disassemble(kFirmwareHandlers.iret), std::vector<std::string>({"iret"}));
  EXPECT_EQ(Disassemble(kFirmwareHandlers.master_eoi),
            std::vector<std::string>({"push ax", "mov al, 0x20", "out 0x20, al", "pop ax", "iret"}));
  EXPECT_EQ(Disassemble(kFirmwareHandlers.slave_eoi),
            std::vector<std::string>({"push ax", "mov al, 0x20", "out 0xa0, al", "out 0x20, al",
                                      "pop ax", "iret"}));
  EXPECT_EQ(Disassemble(kFirmwareHandlers.timer),
            std::vector<std::string>({"push ax", "push ds", "xor ax, ax", "mov ds, ax",
                                      "inc dword ptr [0x46c]", "int 0x1c", "mov al, 0x20",
                                      "out 0x20, al", "pop ds", "pop ax", "iret"}));
}

TEST(PcFirmwareTest, HandlersFitBelowTheBiosEntryPoint) {
  // F000:FFF0 is where a PC's reset vector sits; the handlers stay well clear of it.
  EXPECT_LT(kFirmwareHandlersGpa + FirmwareHandlerCode().size(), 0xffff0u);
  EXPECT_EQ(kFirmwareHandlersGpa % 16, 0u);  // a segment's base
}

}  // namespace
}  // namespace sigvisor::x86
