#include "arch/x86_64/vmm/trap/emulator.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"

namespace sigvisor::trap {
namespace {

constexpr uint64_t kCr4De = 1u << 3;
constexpr uint64_t kCr4FsGsBase = 1u << 16;
constexpr uint64_t kRflagsRf = 1u << 16;
constexpr uint64_t kPageSize = 4096;
constexpr uint32_t kPfWrite = 1u << 1;  // #PF error code: the access was a write

// A step of an emulation: a host error, a fault, or (an empty optional) success.
using Step = absl::StatusOr<std::optional<Fault>>;
Step Done() { return std::optional<Fault>(); }
Step Raise(uint8_t vector) { return std::optional<Fault>(Fault{vector, std::nullopt, 0}); }
Step Raise(uint8_t vector, uint32_t error_code) {
  return std::optional<Fault>(Fault{vector, error_code, 0});
}

bool Canonical(uint64_t address) {
  return static_cast<uint64_t>(static_cast<int64_t>(address << 16) >> 16) == address;
}

uint64_t LittleEndian(const uint8_t* bytes, size_t n) {
  uint64_t value = 0;
  std::memcpy(&value, bytes, n);  // x86 host: little-endian like the guest
  return value;
}

uint64_t ReadGpr(kvm_regs& regs, int number, uint8_t bytes) {
  const uint64_t value = Gpr(regs, number);
  return bytes >= 8 ? value : value & ((1ull << (8 * bytes)) - 1);
}

// A write of `bytes` to a general register: 32-bit writes zero the upper half,
// 16-bit writes keep the rest.
void WriteGpr(kvm_regs& regs, int number, uint8_t bytes, uint64_t value) {
  __u64& reg = Gpr(regs, number);
  if (bytes == 8) reg = value;
  else if (bytes == 4) reg = value & 0xffffffff;
  else reg = (reg & ~0xffffull) | (value & 0xffff);
}

kvm_segment& SegmentOf(kvm_sregs& sregs, SegReg sreg) {
  switch (sreg) {
    case SegReg::kEs: return sregs.es;
    case SegReg::kCs: return sregs.cs;
    case SegReg::kSs: return sregs.ss;
    case SegReg::kDs: return sregs.ds;
    case SegReg::kFs: return sregs.fs;
    case SegReg::kGs: return sregs.gs;
  }
  return sregs.ds;
}

// One emulation's working state: a copy of the general registers (stored back only
// on success) and the segment registers, fetched on first use.
class Emulator {
 public:
  Emulator(const TrapInsn& insn, uint64_t site, const kvm_regs& regs, TrapCpu& cpu, DrShadow& dr)
      : insn_(insn), next_rip_(site + insn.length), regs_(regs), cpu_(cpu), dr_(dr) {}

  Step Run();
  const kvm_regs& regs() const { return regs_; }
  absl::Status Commit() { return sregs_dirty_ ? cpu_.SetSregs(*sregs_) : absl::OkStatus(); }

 private:
  absl::StatusOr<kvm_sregs*> Sregs();
  Step DebugRegisterAccess();
  Step LoadSegment(SegReg sreg, uint16_t selector);
  Step ReadMemory(uint64_t gva, std::span<uint8_t> out, bool stack);
  Step WriteMemory(uint64_t gva, std::span<const uint8_t> data);
  absl::StatusOr<uint64_t> EffectiveAddress(const MemOperand& mem);
  Step WriteBaseMsr(uint32_t msr, uint64_t value);

