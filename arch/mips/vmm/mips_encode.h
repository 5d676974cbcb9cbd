// Encoders for the MIPS32r2 instructions the interpreter's tests use, so a test
// spells its program as `Addiu(kT0, kZero, 5)` rather than as hex words.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_ENCODE_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_ENCODE_H_

#include <cstdint>

#include "arch/mips/vmm/mips_opcodes.h"

namespace sigvisor::mips::encode {

enum Reg : uint32_t {
  kZero = 0, kAt = 1, kV0 = 2, kV1 = 3, kA0 = 4, kA1 = 5, kA2 = 6, kA3 = 7,
  kT0 = 8, kT1 = 9, kT2 = 10, kT3 = 11, kT4 = 12, kT5 = 13, kT6 = 14, kT7 = 15,
  kS0 = 16, kS1 = 17, kS2 = 18, kS3 = 19, kT8 = 24, kT9 = 25, kK0 = 26, kK1 = 27,
  kGp = 28, kSp = 29, kFp = 30, kRa = 31,
};

constexpr uint32_t R(uint32_t op, uint32_t rs, uint32_t rt, uint32_t rd, uint32_t sa,
                     uint32_t funct) {
  return (op << 26) | (rs << 21) | (rt << 16) | (rd << 11) | (sa << 6) | funct;
}
constexpr uint32_t I(uint32_t op, uint32_t rs, uint32_t rt, int32_t imm) {
  return (op << 26) | (rs << 21) | (rt << 16) | (static_cast<uint32_t>(imm) & 0xffff);
}

// A COP0 instruction with the CO bit set: the function field names it.
constexpr uint32_t Co(uint32_t funct) { return R(opc::kCop0, cop0::kCo, 0, 0, 0, funct); }

constexpr uint32_t Nop() { return 0; }
constexpr uint32_t Sll(uint32_t rd, uint32_t rt, uint32_t sa) { return R(opc::kSpecial, 0, rt, rd, sa, special::kSll); }
constexpr uint32_t Srl(uint32_t rd, uint32_t rt, uint32_t sa) { return R(opc::kSpecial, 0, rt, rd, sa, special::kSrl); }
constexpr uint32_t Rotr(uint32_t rd, uint32_t rt, uint32_t sa) { return R(opc::kSpecial, 1, rt, rd, sa, special::kSrl); }
constexpr uint32_t Sra(uint32_t rd, uint32_t rt, uint32_t sa) { return R(opc::kSpecial, 0, rt, rd, sa, special::kSra); }
constexpr uint32_t Sllv(uint32_t rd, uint32_t rt, uint32_t rs) { return R(opc::kSpecial, rs, rt, rd, 0, special::kSllv); }
constexpr uint32_t Srlv(uint32_t rd, uint32_t rt, uint32_t rs) { return R(opc::kSpecial, rs, rt, rd, 0, special::kSrlv); }
constexpr uint32_t Rotrv(uint32_t rd, uint32_t rt, uint32_t rs) { return R(opc::kSpecial, rs, rt, rd, 1, special::kSrlv); }
constexpr uint32_t Srav(uint32_t rd, uint32_t rt, uint32_t rs) { return R(opc::kSpecial, rs, rt, rd, 0, special::kSrav); }
constexpr uint32_t Jr(uint32_t rs) { return R(opc::kSpecial, rs, 0, 0, 0, special::kJr); }
constexpr uint32_t Jalr(uint32_t rd, uint32_t rs) { return R(opc::kSpecial, rs, 0, rd, 0, special::kJalr); }
constexpr uint32_t Movz(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kMovz); }
constexpr uint32_t Movn(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kMovn); }
constexpr uint32_t Syscall() { return R(opc::kSpecial, 0, 0, 0, 0, special::kSyscall); }
constexpr uint32_t Break() { return R(opc::kSpecial, 0, 0, 0, 0, special::kBreak); }
constexpr uint32_t Sync() { return R(opc::kSpecial, 0, 0, 0, 0, special::kSync); }
constexpr uint32_t Mfhi(uint32_t rd) { return R(opc::kSpecial, 0, 0, rd, 0, special::kMfhi); }
constexpr uint32_t Mthi(uint32_t rs) { return R(opc::kSpecial, rs, 0, 0, 0, special::kMthi); }
constexpr uint32_t Mflo(uint32_t rd) { return R(opc::kSpecial, 0, 0, rd, 0, special::kMflo); }
constexpr uint32_t Mtlo(uint32_t rs) { return R(opc::kSpecial, rs, 0, 0, 0, special::kMtlo); }
constexpr uint32_t Mult(uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, 0, 0, special::kMult); }
constexpr uint32_t Multu(uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, 0, 0, special::kMultu); }
constexpr uint32_t Div(uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, 0, 0, special::kDiv); }
constexpr uint32_t Divu(uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, 0, 0, special::kDivu); }
constexpr uint32_t Add(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kAdd); }
constexpr uint32_t Addu(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kAddu); }
constexpr uint32_t Sub(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kSub); }
constexpr uint32_t Subu(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kSubu); }
constexpr uint32_t And(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kAnd); }
constexpr uint32_t Or(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kOr); }
constexpr uint32_t Xor(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kXor); }
constexpr uint32_t Nor(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kNor); }
constexpr uint32_t Slt(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kSlt); }
constexpr uint32_t Sltu(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, rd, 0, special::kSltu); }
constexpr uint32_t Tge(uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, 0, 0, special::kTge); }
constexpr uint32_t Teq(uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, 0, 0, special::kTeq); }
constexpr uint32_t Tne(uint32_t rs, uint32_t rt) { return R(opc::kSpecial, rs, rt, 0, 0, special::kTne); }

