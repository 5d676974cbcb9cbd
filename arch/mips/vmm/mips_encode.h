// Encoders for the MIPS32r2 instructions the interpreter's tests use, so a test
// spells its program as `Addiu(kT0, kZero, 5)` rather than as hex words.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_ENCODE_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_ENCODE_H_

#include <cstdint>

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

constexpr uint32_t Nop() { return 0; }
constexpr uint32_t Sll(uint32_t rd, uint32_t rt, uint32_t sa) { return R(0, 0, rt, rd, sa, 0); }
constexpr uint32_t Srl(uint32_t rd, uint32_t rt, uint32_t sa) { return R(0, 0, rt, rd, sa, 2); }
constexpr uint32_t Rotr(uint32_t rd, uint32_t rt, uint32_t sa) { return R(0, 1, rt, rd, sa, 2); }
constexpr uint32_t Sra(uint32_t rd, uint32_t rt, uint32_t sa) { return R(0, 0, rt, rd, sa, 3); }
constexpr uint32_t Sllv(uint32_t rd, uint32_t rt, uint32_t rs) { return R(0, rs, rt, rd, 0, 4); }
constexpr uint32_t Srlv(uint32_t rd, uint32_t rt, uint32_t rs) { return R(0, rs, rt, rd, 0, 6); }
constexpr uint32_t Rotrv(uint32_t rd, uint32_t rt, uint32_t rs) { return R(0, rs, rt, rd, 1, 6); }
constexpr uint32_t Srav(uint32_t rd, uint32_t rt, uint32_t rs) { return R(0, rs, rt, rd, 0, 7); }
constexpr uint32_t Jr(uint32_t rs) { return R(0, rs, 0, 0, 0, 8); }
constexpr uint32_t Jalr(uint32_t rd, uint32_t rs) { return R(0, rs, 0, rd, 0, 9); }
constexpr uint32_t Movz(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0xa); }
constexpr uint32_t Movn(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0xb); }
constexpr uint32_t Syscall() { return 0xc; }
constexpr uint32_t Break() { return 0xd; }
constexpr uint32_t Sync() { return 0xf; }
constexpr uint32_t Mfhi(uint32_t rd) { return R(0, 0, 0, rd, 0, 0x10); }
constexpr uint32_t Mthi(uint32_t rs) { return R(0, rs, 0, 0, 0, 0x11); }
constexpr uint32_t Mflo(uint32_t rd) { return R(0, 0, 0, rd, 0, 0x12); }
constexpr uint32_t Mtlo(uint32_t rs) { return R(0, rs, 0, 0, 0, 0x13); }
constexpr uint32_t Mult(uint32_t rs, uint32_t rt) { return R(0, rs, rt, 0, 0, 0x18); }
constexpr uint32_t Multu(uint32_t rs, uint32_t rt) { return R(0, rs, rt, 0, 0, 0x19); }
constexpr uint32_t Div(uint32_t rs, uint32_t rt) { return R(0, rs, rt, 0, 0, 0x1a); }
constexpr uint32_t Divu(uint32_t rs, uint32_t rt) { return R(0, rs, rt, 0, 0, 0x1b); }
constexpr uint32_t Add(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x20); }
constexpr uint32_t Addu(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x21); }
constexpr uint32_t Sub(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x22); }
constexpr uint32_t Subu(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x23); }
constexpr uint32_t And(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x24); }
constexpr uint32_t Or(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x25); }
constexpr uint32_t Xor(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x26); }
constexpr uint32_t Nor(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x27); }
constexpr uint32_t Slt(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x2a); }
constexpr uint32_t Sltu(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0, rs, rt, rd, 0, 0x2b); }
constexpr uint32_t Tge(uint32_t rs, uint32_t rt) { return R(0, rs, rt, 0, 0, 0x30); }
constexpr uint32_t Teq(uint32_t rs, uint32_t rt) { return R(0, rs, rt, 0, 0, 0x34); }
constexpr uint32_t Tne(uint32_t rs, uint32_t rt) { return R(0, rs, rt, 0, 0, 0x36); }

