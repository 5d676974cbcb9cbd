// The MIPS32r2 instruction fields the interpreter decodes, by name (after QEMU's
// OPC_* tables in target/mips): the major opcode (bits 31..26), the SPECIAL,
// SPECIAL2 and SPECIAL3 function fields (5..0), the REGIMM rt field (20..16), and the
// COP0 rs field (25..21) and, with the CO bit set, its function field. The decoder
// (mips_core.cc) and the tests' encoder (mips_encode.h) both spell instructions with
// these, so a test cannot echo a number the decoder got wrong by typing it again;
// the QEMU differential test is what checks the numbers themselves.
//
// Plain constexpr integers: the decoder switches on them in its hot loop.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_OPCODES_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_OPCODES_H_

#include <cstdint>

namespace sigvisor::mips {

// The fields of an instruction word, by name.
namespace field {
constexpr uint32_t Op(uint32_t i) { return i >> 26; }
constexpr uint32_t Rs(uint32_t i) { return (i >> 21) & 31; }
constexpr uint32_t Rt(uint32_t i) { return (i >> 16) & 31; }
constexpr uint32_t Rd(uint32_t i) { return (i >> 11) & 31; }
constexpr uint32_t Sa(uint32_t i) { return (i >> 6) & 31; }
constexpr uint32_t Funct(uint32_t i) { return i & 63; }
constexpr uint32_t Imm(uint32_t i) { return i & 0xffff; }
constexpr uint32_t SImm(uint32_t i) { return static_cast<uint32_t>(static_cast<int16_t>(i)); }
}  // namespace field

// Major opcodes, insn[31:26].
namespace opc {
inline constexpr uint32_t kSpecial = 0x00;
inline constexpr uint32_t kRegimm = 0x01;
inline constexpr uint32_t kJ = 0x02;
inline constexpr uint32_t kJal = 0x03;
inline constexpr uint32_t kBeq = 0x04;
inline constexpr uint32_t kBne = 0x05;
inline constexpr uint32_t kBlez = 0x06;
inline constexpr uint32_t kBgtz = 0x07;
inline constexpr uint32_t kAddi = 0x08;
inline constexpr uint32_t kAddiu = 0x09;
inline constexpr uint32_t kSlti = 0x0a;
inline constexpr uint32_t kSltiu = 0x0b;
inline constexpr uint32_t kAndi = 0x0c;
inline constexpr uint32_t kOri = 0x0d;
inline constexpr uint32_t kXori = 0x0e;
inline constexpr uint32_t kLui = 0x0f;
inline constexpr uint32_t kCop0 = 0x10;
inline constexpr uint32_t kCop1 = 0x11;
inline constexpr uint32_t kCop2 = 0x12;
inline constexpr uint32_t kCop1x = 0x13;
inline constexpr uint32_t kBeql = 0x14;
inline constexpr uint32_t kBnel = 0x15;
inline constexpr uint32_t kBlezl = 0x16;
inline constexpr uint32_t kBgtzl = 0x17;
inline constexpr uint32_t kSpecial2 = 0x1c;
inline constexpr uint32_t kSpecial3 = 0x1f;
inline constexpr uint32_t kLb = 0x20;
inline constexpr uint32_t kLh = 0x21;
inline constexpr uint32_t kLwl = 0x22;
inline constexpr uint32_t kLw = 0x23;
inline constexpr uint32_t kLbu = 0x24;
inline constexpr uint32_t kLhu = 0x25;
inline constexpr uint32_t kLwr = 0x26;
inline constexpr uint32_t kSb = 0x28;
inline constexpr uint32_t kSh = 0x29;
inline constexpr uint32_t kSwl = 0x2a;
inline constexpr uint32_t kSw = 0x2b;
inline constexpr uint32_t kSwr = 0x2e;
inline constexpr uint32_t kCache = 0x2f;
inline constexpr uint32_t kLl = 0x30;
inline constexpr uint32_t kLwc1 = 0x31;
inline constexpr uint32_t kLwc2 = 0x32;
inline constexpr uint32_t kPref = 0x33;
inline constexpr uint32_t kLdc1 = 0x35;
inline constexpr uint32_t kLdc2 = 0x36;
inline constexpr uint32_t kSc = 0x38;
inline constexpr uint32_t kSwc1 = 0x39;
inline constexpr uint32_t kSwc2 = 0x3a;
inline constexpr uint32_t kSdc1 = 0x3d;
inline constexpr uint32_t kSdc2 = 0x3e;
}  // namespace opc

// SPECIAL function field, insn[5:0].
namespace special {
inline constexpr uint32_t kSll = 0x00;   // nop, ssnop, ehb, pause
inline constexpr uint32_t kMovci = 0x01; // movf/movt
inline constexpr uint32_t kSrl = 0x02;   // rotr with rs bit 0
inline constexpr uint32_t kSra = 0x03;
inline constexpr uint32_t kSllv = 0x04;
inline constexpr uint32_t kSrlv = 0x06;  // rotrv with sa bit 0
inline constexpr uint32_t kSrav = 0x07;
inline constexpr uint32_t kJr = 0x08;
inline constexpr uint32_t kJalr = 0x09;
inline constexpr uint32_t kMovz = 0x0a;
inline constexpr uint32_t kMovn = 0x0b;
inline constexpr uint32_t kSyscall = 0x0c;
inline constexpr uint32_t kBreak = 0x0d;
inline constexpr uint32_t kSync = 0x0f;
inline constexpr uint32_t kMfhi = 0x10;
inline constexpr uint32_t kMthi = 0x11;
inline constexpr uint32_t kMflo = 0x12;
inline constexpr uint32_t kMtlo = 0x13;
inline constexpr uint32_t kMult = 0x18;
inline constexpr uint32_t kMultu = 0x19;
inline constexpr uint32_t kDiv = 0x1a;
inline constexpr uint32_t kDivu = 0x1b;
inline constexpr uint32_t kAdd = 0x20;
inline constexpr uint32_t kAddu = 0x21;
inline constexpr uint32_t kSub = 0x22;
inline constexpr uint32_t kSubu = 0x23;
inline constexpr uint32_t kAnd = 0x24;
inline constexpr uint32_t kOr = 0x25;
inline constexpr uint32_t kXor = 0x26;
inline constexpr uint32_t kNor = 0x27;
inline constexpr uint32_t kSlt = 0x2a;
inline constexpr uint32_t kSltu = 0x2b;
inline constexpr uint32_t kTge = 0x30;
inline constexpr uint32_t kTgeu = 0x31;
inline constexpr uint32_t kTlt = 0x32;
inline constexpr uint32_t kTltu = 0x33;
inline constexpr uint32_t kTeq = 0x34;
inline constexpr uint32_t kTne = 0x36;
}  // namespace special

// REGIMM rt field, insn[20:16].
namespace regimm {
inline constexpr uint32_t kBltz = 0x00;
inline constexpr uint32_t kBgez = 0x01;
inline constexpr uint32_t kBltzl = 0x02;
inline constexpr uint32_t kBgezl = 0x03;
inline constexpr uint32_t kTgei = 0x08;
inline constexpr uint32_t kTgeiu = 0x09;
inline constexpr uint32_t kTlti = 0x0a;
inline constexpr uint32_t kTltiu = 0x0b;
inline constexpr uint32_t kTeqi = 0x0c;
inline constexpr uint32_t kTnei = 0x0e;
inline constexpr uint32_t kBltzal = 0x10;
inline constexpr uint32_t kBgezal = 0x11;  // bal with rs 0
inline constexpr uint32_t kBltzall = 0x12;
inline constexpr uint32_t kBgezall = 0x13;
inline constexpr uint32_t kSynci = 0x1f;
}  // namespace regimm

// COP0: the rs field, insn[25:21]; from kCo up, the function field decides.
namespace cop0 {
inline constexpr uint32_t kMfc0 = 0x00;
inline constexpr uint32_t kMtc0 = 0x04;
inline constexpr uint32_t kRdpgpr = 0x0a;
inline constexpr uint32_t kMfmc0 = 0x0b;  // di / ei
inline constexpr uint32_t kWrpgpr = 0x0e;
inline constexpr uint32_t kCo = 0x10;
// With CO set: the function field, insn[5:0].
inline constexpr uint32_t kTlbr = 0x01;
inline constexpr uint32_t kTlbwi = 0x02;
inline constexpr uint32_t kTlbwr = 0x06;
inline constexpr uint32_t kTlbp = 0x08;
inline constexpr uint32_t kEret = 0x18;
inline constexpr uint32_t kWait = 0x20;
// mfmc0's sc bit, insn[5]: ei (1) or di (0).
inline constexpr uint32_t kMfmc0Ei = 0x20;
}  // namespace cop0

// SPECIAL2 function field, insn[5:0].
namespace special2 {
inline constexpr uint32_t kMadd = 0x00;
inline constexpr uint32_t kMaddu = 0x01;
inline constexpr uint32_t kMul = 0x02;
inline constexpr uint32_t kMsub = 0x04;
inline constexpr uint32_t kMsubu = 0x05;
inline constexpr uint32_t kClz = 0x20;
inline constexpr uint32_t kClo = 0x21;
}  // namespace special2

// SPECIAL3 function field, insn[5:0], and BSHFL's sa field, insn[10:6].
namespace special3 {
inline constexpr uint32_t kExt = 0x00;
inline constexpr uint32_t kIns = 0x04;
inline constexpr uint32_t kBshfl = 0x20;
inline constexpr uint32_t kRdhwr = 0x3b;
}  // namespace special3
namespace bshfl {
inline constexpr uint32_t kWsbh = 0x02;
inline constexpr uint32_t kSeb = 0x10;
inline constexpr uint32_t kSeh = 0x18;
}  // namespace bshfl

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_OPCODES_H_