constexpr uint32_t Bltz(uint32_t rs, int32_t off) { return I(opc::kRegimm, rs, regimm::kBltz, off); }
constexpr uint32_t Bgez(uint32_t rs, int32_t off) { return I(opc::kRegimm, rs, regimm::kBgez, off); }
constexpr uint32_t Bltzl(uint32_t rs, int32_t off) { return I(opc::kRegimm, rs, regimm::kBltzl, off); }
constexpr uint32_t Teqi(uint32_t rs, int32_t imm) { return I(opc::kRegimm, rs, regimm::kTeqi, imm); }
constexpr uint32_t Bal(int32_t off) { return I(opc::kRegimm, 0, regimm::kBgezal, off); }
constexpr uint32_t Synci(uint32_t base, int32_t off) { return I(opc::kRegimm, base, regimm::kSynci, off); }

constexpr uint32_t J(uint32_t target) { return (opc::kJ << 26) | ((target >> 2) & 0x03ffffff); }
constexpr uint32_t Jal(uint32_t target) { return (opc::kJal << 26) | ((target >> 2) & 0x03ffffff); }
constexpr uint32_t Beq(uint32_t rs, uint32_t rt, int32_t off) { return I(opc::kBeq, rs, rt, off); }
constexpr uint32_t Bne(uint32_t rs, uint32_t rt, int32_t off) { return I(opc::kBne, rs, rt, off); }
constexpr uint32_t Blez(uint32_t rs, int32_t off) { return I(opc::kBlez, rs, 0, off); }
constexpr uint32_t Bgtz(uint32_t rs, int32_t off) { return I(opc::kBgtz, rs, 0, off); }
constexpr uint32_t Addi(uint32_t rt, uint32_t rs, int32_t imm) { return I(opc::kAddi, rs, rt, imm); }
constexpr uint32_t Addiu(uint32_t rt, uint32_t rs, int32_t imm) { return I(opc::kAddiu, rs, rt, imm); }
constexpr uint32_t Slti(uint32_t rt, uint32_t rs, int32_t imm) { return I(opc::kSlti, rs, rt, imm); }
constexpr uint32_t Sltiu(uint32_t rt, uint32_t rs, int32_t imm) { return I(opc::kSltiu, rs, rt, imm); }
constexpr uint32_t Andi(uint32_t rt, uint32_t rs, uint32_t imm) { return I(opc::kAndi, rs, rt, imm); }
constexpr uint32_t Ori(uint32_t rt, uint32_t rs, uint32_t imm) { return I(opc::kOri, rs, rt, imm); }
constexpr uint32_t Xori(uint32_t rt, uint32_t rs, uint32_t imm) { return I(opc::kXori, rs, rt, imm); }
constexpr uint32_t Lui(uint32_t rt, uint32_t imm) { return I(opc::kLui, 0, rt, imm); }
constexpr uint32_t Beql(uint32_t rs, uint32_t rt, int32_t off) { return I(opc::kBeql, rs, rt, off); }
constexpr uint32_t Bnel(uint32_t rs, uint32_t rt, int32_t off) { return I(opc::kBnel, rs, rt, off); }

