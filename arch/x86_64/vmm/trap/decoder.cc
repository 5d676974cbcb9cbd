#include "arch/x86_64/vmm/trap/decoder.h"

#include <capstone/capstone.h>

#include <string>

#include "absl/strings/str_format.h"

namespace sigvisor::trap {
namespace {

constexpr uint8_t kRexW = 0x08;
constexpr uint8_t kOperandSizePrefix = 0x66;

// Capstone's general registers -> (encoding number, width in bytes).
struct GprName {
  x86_reg reg;
  int number;
  uint8_t bytes;
};
constexpr GprName kGprs[] = {
    {X86_REG_RAX, 0, 8},  {X86_REG_EAX, 0, 4},   {X86_REG_AX, 0, 2},
    {X86_REG_RCX, 1, 8},  {X86_REG_ECX, 1, 4},   {X86_REG_CX, 1, 2},
    {X86_REG_RDX, 2, 8},  {X86_REG_EDX, 2, 4},   {X86_REG_DX, 2, 2},
    {X86_REG_RBX, 3, 8},  {X86_REG_EBX, 3, 4},   {X86_REG_BX, 3, 2},
    {X86_REG_RSP, 4, 8},  {X86_REG_ESP, 4, 4},   {X86_REG_SP, 4, 2},
    {X86_REG_RBP, 5, 8},  {X86_REG_EBP, 5, 4},   {X86_REG_BP, 5, 2},
    {X86_REG_RSI, 6, 8},  {X86_REG_ESI, 6, 4},   {X86_REG_SI, 6, 2},
    {X86_REG_RDI, 7, 8},  {X86_REG_EDI, 7, 4},   {X86_REG_DI, 7, 2},
    {X86_REG_R8, 8, 8},   {X86_REG_R8D, 8, 4},   {X86_REG_R8W, 8, 2},
    {X86_REG_R9, 9, 8},   {X86_REG_R9D, 9, 4},   {X86_REG_R9W, 9, 2},
    {X86_REG_R10, 10, 8}, {X86_REG_R10D, 10, 4}, {X86_REG_R10W, 10, 2},
    {X86_REG_R11, 11, 8}, {X86_REG_R11D, 11, 4}, {X86_REG_R11W, 11, 2},
    {X86_REG_R12, 12, 8}, {X86_REG_R12D, 12, 4}, {X86_REG_R12W, 12, 2},
    {X86_REG_R13, 13, 8}, {X86_REG_R13D, 13, 4}, {X86_REG_R13W, 13, 2},
    {X86_REG_R14, 14, 8}, {X86_REG_R14D, 14, 4}, {X86_REG_R14W, 14, 2},
    {X86_REG_R15, 15, 8}, {X86_REG_R15D, 15, 4}, {X86_REG_R15W, 15, 2},
};

const GprName* FindGpr(unsigned reg) {
  for (const GprName& gpr : kGprs) {
    if (gpr.reg == reg) return &gpr;
  }
  return nullptr;
}

std::optional<SegReg> ToSegReg(unsigned reg) {
  switch (reg) {
    case X86_REG_ES: return SegReg::kEs;
    case X86_REG_CS: return SegReg::kCs;
    case X86_REG_SS: return SegReg::kSs;
    case X86_REG_DS: return SegReg::kDs;
    case X86_REG_FS: return SegReg::kFs;
    case X86_REG_GS: return SegReg::kGs;
    default: return std::nullopt;
  }
}

int ToDr(const cs_x86_op& op) {
  if (op.type != X86_OP_REG || op.reg < X86_REG_DR0 || op.reg > X86_REG_DR15) return -1;
  return op.reg - X86_REG_DR0;
}

std::optional<SegReg> ToSegRegOperand(const cs_x86_op& op) {
  if (op.type != X86_OP_REG) return std::nullopt;
  return ToSegReg(op.reg);
}

// A register or a memory operand into `insn` (gpr + width, or mem); false if
// Capstone named a register this model has no place for.
bool TakeOperand(const cs_x86& x86, const cs_x86_op& op, TrapInsn& insn) {
  if (op.type == X86_OP_REG) {
    const GprName* gpr = FindGpr(op.reg);
    if (gpr == nullptr) return false;
    insn.gpr = gpr->number;
    insn.operand_bytes = gpr->bytes;
    return true;
  }
  if (op.type != X86_OP_MEM) return false;
  MemOperand mem;
  if (op.mem.base == X86_REG_RIP || op.mem.base == X86_REG_EIP) {
    mem.base = kRipBase;
  } else if (op.mem.base != X86_REG_INVALID) {
    const GprName* base = FindGpr(op.mem.base);
    if (base == nullptr) return false;
    mem.base = base->number;
  }
  if (op.mem.index != X86_REG_INVALID) {
    const GprName* index = FindGpr(op.mem.index);
    if (index == nullptr) return false;
    mem.index = index->number;
  }
  mem.scale = static_cast<uint8_t>(op.mem.scale);
  mem.disp = op.mem.disp;
  if (std::optional<SegReg> seg = ToSegReg(op.mem.segment);
      seg == SegReg::kFs || seg == SegReg::kGs) {
    mem.segment = seg;
  }
  mem.address_bytes = x86.addr_size;
  insn.mem = mem;
  return true;
}

// The trap instruction `insn` is, or nullopt for any other instruction.
std::optional<TrapInsn> ToTrapInsn(const cs_insn& insn) {
  const cs_x86& x86 = insn.detail->x86;
  TrapInsn trap;
  trap.length = static_cast<uint8_t>(insn.size);
  switch (insn.id) {
    case X86_INS_MOV: {
      if (x86.op_count != 2) return std::nullopt;
      if (int dr = ToDr(x86.operands[0]); dr >= 0) {
        trap.op = TrapOp::kMovToDr;
        trap.dr = dr;
        if (!TakeOperand(x86, x86.operands[1], trap)) return std::nullopt;
        return trap;
      }
      if (int dr = ToDr(x86.operands[1]); dr >= 0) {
        trap.op = TrapOp::kMovFromDr;
        trap.dr = dr;
        if (!TakeOperand(x86, x86.operands[0], trap)) return std::nullopt;
        return trap;
      }
      std::optional<SegReg> sreg = ToSegRegOperand(x86.operands[0]);
      if (!sreg) return std::nullopt;
      trap.op = TrapOp::kMovToSreg;
      trap.sreg = *sreg;
      if (!TakeOperand(x86, x86.operands[1], trap)) return std::nullopt;
      return trap;
    }
    case X86_INS_POP: {
      if (x86.op_count != 1) return std::nullopt;
      std::optional<SegReg> sreg = ToSegRegOperand(x86.operands[0]);
      if (!sreg) return std::nullopt;
      trap.op = TrapOp::kPopSreg;
      trap.sreg = *sreg;
      // 64-bit by default (and with REX.W); 16-bit with the operand-size prefix alone.
      trap.operand_bytes =
          (x86.rex & kRexW) == 0 && x86.prefix[2] == kOperandSizePrefix ? 2 : 8;
      return trap;
    }
    case X86_INS_LFS:
    case X86_INS_LGS:
    case X86_INS_LSS: {
      if (x86.op_count != 2 || x86.operands[1].type != X86_OP_MEM) return std::nullopt;
      trap.op = TrapOp::kLoadFarPointer;
      trap.sreg = insn.id == X86_INS_LFS   ? SegReg::kFs
                  : insn.id == X86_INS_LGS ? SegReg::kGs
                                           : SegReg::kSs;
      if (!TakeOperand(x86, x86.operands[0], trap) || !TakeOperand(x86, x86.operands[1], trap)) {
        return std::nullopt;
      }
      return trap;
    }
    case X86_INS_SWAPGS:
      trap.op = TrapOp::kSwapgs;
      trap.sreg = SegReg::kGs;
      return trap;
    case X86_INS_WRFSBASE:
    case X86_INS_WRGSBASE:
      if (x86.op_count != 1) return std::nullopt;
      trap.op = insn.id == X86_INS_WRFSBASE ? TrapOp::kWrFsBase : TrapOp::kWrGsBase;
      trap.sreg = insn.id == X86_INS_WRFSBASE ? SegReg::kFs : SegReg::kGs;
      if (!TakeOperand(x86, x86.operands[0], trap)) return std::nullopt;
      return trap;
    case X86_INS_WRMSR:
      trap.op = TrapOp::kWrmsr;
      return trap;
    default: return std::nullopt;
  }
}

struct InsnDeleter {
  void operator()(cs_insn* insn) const { cs_free(insn, 1); }
};
using InsnPtr = std::unique_ptr<cs_insn, InsnDeleter>;

}  // namespace

// Two Capstone handles: Intel syntax with details for the operands (their order is
// destination first), AT&T syntax for text that reads like the guest's sources.
struct Decoder::Handles {
  csh detail = 0;
  csh att = 0;
  ~Handles() {
    if (detail != 0) cs_close(&detail);
    if (att != 0) cs_close(&att);
  }
};

absl::StatusOr<Decoder> Decoder::Create() {
  auto handles = std::make_unique<Handles>();
  if (cs_err err = cs_open(CS_ARCH_X86, CS_MODE_64, &handles->detail); err != CS_ERR_OK) {
    return absl::InternalError(absl::StrFormat("Capstone: %s", cs_strerror(err)));
  }
  cs_option(handles->detail, CS_OPT_DETAIL, CS_OPT_ON);
  if (cs_err err = cs_open(CS_ARCH_X86, CS_MODE_64, &handles->att); err != CS_ERR_OK) {
    return absl::InternalError(absl::StrFormat("Capstone: %s", cs_strerror(err)));
  }
  cs_option(handles->att, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
  return Decoder(std::move(handles));
}

Decoder::Decoder(std::unique_ptr<Handles> handles) : handles_(std::move(handles)) {}
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;
Decoder::~Decoder() = default;

std::optional<DecodedInsn> Decoder::Decode(std::span<const uint8_t> bytes, uint64_t address) const {
  InsnPtr insn(cs_malloc(handles_->detail));
  const uint8_t* code = bytes.data();
  size_t size = bytes.size();
  uint64_t at = address;
  if (!cs_disasm_iter(handles_->detail, &code, &size, &at, insn.get())) return std::nullopt;
  DecodedInsn decoded;
  decoded.address = address;
  decoded.length = static_cast<uint8_t>(insn->size);
  decoded.trap = ToTrapInsn(*insn);
  InsnPtr text(cs_malloc(handles_->att));
  code = bytes.data();
  size = bytes.size();
  at = address;
  if (cs_disasm_iter(handles_->att, &code, &size, &at, text.get())) {
    decoded.text = text->op_str[0] ? absl::StrFormat("%s %s", text->mnemonic, text->op_str)
                                   : std::string(text->mnemonic);
  }
  return decoded;
}

std::optional<MemoryOperand> Decoder::MemoryOperandOf(std::span<const uint8_t> bytes,
                                                      uint64_t address) const {
  InsnPtr insn(cs_malloc(handles_->detail));
  const uint8_t* code = bytes.data();
  size_t size = bytes.size();
  uint64_t at = address;
  if (!cs_disasm_iter(handles_->detail, &code, &size, &at, insn.get())) return std::nullopt;
  const cs_x86& x86 = insn->detail->x86;
  std::optional<MemoryOperand> found;
  for (int i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type != X86_OP_MEM) continue;
    MemoryOperand mem;
    mem.insn_length = static_cast<uint8_t>(insn->size);
    mem.write = (op.access & CS_AC_WRITE) != 0;
    mem.scale = op.mem.scale;
    mem.displacement = op.mem.disp;
    if (op.mem.base == X86_REG_RIP) {
      mem.rip_relative = true;
    } else if (op.mem.base != X86_REG_INVALID) {
      const GprName* base = FindGpr(op.mem.base);
      if (base == nullptr || base->bytes != 8) continue;
      mem.base = base->number;
    }
    if (op.mem.index != X86_REG_INVALID) {
      const GprName* index = FindGpr(op.mem.index);
      if (index == nullptr || index->bytes != 8) continue;
      mem.index = index->number;
    }
    if (mem.write) return mem;
    if (!found) found = mem;
  }
  return found;
}

void Decoder::Sweep(std::span<const uint8_t> bytes, uint64_t address,
                    const std::function<void(const DecodedInsn&)>& visit) const {
  InsnPtr insn(cs_malloc(handles_->detail));
  const uint8_t* code = bytes.data();
  size_t size = bytes.size();
  uint64_t at = address;
  while (size > 0) {
    const uint8_t* start = code;
    const uint64_t start_at = at;
    if (!cs_disasm_iter(handles_->detail, &code, &size, &at, insn.get())) {
      ++code;
      --size;
      ++at;
      continue;
    }
    if (!ToTrapInsn(*insn)) continue;
    // Decode it once more for the text: sites are few.
    if (std::optional<DecodedInsn> site =
            Decode({start, static_cast<size_t>(code - start)}, start_at)) {
      visit(*site);
    }
  }
}

}  // namespace sigvisor::trap