constexpr uint32_t Bltz(uint32_t rs, int32_t off) { return I(1, rs, 0, off); }
constexpr uint32_t Bgez(uint32_t rs, int32_t off) { return I(1, rs, 1, off); }
constexpr uint32_t Bltzl(uint32_t rs, int32_t off) { return I(1, rs, 2, off); }
constexpr uint32_t Teqi(uint32_t rs, int32_t imm) { return I(1, rs, 0xc, imm); }
constexpr uint32_t Bal(int32_t off) { return I(1, 0, 0x11, off); }
constexpr uint32_t Synci(uint32_t base, int32_t off) { return I(1, base, 0x1f, off); }

constexpr uint32_t J(uint32_t target) { return (2u << 26) | ((target >> 2) & 0x03ffffff); }
constexpr uint32_t Jal(uint32_t target) { return (3u << 26) | ((target >> 2) & 0x03ffffff); }
constexpr uint32_t Beq(uint32_t rs, uint32_t rt, int32_t off) { return I(4, rs, rt, off); }
constexpr uint32_t Bne(uint32_t rs, uint32_t rt, int32_t off) { return I(5, rs, rt, off); }
constexpr uint32_t Blez(uint32_t rs, int32_t off) { return I(6, rs, 0, off); }
constexpr uint32_t Bgtz(uint32_t rs, int32_t off) { return I(7, rs, 0, off); }
constexpr uint32_t Addi(uint32_t rt, uint32_t rs, int32_t imm) { return I(8, rs, rt, imm); }
constexpr uint32_t Addiu(uint32_t rt, uint32_t rs, int32_t imm) { return I(9, rs, rt, imm); }
constexpr uint32_t Slti(uint32_t rt, uint32_t rs, int32_t imm) { return I(0xa, rs, rt, imm); }
constexpr uint32_t Sltiu(uint32_t rt, uint32_t rs, int32_t imm) { return I(0xb, rs, rt, imm); }
constexpr uint32_t Andi(uint32_t rt, uint32_t rs, uint32_t imm) { return I(0xc, rs, rt, imm); }
constexpr uint32_t Ori(uint32_t rt, uint32_t rs, uint32_t imm) { return I(0xd, rs, rt, imm); }
constexpr uint32_t Xori(uint32_t rt, uint32_t rs, uint32_t imm) { return I(0xe, rs, rt, imm); }
constexpr uint32_t Lui(uint32_t rt, uint32_t imm) { return I(0xf, 0, rt, imm); }
constexpr uint32_t Beql(uint32_t rs, uint32_t rt, int32_t off) { return I(0x14, rs, rt, off); }
constexpr uint32_t Bnel(uint32_t rs, uint32_t rt, int32_t off) { return I(0x15, rs, rt, off); }

constexpr uint32_t Mfc0(uint32_t rt, uint32_t rd, uint32_t sel = 0) {
  return R(0x10, 0, rt, rd, 0, sel);
}
constexpr uint32_t Mtc0(uint32_t rt, uint32_t rd, uint32_t sel = 0) {
  return R(0x10, 4, rt, rd, 0, sel);
}
constexpr uint32_t Tlbr() { return 0x42000001; }
constexpr uint32_t Tlbwi() { return 0x42000002; }
constexpr uint32_t Tlbwr() { return 0x42000006; }
constexpr uint32_t Tlbp() { return 0x42000008; }
constexpr uint32_t Eret() { return 0x42000018; }
constexpr uint32_t Wait() { return 0x42000020; }
constexpr uint32_t Di(uint32_t rt) { return 0x41606000 | (rt << 16); }
constexpr uint32_t Ei(uint32_t rt) { return 0x41606020 | (rt << 16); }
constexpr uint32_t Ehb() { return 0x000000c0; }