constexpr uint32_t Mfc0(uint32_t rt, uint32_t rd, uint32_t sel = 0) {
  return R(opc::kCop0, cop0::kMfc0, rt, rd, 0, sel);
}
constexpr uint32_t Mtc0(uint32_t rt, uint32_t rd, uint32_t sel = 0) {
  return R(opc::kCop0, cop0::kMtc0, rt, rd, 0, sel);
}
constexpr uint32_t Tlbr() { return Co(cop0::kTlbr); }
constexpr uint32_t Tlbwi() { return Co(cop0::kTlbwi); }
constexpr uint32_t Tlbwr() { return Co(cop0::kTlbwr); }
constexpr uint32_t Tlbp() { return Co(cop0::kTlbp); }
constexpr uint32_t Eret() { return Co(cop0::kEret); }
constexpr uint32_t Wait() { return Co(cop0::kWait); }
// mfmc0 on Status (CP0 register 12).
constexpr uint32_t Di(uint32_t rt) { return R(opc::kCop0, cop0::kMfmc0, rt, 12, 0, 0); }
constexpr uint32_t Ei(uint32_t rt) { return R(opc::kCop0, cop0::kMfmc0, rt, 12, 0, cop0::kMfmc0Ei); }
constexpr uint32_t Ehb() { return Sll(kZero, kZero, 3); }

constexpr uint32_t Madd(uint32_t rs, uint32_t rt) { return R(opc::kSpecial2, rs, rt, 0, 0, special2::kMadd); }
constexpr uint32_t Maddu(uint32_t rs, uint32_t rt) { return R(opc::kSpecial2, rs, rt, 0, 0, special2::kMaddu); }
constexpr uint32_t Mul(uint32_t rd, uint32_t rs, uint32_t rt) { return R(opc::kSpecial2, rs, rt, rd, 0, special2::kMul); }
constexpr uint32_t Msub(uint32_t rs, uint32_t rt) { return R(opc::kSpecial2, rs, rt, 0, 0, special2::kMsub); }
constexpr uint32_t Msubu(uint32_t rs, uint32_t rt) { return R(opc::kSpecial2, rs, rt, 0, 0, special2::kMsubu); }
constexpr uint32_t Clz(uint32_t rd, uint32_t rs) { return R(opc::kSpecial2, rs, rd, rd, 0, special2::kClz); }
constexpr uint32_t Clo(uint32_t rd, uint32_t rs) { return R(opc::kSpecial2, rs, rd, rd, 0, special2::kClo); }
constexpr uint32_t Ext(uint32_t rt, uint32_t rs, uint32_t pos, uint32_t size) {
  return R(opc::kSpecial3, rs, rt, size - 1, pos, special3::kExt);
}
constexpr uint32_t Ins(uint32_t rt, uint32_t rs, uint32_t pos, uint32_t size) {
  return R(opc::kSpecial3, rs, rt, pos + size - 1, pos, special3::kIns);
}
constexpr uint32_t Wsbh(uint32_t rd, uint32_t rt) {
  return R(opc::kSpecial3, 0, rt, rd, bshfl::kWsbh, special3::kBshfl);
}
constexpr uint32_t Seb(uint32_t rd, uint32_t rt) {
  return R(opc::kSpecial3, 0, rt, rd, bshfl::kSeb, special3::kBshfl);
}
constexpr uint32_t Seh(uint32_t rd, uint32_t rt) {
  return R(opc::kSpecial3, 0, rt, rd, bshfl::kSeh, special3::kBshfl);
}
constexpr uint32_t Rdhwr(uint32_t rt, uint32_t rd) {
  return R(opc::kSpecial3, 0, rt, rd, 0, special3::kRdhwr);
}

constexpr uint32_t Lb(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLb, base, rt, off); }
constexpr uint32_t Lh(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLh, base, rt, off); }
constexpr uint32_t Lwl(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLwl, base, rt, off); }
constexpr uint32_t Lw(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLw, base, rt, off); }
constexpr uint32_t Lbu(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLbu, base, rt, off); }
constexpr uint32_t Lhu(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLhu, base, rt, off); }
constexpr uint32_t Lwr(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLwr, base, rt, off); }
constexpr uint32_t Sb(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kSb, base, rt, off); }
constexpr uint32_t Sh(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kSh, base, rt, off); }
constexpr uint32_t Swl(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kSwl, base, rt, off); }
constexpr uint32_t Sw(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kSw, base, rt, off); }
constexpr uint32_t Swr(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kSwr, base, rt, off); }
constexpr uint32_t Cache(uint32_t op, int32_t off, uint32_t base) { return I(opc::kCache, base, op, off); }
constexpr uint32_t Ll(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kLl, base, rt, off); }
constexpr uint32_t Lwc1(uint32_t ft, int32_t off, uint32_t base) { return I(opc::kLwc1, base, ft, off); }
constexpr uint32_t Sc(uint32_t rt, int32_t off, uint32_t base) { return I(opc::kSc, base, rt, off); }

}  // namespace sigvisor::mips::encode

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_ENCODE_H_