  const TrapInsn& insn_;
  const uint64_t next_rip_;
  kvm_regs regs_;
  TrapCpu& cpu_;
  DrShadow& dr_;
  std::optional<kvm_sregs> sregs_;
  bool sregs_dirty_ = false;
};

absl::StatusOr<kvm_sregs*> Emulator::Sregs() {
  if (!sregs_) {
    absl::StatusOr<kvm_sregs> sregs = cpu_.GetSregs();
    if (!sregs.ok()) return sregs.status();
    sregs_ = *sregs;
  }
  return &*sregs_;
}

Step Emulator::ReadMemory(uint64_t gva, std::span<uint8_t> out, bool stack) {
  if (!Canonical(gva) || !Canonical(gva + out.size() - 1)) {
    return Raise(stack ? kVectorSs : kVectorGp, 0);
  }
  absl::StatusOr<kvm_sregs*> sregs = Sregs();
  if (!sregs.ok()) return sregs.status();
  // Page by page, so that a #PF names the first byte that is not mapped.
  for (size_t done = 0; done < out.size();) {
    const uint64_t at = gva + done;
    const size_t chunk = std::min<size_t>(out.size() - done, kPageSize - at % kPageSize);
    if (!cpu_.ReadVirtual((*sregs)->cr3, at, out.subspan(done, chunk))) {
      return std::optional<Fault>(Fault{kVectorPf, 0, at});
    }
    done += chunk;
  }
  return Done();
}

Step Emulator::WriteMemory(uint64_t gva, std::span<const uint8_t> data) {
  absl::StatusOr<kvm_sregs*> sregs = Sregs();
  if (!sregs.ok()) return sregs.status();
  if (!cpu_.WriteVirtual((*sregs)->cr3, gva, data)) {
    return std::optional<Fault>(Fault{kVectorPf, kPfWrite, gva});
  }
  return Done();
}

absl::StatusOr<uint64_t> Emulator::EffectiveAddress(const MemOperand& mem) {
  uint64_t address = static_cast<uint64_t>(mem.disp);
  if (mem.base == kRipBase) address += next_rip_;
  else if (mem.base >= 0) address += Gpr(regs_, mem.base);
  if (mem.index >= 0) address += Gpr(regs_, mem.index) * mem.scale;
  if (mem.address_bytes == 4) address &= 0xffffffff;
  if (mem.segment) {  // FS and GS keep their bases in 64-bit mode
    absl::StatusOr<kvm_sregs*> sregs = Sregs();
    if (!sregs.ok()) return sregs.status();
    address += SegmentOf(**sregs, *mem.segment).base;
  }
  return address;
}

Step Emulator::DebugRegisterAccess() {
  int n = insn_.dr;
  if (n >= 8) return Raise(kVectorUd);  // DR8-DR15 (REX.R) do not exist
  if (n == 4 || n == 5) {               // aliases of DR6/DR7 unless CR4.DE
    absl::StatusOr<kvm_sregs*> sregs = Sregs();
    if (!sregs.ok()) return sregs.status();
    if ((*sregs)->cr4 & kCr4De) return Raise(kVectorUd);
    n += 2;
  }
  absl::StatusOr<bool> general_detect = dr_.GeneralDetect(cpu_);
  if (!general_detect.ok()) return general_detect.status();
  if (*general_detect) {
    dr_.RaiseGeneralDetect();
    return Raise(kVectorDb);
  }
  if (insn_.op == TrapOp::kMovToDr) {
    const uint64_t value = Gpr(regs_, insn_.gpr);
    if (n >= 6 && (value >> 32) != 0) return Raise(kVectorGp, 0);
    if (absl::Status s = dr_.Write(n, value, cpu_); !s.ok()) return s;
    return Done();
  }
  absl::StatusOr<uint64_t> value = dr_.Read(n, cpu_);
  if (!value.ok()) return value.status();
  Gpr(regs_, insn_.gpr) = *value;
  return Done();
}

Step Emulator::LoadSegment(SegReg sreg, uint16_t selector) {
  absl::StatusOr<kvm_sregs*> got = Sregs();
  if (!got.ok()) return got.status();
  kvm_sregs& sregs = **got;
  const int cpl = sregs.cs.dpl;
  const int rpl = selector & 3;
  const uint32_t error_code = selector & 0xfffc;
  kvm_segment loaded = {};
  loaded.selector = selector;

  if ((selector & ~3) == 0) {  // the null selector
    if (sreg == SegReg::kSs) {
      if (rpl != cpl) return Raise(kVectorGp, 0);
      // What KVM loads for a null SS in 64-bit mode: a flat writable data segment
      // whose DPL carries the CPL.
      loaded.type = 3;
      loaded.present = 1;
      loaded.s = 1;
      loaded.dpl = cpl;
      loaded.db = 1;
      loaded.g = 1;
      loaded.limit = 0xfff;
    } else {
      loaded.unusable = 1;  // base 0, as KVM (and Intel CPUs) leave it
    }
    SegmentOf(sregs, sreg) = loaded;
    sregs_dirty_ = true;
    return Done();
  }

  const bool in_ldt = selector & 4;
  const kvm_segment ldt = sregs.ldt;
  if (in_ldt && (ldt.unusable || !ldt.present)) return Raise(kVectorGp, error_code);
  const uint64_t table = in_ldt ? ldt.base : sregs.gdt.base;
  const uint64_t limit = in_ldt ? ldt.limit : sregs.gdt.limit;
  if ((selector | 7u) > limit) return Raise(kVectorGp, error_code);
  const uint64_t address = table + (selector & ~7u);
  uint8_t bytes[8];
  if (Step read = ReadMemory(address, bytes, false); !read.ok() || read->has_value()) return read;
  const uint64_t desc = LittleEndian(bytes, 8);
  const uint8_t type = (desc >> 40) & 0xf;
  const bool code_or_data = (desc >> 44) & 1;
  const int dpl = (desc >> 45) & 3;
  const bool present = (desc >> 47) & 1;

  if (!code_or_data) return Raise(kVectorGp, error_code);
  if (sreg == SegReg::kSs) {
    // A writable data segment at exactly the CPL.
    if (rpl != cpl || (type & 0xa) != 0x2 || dpl != cpl) return Raise(kVectorGp, error_code);
  } else {
    // Data or readable code; and for data and non-conforming code, RPL and CPL <= DPL.
    const bool unreadable_code = (type & 0xa) == 0x8;
    const bool conforming_code = (type & 0xc) == 0xc;
    if (unreadable_code || (!conforming_code && (rpl > dpl || cpl > dpl))) {
      return Raise(kVectorGp, error_code);
    }
  }
  if (!present) return Raise(sreg == SegReg::kSs ? kVectorSs : kVectorNp, error_code);

  uint8_t access_byte = static_cast<uint8_t>(desc >> 40);
  if ((access_byte & 1) == 0) {  // the CPU marks the descriptor accessed
    access_byte |= 1;
    if (Step write = WriteMemory(address + 5, {&access_byte, 1}); !write.ok() || write->has_value()) {
      return write;
    }
  }
  const uint32_t raw_limit = static_cast<uint32_t>((desc & 0xffff) | ((desc >> 32) & 0xf0000));
  loaded.base = ((desc >> 16) & 0xffffff) | (((desc >> 56) & 0xff) << 24);
  loaded.g = (desc >> 55) & 1;
  loaded.limit = loaded.g ? (raw_limit << 12) | 0xfff : raw_limit;
  loaded.type = access_byte & 0xf;
  loaded.s = 1;
  loaded.dpl = dpl;
  loaded.present = 1;
  loaded.avl = (desc >> 52) & 1;
  loaded.l = (desc >> 53) & 1;
  loaded.db = (desc >> 54) & 1;
  SegmentOf(sregs, sreg) = loaded;
  sregs_dirty_ = true;
  return Done();
}

Step Emulator::WriteBaseMsr(uint32_t msr, uint64_t value) {
  if (!Canonical(value)) return Raise(kVectorGp, 0);
  absl::StatusOr<bool> set = cpu_.SetMsr(msr, value);
  if (!set.ok()) return set.status();
  if (!*set) {
    return absl::InternalError(absl::StrFormat("KVM_SET_MSRS refused segment base MSR %#x", msr));
  }
  return Done();
}

Step Emulator::Run() {
  switch (insn_.op) {
    case TrapOp::kMovToDr:
    case TrapOp::kMovFromDr: return DebugRegisterAccess();

    case TrapOp::kMovToSreg: {
      if (insn_.sreg == SegReg::kCs) return Raise(kVectorUd);
      uint16_t selector;
      if (insn_.mem) {
        absl::StatusOr<uint64_t> address = EffectiveAddress(*insn_.mem);
        if (!address.ok()) return address.status();
        uint8_t bytes[2];
        if (Step read = ReadMemory(*address, bytes, false); !read.ok() || read->has_value()) {
          return read;
        }
        selector = static_cast<uint16_t>(LittleEndian(bytes, 2));
      } else {
        selector = static_cast<uint16_t>(ReadGpr(regs_, insn_.gpr, 2));
      }
      return LoadSegment(insn_.sreg, selector);
    }

    case TrapOp::kPopSreg: {
      uint8_t bytes[8];
      std::span<uint8_t> slot(bytes, insn_.operand_bytes);
      if (Step read = ReadMemory(regs_.rsp, slot, true); !read.ok() || read->has_value()) {
        return read;
      }
      Step load = LoadSegment(insn_.sreg, static_cast<uint16_t>(LittleEndian(bytes, 2)));
      if (!load.ok() || load->has_value()) return load;
      regs_.rsp += insn_.operand_bytes;
      return Done();
    }

    case TrapOp::kLoadFarPointer: {
      if (!insn_.mem) return Raise(kVectorUd);
      absl::StatusOr<uint64_t> address = EffectiveAddress(*insn_.mem);
      if (!address.ok()) return address.status();
      uint8_t bytes[10];
      std::span<uint8_t> pointer(bytes, insn_.operand_bytes + 2u);
      if (Step read = ReadMemory(*address, pointer, false); !read.ok() || read->has_value()) {
        return read;
      }
      const uint64_t offset = LittleEndian(bytes, insn_.operand_bytes);
      const auto selector = static_cast<uint16_t>(LittleEndian(bytes + insn_.operand_bytes, 2));
      Step load = LoadSegment(insn_.sreg, selector);
      if (!load.ok() || load->has_value()) return load;
      WriteGpr(regs_, insn_.gpr, insn_.operand_bytes, offset);
      return Done();
    }

    case TrapOp::kSwapgs: {
      absl::StatusOr<std::optional<uint64_t>> gs = cpu_.GetMsr(kMsrGsBase);
      if (!gs.ok()) return gs.status();
      absl::StatusOr<std::optional<uint64_t>> kernel_gs = cpu_.GetMsr(kMsrKernelGsBase);
      if (!kernel_gs.ok()) return kernel_gs.status();
      if (!*gs || !*kernel_gs) return absl::InternalError("KVM_GET_MSRS refused the GS base MSRs");
      if (Step s = WriteBaseMsr(kMsrGsBase, **kernel_gs); !s.ok() || s->has_value()) return s;
      return WriteBaseMsr(kMsrKernelGsBase, **gs);
    }

    case TrapOp::kWrFsBase:
    case TrapOp::kWrGsBase: {
      absl::StatusOr<kvm_sregs*> sregs = Sregs();
      if (!sregs.ok()) return sregs.status();
      if (((*sregs)->cr4 & kCr4FsGsBase) == 0) return Raise(kVectorUd);
      const uint64_t value = ReadGpr(regs_, insn_.gpr, insn_.operand_bytes);
      return WriteBaseMsr(insn_.op == TrapOp::kWrFsBase ? kMsrFsBase : kMsrGsBase, value);
    }

    case TrapOp::kWrmsr: {
      const auto msr = static_cast<uint32_t>(regs_.rcx);
      const uint64_t value = (regs_.rdx << 32) | (regs_.rax & 0xffffffff);
      if (IsSegmentBaseMsr(msr)) return WriteBaseMsr(msr, value);
      absl::StatusOr<bool> set = cpu_.SetMsr(msr, value);
      if (!set.ok()) return set.status();
      return *set ? Done() : Raise(kVectorGp, 0);  // an MSR the vCPU does not have
    }
  }
  return absl::InternalError("unknown trap instruction");
}

}  // namespace

__u64& Gpr(kvm_regs& regs, int number) {
  switch (number) {
    case 0: return regs.rax;
    case 1: return regs.rcx;
    case 2: return regs.rdx;
    case 3: return regs.rbx;
    case 4: return regs.rsp;
    case 5: return regs.rbp;
    case 6: return regs.rsi;
    case 7: return regs.rdi;
    case 8: return regs.r8;
    case 9: return regs.r9;
    case 10: return regs.r10;
    case 11: return regs.r11;
    case 12: return regs.r12;
    case 13: return regs.r13;
    case 14: return regs.r14;
    default: return regs.r15;
  }
}

uint64_t EffectiveAddress(const MemoryOperand& mem, const kvm_regs& regs) {
  kvm_regs copy = regs;  // Gpr names a register of a mutable state
  uint64_t address = static_cast<uint64_t>(mem.displacement);
  if (mem.base >= 0) address += Gpr(copy, mem.base);
  if (mem.index >= 0) address += Gpr(copy, mem.index) * static_cast<uint64_t>(mem.scale);
  if (mem.rip_relative) address += regs.rip + mem.insn_length;
  return address;
}

absl::StatusOr<Emulation> Emulate(const TrapInsn& insn, uint64_t site, kvm_regs& regs,
                                  TrapCpu& cpu, DrShadow& dr) {
  Emulation result;
  result.kind = insn.Kind(static_cast<uint32_t>(regs.rcx));
  Emulator emulator(insn, site, regs, cpu, dr);
  Step step = emulator.Run();
  if (!step.ok()) return step.status();
  if (step->has_value()) {
    result.fault = **step;
    regs.rip = site;
    return result;
  }
  if (absl::Status s = emulator.Commit(); !s.ok()) return s;
  regs = emulator.regs();
  regs.rip = site + insn.length;
  regs.rflags &= ~kRflagsRf;  // an instruction that completes clears RF
  return result;
}

}  // namespace sigvisor::trap