constexpr uint32_t Madd(uint32_t rs, uint32_t rt) { return R(0x1c, rs, rt, 0, 0, 0); }
constexpr uint32_t Maddu(uint32_t rs, uint32_t rt) { return R(0x1c, rs, rt, 0, 0, 1); }
constexpr uint32_t Mul(uint32_t rd, uint32_t rs, uint32_t rt) { return R(0x1c, rs, rt, rd, 0, 2); }
constexpr uint32_t Msub(uint32_t rs, uint32_t rt) { return R(0x1c, rs, rt, 0, 0, 4); }
constexpr uint32_t Msubu(uint32_t rs, uint32_t rt) { return R(0x1c, rs, rt, 0, 0, 5); }
constexpr uint32_t Clz(uint32_t rd, uint32_t rs) { return R(0x1c, rs, rd, rd, 0, 0x20); }
constexpr uint32_t Clo(uint32_t rd, uint32_t rs) { return R(0x1c, rs, rd, rd, 0, 0x21); }
constexpr uint32_t Ext(uint32_t rt, uint32_t rs, uint32_t pos, uint32_t size) {
  return R(0x1f, rs, rt, size - 1, pos, 0);
}
constexpr uint32_t Ins(uint32_t rt, uint32_t rs, uint32_t pos, uint32_t size) {
  return R(0x1f, rs, rt, pos + size - 1, pos, 4);
}
constexpr uint32_t Wsbh(uint32_t rd, uint32_t rt) { return R(0x1f, 0, rt, rd, 2, 0x20); }
constexpr uint32_t Seb(uint32_t rd, uint32_t rt) { return R(0x1f, 0, rt, rd, 0x10, 0x20); }
constexpr uint32_t Seh(uint32_t rd, uint32_t rt) { return R(0x1f, 0, rt, rd, 0x18, 0x20); }
constexpr uint32_t Rdhwr(uint32_t rt, uint32_t rd) { return R(0x1f, 0, rt, rd, 0, 0x3b); }

constexpr uint32_t Lb(uint32_t rt, int32_t off, uint32_t base) { return I(0x20, base, rt, off); }
constexpr uint32_t Lh(uint32_t rt, int32_t off, uint32_t base) { return I(0x21, base, rt, off); }
constexpr uint32_t Lwl(uint32_t rt, int32_t off, uint32_t base) { return I(0x22, base, rt, off); }
constexpr uint32_t Lw(uint32_t rt, int32_t off, uint32_t base) { return I(0x23, base, rt, off); }
constexpr uint32_t Lbu(uint32_t rt, int32_t off, uint32_t base) { return I(0x24, base, rt, off); }
constexpr uint32_t Lhu(uint32_t rt, int32_t off, uint32_t base) { return I(0x25, base, rt, off); }
constexpr uint32_t Lwr(uint32_t rt, int32_t off, uint32_t base) { return I(0x26, base, rt, off); }
constexpr uint32_t Sb(uint32_t rt, int32_t off, uint32_t base) { return I(0x28, base, rt, off); }
constexpr uint32_t Sh(uint32_t rt, int32_t off, uint32_t base) { return I(0x29, base, rt, off); }
constexpr uint32_t Swl(uint32_t rt, int32_t off, uint32_t base) { return I(0x2a, base, rt, off); }
constexpr uint32_t Sw(uint32_t rt, int32_t off, uint32_t base) { return I(0x2b, base, rt, off); }
constexpr uint32_t Swr(uint32_t rt, int32_t off, uint32_t base) { return I(0x2e, base, rt, off); }
constexpr uint32_t Cache(uint32_t op, int32_t off, uint32_t base) { return I(0x2f, base, op, off); }
constexpr uint32_t Ll(uint32_t rt, int32_t off, uint32_t base) { return I(0x30, base, rt, off); }
constexpr uint32_t Lwc1(uint32_t ft, int32_t off, uint32_t base) { return I(0x31, base, ft, off); }
constexpr uint32_t Sc(uint32_t rt, int32_t off, uint32_t base) { return I(0x38, base, rt, off); }

}  // namespace sigvisor::mips::encode

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_ENCODE_H_
