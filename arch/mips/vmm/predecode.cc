#include "arch/mips/vmm/predecode.h"

#include <cstring>

#include "arch/mips/vmm/cp0.h"
#include "arch/mips/vmm/mips_opcodes.h"

namespace sigvisor::mips {
namespace {

using namespace field;  // NOLINT: the instruction fields, by name

constexpr uint8_t Dest(uint32_t r) { return r == 0 ? kSinkRegister : static_cast<uint8_t>(r); }

// The kind of `insn` and its fields, exactly as MipsCore::Execute reads them: the
// same keys, the same ignored bits, and kBail wherever Execute would raise an
// exception or touch anything but registers and RAM.
DecodedOp Decode(uint32_t insn) {
  DecodedOp op;
  op.raw = insn;
  op.s = static_cast<uint8_t>(Rs(insn));
  op.t = static_cast<uint8_t>(Rt(insn));
  op.sa = static_cast<uint8_t>(Sa(insn));
  const auto r_type = [&](OpKind k) {
    op.kind = k;
    op.d = Dest(Rd(insn));
  };
  const auto i_type = [&](OpKind k, uint32_t imm) {
    op.kind = k;
    op.d = Dest(Rt(insn));
    op.imm = imm;
  };
  const auto branch = [&](OpKind k) {
    op.kind = k;
    op.imm = SImm(insn) << 2;
  };
  switch (Op(insn)) {
    case opc::kSpecial:
      switch (Funct(insn)) {
        case special::kSll:
          if (Rd(insn) == 0) {  // nop, ssnop, ehb, pause: no effect at all
            op.kind = OpKind::kNop;
          } else {
            r_type(OpKind::kSll);
          }
          break;
        case special::kSrl: r_type((Rs(insn) & 1) != 0 ? OpKind::kRotr : OpKind::kSrl); break;
        case special::kSra: r_type(OpKind::kSra); break;
        case special::kSllv: r_type(OpKind::kSllv); break;
        case special::kSrlv: r_type((Sa(insn) & 1) != 0 ? OpKind::kRotrv : OpKind::kSrlv); break;
        case special::kSrav: r_type(OpKind::kSrav); break;
        case special::kJr: op.kind = OpKind::kJr; break;
        case special::kJalr: r_type(OpKind::kJalr); break;
        case special::kMovz: r_type(OpKind::kMovz); break;
        case special::kMovn: r_type(OpKind::kMovn); break;
        case special::kSync: op.kind = OpKind::kNop; break;
        case special::kMfhi: r_type(OpKind::kMfhi); break;
        case special::kMthi: op.kind = OpKind::kMthi; break;
        case special::kMflo: r_type(OpKind::kMflo); break;
        case special::kMtlo: op.kind = OpKind::kMtlo; break;
        case special::kMult: op.kind = OpKind::kMult; break;
        case special::kMultu: op.kind = OpKind::kMultu; break;
        case special::kDiv: op.kind = OpKind::kDiv; break;
        case special::kDivu: op.kind = OpKind::kDivu; break;
        case special::kAdd: r_type(OpKind::kAdd); break;
        case special::kAddu: r_type(OpKind::kAddu); break;
        case special::kSub: r_type(OpKind::kSub); break;
        case special::kSubu: r_type(OpKind::kSubu); break;
        case special::kAnd: r_type(OpKind::kAnd); break;
        case special::kOr: r_type(OpKind::kOr); break;
        case special::kXor: r_type(OpKind::kXor); break;
        case special::kNor: r_type(OpKind::kNor); break;
        case special::kSlt: r_type(OpKind::kSlt); break;
        case special::kSltu: r_type(OpKind::kSltu); break;
        default: break;  // movci, syscall, break, traps, reserved
      }
      break;
    case opc::kRegimm:
      switch (Rt(insn)) {
        case regimm::kBltz: branch(OpKind::kBltz); break;
        case regimm::kBgez: branch(OpKind::kBgez); break;
        case regimm::kBltzl: branch(OpKind::kBltzl); break;
        case regimm::kBgezl: branch(OpKind::kBgezl); break;
        case regimm::kBltzal: branch(OpKind::kBltzal); break;
        case regimm::kBgezal: branch(OpKind::kBgezal); break;
        case regimm::kBltzall: branch(OpKind::kBltzall); break;
        case regimm::kBgezall: branch(OpKind::kBgezall); break;
        default: break;  // traps, synci, reserved
      }
      break;
    case opc::kJ:
      op.kind = OpKind::kJ;
      op.imm = (insn & 0x03ffffffu) << 2;
      break;
    case opc::kJal:
      op.kind = OpKind::kJal;
      op.imm = (insn & 0x03ffffffu) << 2;
      break;
    case opc::kBeq: branch(OpKind::kBeq); break;
    case opc::kBne: branch(OpKind::kBne); break;
    case opc::kBlez: branch(OpKind::kBlez); break;
    case opc::kBgtz: branch(OpKind::kBgtz); break;
    case opc::kBeql: branch(OpKind::kBeql); break;
    case opc::kBnel: branch(OpKind::kBnel); break;
    case opc::kBlezl: branch(OpKind::kBlezl); break;
    case opc::kBgtzl: branch(OpKind::kBgtzl); break;
    case opc::kAddi: i_type(OpKind::kAddi, SImm(insn)); break;
    case opc::kAddiu: i_type(OpKind::kAddiu, SImm(insn)); break;
    case opc::kSlti: i_type(OpKind::kSlti, SImm(insn)); break;
    case opc::kSltiu: i_type(OpKind::kSltiu, SImm(insn)); break;
    case opc::kAndi: i_type(OpKind::kAndi, insn & 0xffff); break;
    case opc::kOri: i_type(OpKind::kOri, insn & 0xffff); break;
    case opc::kXori: i_type(OpKind::kXori, insn & 0xffff); break;
    case opc::kLui: i_type(OpKind::kLui, (insn & 0xffff) << 16); break;
    case opc::kSpecial2:
      switch (Funct(insn)) {
        case special2::kMadd: op.kind = OpKind::kMadd; break;
        case special2::kMaddu: op.kind = OpKind::kMaddu; break;
        case special2::kMsub: op.kind = OpKind::kMsub; break;
        case special2::kMsubu: op.kind = OpKind::kMsubu; break;
        case special2::kMul: r_type(OpKind::kMul); break;
        case special2::kClz: r_type(OpKind::kClz); break;
        case special2::kClo: r_type(OpKind::kClo); break;
        default: break;
      }
      break;
    case opc::kSpecial3:
      switch (Funct(insn)) {
        case special3::kExt: {  // rd is msbd, sa is lsb
          const uint32_t size = Rd(insn) + 1;
          if (Sa(insn) + size > 32) {  // unpredictable: rt is left alone
            op.kind = OpKind::kNop;
            break;
          }
          i_type(OpKind::kExt, size == 32 ? 0xffffffffu : ((1u << size) - 1));
          break;
        }
        case special3::kIns: {  // rd is msb, sa is lsb
          if (Rd(insn) < Sa(insn)) {  // unpredictable: rt is left alone
            op.kind = OpKind::kNop;
            break;
          }
          const uint32_t size = Rd(insn) - Sa(insn) + 1;
          i_type(OpKind::kIns, (size == 32 ? 0xffffffffu : ((1u << size) - 1)) << Sa(insn));
          break;
        }
        case special3::kBshfl:
          switch (Sa(insn)) {
            case bshfl::kWsbh: r_type(OpKind::kWsbh); break;
            case bshfl::kSeb: r_type(OpKind::kSeb); break;
            case bshfl::kSeh: r_type(OpKind::kSeh); break;
            default: break;
          }
          break;
        default: break;  // rdhwr (it reads CP0 state), reserved
      }
      break;
    case opc::kLb: i_type(OpKind::kLb, SImm(insn)); break;
    case opc::kLh: i_type(OpKind::kLh, SImm(insn)); break;
    case opc::kLw: i_type(OpKind::kLw, SImm(insn)); break;
    case opc::kLbu: i_type(OpKind::kLbu, SImm(insn)); break;
    case opc::kLhu: i_type(OpKind::kLhu, SImm(insn)); break;
    case opc::kLwl: i_type(OpKind::kLwl, SImm(insn)); break;
    case opc::kLwr: i_type(OpKind::kLwr, SImm(insn)); break;
    case opc::kSb: i_type(OpKind::kSb, SImm(insn)); break;
    case opc::kSh: i_type(OpKind::kSh, SImm(insn)); break;
    case opc::kSw: i_type(OpKind::kSw, SImm(insn)); break;
    case opc::kSwl: i_type(OpKind::kSwl, SImm(insn)); break;
    case opc::kSwr: i_type(OpKind::kSwr, SImm(insn)); break;
    case opc::kPref: op.kind = OpKind::kNop; break;  // a hint
    case opc::kCop0:
      // Moves of CP0 registers that are only storage (reading one has no effect, and
      // writing one changes nothing else until an instruction the reference runs
      // uses it). Not Random and Count, which run on the cycles, nor EntryHi, Status,
      // Cause and Compare, which change the translation or interrupts.
      if (Rs(insn) == cop0::kMfc0 && Rd(insn) != kCp0Random && Rd(insn) != kCp0Count) {
        op.kind = OpKind::kMfc0;
        op.d = Dest(Rt(insn));
      } else if (Rs(insn) == cop0::kMtc0 &&
                 (Rd(insn) < kCp0Count || Rd(insn) > kCp0Cause)) {
        op.kind = OpKind::kMtc0;
      } else {
        break;
      }
      op.imm = Rd(insn);
      op.sa = static_cast<uint8_t>(insn & 7);
      break;
    default: break;  // the coprocessors, cache, ll/sc, reserved
  }
  return op;
}

uint32_t WordAt(const uint8_t* code, uint32_t index) {
  uint32_t w;
  std::memcpy(&w, code + 4 * index, 4);
  return w;
}

void Place(DecodedPage& page, const uint8_t* code, uint32_t index, const OpLabels& labels) {
  DecodedOp op = Decode(WordAt(code, index));
  // A branch's delay slot must be on the same page: on the last word it is left to
  // the reference interpreter.
  if (index == kWordsPerPage - 1 && IsBranch(op.kind)) op.kind = OpKind::kBail;
  const auto k = static_cast<uint8_t>(op.kind);
  op.handler = labels.normal[k];
  // A branch in a delay slot is UNPREDICTABLE; the reference interpreter's choice is
  // the one made.
  op.slot_handler = IsBranch(op.kind) ? labels.slot[static_cast<uint8_t>(OpKind::kBail)]
                                      : labels.slot[k];
  page.ops[index] = op;
}

// Op `index`'s block length from the next op's.
uint16_t BlockLength(const DecodedPage& page, uint32_t index) {
  const OpKind k = page.ops[index].kind;
  if (IsBranch(k)) return 2;          // itself and its delay slot
  if (k == OpKind::kBail) return 1;   // the engine stops there (counting it keeps the
                                      // bound an upper one)
  return static_cast<uint16_t>(page.ops[index + 1].block_len + 1);  // (kPageEnd's is 0)
}

bool EndsBlock(OpKind k) { return IsBranch(k) || k == OpKind::kBail; }

}  // namespace

void DecodePage(DecodedPage& page, const uint8_t* code, const OpLabels& labels) {
  for (uint32_t i = 0; i < kWordsPerPage; ++i) Place(page, code, i, labels);
  DecodedOp& end = page.ops[kWordsPerPage];
  end = DecodedOp{};
  end.kind = OpKind::kPageEnd;
  end.handler = labels.normal[static_cast<uint8_t>(OpKind::kPageEnd)];
  end.slot_handler = labels.slot[static_cast<uint8_t>(OpKind::kPageEnd)];
  for (int i = kWordsPerPage - 1; i >= 0; --i) {
    page.ops[i].block_len = BlockLength(page, static_cast<uint32_t>(i));
  }
}

void RedecodeWord(DecodedPage& page, const uint8_t* code, uint32_t index, const OpLabels& labels) {
  Place(page, code, index, labels);
  // Its own length, and those of the ops before it back to the previous op that ends
  // a block (whose length does not depend on what follows).
  for (int i = static_cast<int>(index); i >= 0; --i) {
    page.ops[i].block_len = BlockLength(page, static_cast<uint32_t>(i));
    if (i < static_cast<int>(index) && EndsBlock(page.ops[i].kind)) break;
  }
}

}  // namespace sigvisor::mips
