#include "arch/x86_64/vmm/trap/trap_engine.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/trap/emulator.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/abi/white_box.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kDr6StatusBits = 0xe00f;  // B0-B3, BD, BS, BT
constexpr size_t kMaxInsnBytes = 15;
constexpr uint64_t kPageSize = 4096;
constexpr uint64_t kPvLoadPort = SIGVISOR_HC_PORT_BASE + SIGVISOR_HC_PV_DEBUGREG_LOAD;

// RTM and bus-lock detection decide which DR6 bits the guest can clear.
trap::Dr6Layout Dr6LayoutFor(std::span<const kvm_cpuid_entry2> cpuid) {
  for (const kvm_cpuid_entry2& entry : cpuid) {
    if (entry.function == 7 && entry.index == 0) {
      return trap::Dr6Layout::ForCpu((entry.ebx >> 11) & 1, (entry.ecx >> 24) & 1);
    }
  }
  return trap::Dr6Layout::ForCpu(false, false);
}

Interception Failure(Outcome outcome, std::string diagnosis) {
  return Interception::RunFailed(outcome, std::move(diagnosis));
}

Interception HostFailure(const absl::Status& status, std::string_view doing) {
  return Failure(Outcome::kHostError,
                 absl::StrFormat("trap engine: %s: %s", doing, status.message()));
}

std::string FaultName(const trap::Fault& fault) {
  switch (fault.vector) {
    case trap::kVectorDb: return "#DB";
    case trap::kVectorUd: return "#UD";
    case trap::kVectorNp: return "#NP";
    case trap::kVectorSs: return "#SS";
    case trap::kVectorGp: return "#GP";
    case trap::kVectorPf: return "#PF";
    default: return absl::StrFormat("vector %d", fault.vector);
  }
}

}  // namespace

TrapEngine::TrapEngine(TrapMechanism mechanism, const ElfImage& image, GuestMemory& memory,
                       KvmVcpu& vcpu, bool sync_regs, GuestDebug* guest_debug,
                       trap::Decoder decoder, trap::SiteTable sites, trap::DrShadow shadow)
    : mechanism_(mechanism),
      image_(image),
      guest_debug_(guest_debug),
      cpu_(vcpu, memory, sync_regs, guest_debug),
      decoder_(std::move(decoder)),
      sites_(std::move(sites)),
      shadow_(std::move(shadow)),
      pv_load_detail_(
          absl::StrFormat("port %#x out (hypercall pv_debugreg_load)", kPvLoadPort)) {}

std::string_view TrapCoverage(TrapMechanism mechanism) {
  switch (mechanism) {
    case TrapMechanism::kOff: return "nothing";
    case TrapMechanism::kPatch:
      return "every debug-register move (dr_write, dr_read), segment-register load and "
             "swapgs (segment_load) and wrmsr (segment_load or msr_write)";
    case TrapMechanism::kHwGd:
      return "debug-register moves through DR7.GD; segment loads, swapgs and wrmsr patched";
    case TrapMechanism::kPv:
      return "the kernel's debug-register writes (dr_write: DR0-3, DR6, DR7) and segment-base "
             "wrmsrs (segment_load), counted by the kernel in the pv page; not swapgs, "
             "segment-register loads or debug-register reads, which run natively";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<TrapEngine>> TrapEngine::Install(
    TrapMechanism mechanism, const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
    std::span<const kvm_cpuid_entry2> cpuid, bool sync_regs, GuestDebug* guest_debug,
    uint64_t pv_page_gpa, bool restored) {
  if (mechanism == TrapMechanism::kOff) {
    return absl::InvalidArgumentError("no trap engine for --trap=off");
  }
  if (mechanism == TrapMechanism::kPv) {
    return InstallPv(image, memory, vcpu, cpuid, sync_regs, guest_debug, pv_page_gpa, restored);
  }
  absl::StatusOr<trap::Decoder> decoder = trap::Decoder::Create();
  if (!decoder.ok()) return decoder.status();
  absl::StatusOr<trap::SiteTable> sites = trap::ScanImage(image, *decoder);
  if (!sites.ok()) return sites.status();
  const bool hw_gd = mechanism == TrapMechanism::kHwGd;
  if (absl::Status s = trap::PatchSites(*sites, memory, /*include_debug_register_sites=*/!hw_gd);
      !s.ok()) {
    return s;
  }
  KvmTrapCpu probe(vcpu, memory, sync_regs);
  absl::StatusOr<trap::DebugRegs> hardware = probe.GetDebugRegs();
  if (!hardware.ok()) return hardware.status();
  std::unique_ptr<TrapEngine> engine(new TrapEngine(
      mechanism, image, memory, vcpu, sync_regs, guest_debug, *std::move(decoder),
      *std::move(sites),
      trap::DrShadow(*hardware, Dr6LayoutFor(cpuid))));
  if (absl::Status s = engine->cpu_.Start(); !s.ok()) return s;
  if (hw_gd) {
    if (absl::Status s = engine->cpu_.EnterGuestDebug(*hardware); !s.ok()) return s;
  }
  return engine;
}

// --trap=pv: no site is patched; the page is laid out before the first guest
// instruction, with the registers as the hardware holds them.
absl::StatusOr<std::unique_ptr<TrapEngine>> TrapEngine::InstallPv(
    const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
    std::span<const kvm_cpuid_entry2> cpuid, bool sync_regs, GuestDebug* guest_debug,
    uint64_t pv_page_gpa, bool restored) {
  if (!image.symbols().Find(white_box::kPvSetDebugreg)) {
    return absl::FailedPreconditionError(
        "--trap=pv needs a kernel built with debugreg=pv, which writes its debug registers "
        "into the VMM's page (this image has no pv_set_debugreg); boot one with e.g. "
        "--variant debugreg=pv or --variant dr7=lazy,debugreg=pv (`sigvisor images` lists them)");
  }
  absl::StatusOr<trap::Decoder> decoder = trap::Decoder::Create();
  if (!decoder.ok()) return decoder.status();
  KvmTrapCpu probe(vcpu, memory, sync_regs);
  absl::StatusOr<trap::DebugRegs> hardware = probe.GetDebugRegs();
  if (!hardware.ok()) return hardware.status();
  absl::StatusOr<trap::PvPage> page = restored
                                          ? trap::PvPage::Adopt(memory, pv_page_gpa)
                                          : trap::PvPage::Create(memory, pv_page_gpa, *hardware);
  if (!page.ok()) return page.status();
  std::unique_ptr<TrapEngine> engine(new TrapEngine(
      TrapMechanism::kPv, image, memory, vcpu, sync_regs, guest_debug, *std::move(decoder),
      trap::SiteTable(), trap::DrShadow(*hardware, Dr6LayoutFor(cpuid))));
  // No cpu_.Start(): nothing is emulated, so no exit needs the registers synced.
  engine->pv_.emplace(*std::move(page));
  return engine;
}

Interception TrapEngine::Intercept(const VmExit& exit) {
  if (mechanism_ == TrapMechanism::kPv) {
    if (exit.kind == ExitKind::kIo && exit.address == kPvLoadPort) {
      return OnPvLoad(exit);
    }
    return {};  // nothing is patched: every other exit is the session's
  }
  switch (exit.kind) {
    case ExitKind::kHalt: return OnHalt();
    case ExitKind::kDebug:
      if (mechanism_ == TrapMechanism::kHwGd) return OnDebug(exit);
      return {};
    default: return {};
  }
}

Interception TrapEngine::OnHalt() {
  absl::StatusOr<kvm_regs> regs = cpu_.GetRegs();
  if (!regs.ok()) return HostFailure(regs.status(), "reading registers at a hlt");
  // KVM reports the hlt with RIP already past it.
  const trap::TrapSite* site = sites_.Find(regs->rip - 1);
  if (site == nullptr) {
    return Failure(Outcome::kUnexpectedExit,
                   absl::StrFormat("hlt at %#x (%s) is not one of the image's %d trap sites: the "
                                   "guest halted with nothing to wake it",
                                   regs->rip - 1, image_.symbols().Symbolize(regs->rip - 1),
                                   sites_.size()));
  }
  return Emulate(site->insn, site->address, site->symbol, site->text, *regs);
}

Interception TrapEngine::OnPvLoad(const VmExit& exit) {
  if (!exit.is_write || exit.size != 4 || exit.count != 1 || exit.data.size() < 4) {
    return Failure(Outcome::kUnexpectedExit,
                   absl::StrFormat("hypercall pv_debugreg_load: a %d-byte %s of port %#x; the "
                                   "ABI takes one 4-byte write of the pv page's address",
                                   exit.size, exit.is_write ? "write" : "read", kPvLoadPort));
  }
  const uint64_t argument = uint64_t{exit.data[0]} | uint64_t{exit.data[1]} << 8 |
                            uint64_t{exit.data[2]} << 16 | uint64_t{exit.data[3]} << 24;
  absl::StatusOr<uint64_t> loads = pv_->Load(argument, shadow_, cpu_);
  if (!loads.ok()) {
    if (loads.status().code() == absl::StatusCode::kInvalidArgument) {
      return Failure(Outcome::kUnexpectedExit,
                     absl::StrCat("hypercall ", loads.status().message()));
    }
    return HostFailure(loads.status(), "loading the debug registers for the pv page");
  }
  Interception result;
  result.verdict = RunVerdict::kContinue;
  result.detail = pv_load_detail_;
  result.dr_loads = *loads;
  result.trap_hypercalls = 1;
  return result;
}

std::vector<TrapBatch> TrapEngine::CollectTraps() {
  std::vector<TrapBatch> batches;
  if (!pv_) return batches;
  for (const trap::PvTraps& traps : pv_->Collect()) {
    // The guest records its call's return address: the instruction after the call.
    std::string site = traps.address == 0 ? std::string("(no site recorded)")
                                          : image_.symbols().Symbolize(traps.address);
    batches.push_back({std::string(traps.kind), traps.address, std::move(site), traps.count});
  }
  return batches;
}

Interception TrapEngine::OnDebug(const VmExit& exit) {
  const uint64_t dr6 = exit.raw_detail;
  if (dr6 & trap::kDr6Bd) {  // general detection: a guest DR access at RIP
    absl::StatusOr<kvm_regs> regs = cpu_.GetRegs();
    if (!regs.ok()) return HostFailure(regs.status(), "reading registers at a debug exit");
    absl::StatusOr<kvm_sregs> sregs = cpu_.GetSregs();
    if (!sregs.ok()) return HostFailure(sregs.status(), "reading segments at a debug exit");
    // The instruction's bytes, which may end at the last mapped page.
    std::vector<uint8_t> bytes(kMaxInsnBytes);
    const size_t first = std::min<size_t>(kMaxInsnBytes, kPageSize - regs->rip % kPageSize);
    if (!cpu_.ReadVirtual(sregs->cr3, regs->rip, {bytes.data(), first})) {
      bytes.clear();
    } else if (first < kMaxInsnBytes &&
               !cpu_.ReadVirtual(sregs->cr3, regs->rip + first,
                                 {bytes.data() + first, kMaxInsnBytes - first})) {
      bytes.resize(first);
    }
    std::optional<trap::DecodedInsn> decoded = decoder_.Decode(bytes, regs->rip);
    if (!decoded || !decoded->trap || (decoded->trap->op != trap::TrapOp::kMovToDr &&
                                       decoded->trap->op != trap::TrapOp::kMovFromDr)) {
      return Failure(Outcome::kUnexpectedExit,
                     absl::StrFormat("debug exit (DR6.BD) at %#x (%s), which is not a "
                                     "debug-register move (%s)",
                                     regs->rip, image_.symbols().Symbolize(regs->rip),
                                     decoded ? decoded->text : "undecodable"));
    }
    return Emulate(*decoded->trap, regs->rip, LabelAt(regs->rip), decoded->text, *regs);
  }
  if (guest_debug_ != nullptr &&
      (guest_debug_->IsVmmStep(dr6) || guest_debug_->VmmBreakpointHit(dr6))) {
    return {};  // a debugger's or tracer's (they come first; this is a fallback)
  }
  if (dr6 & kDr6StatusBits) {  // the guest's own breakpoint or single step: its #DB
    shadow_.DebugExceptionDelivered(dr6);
    if (absl::Status s = cpu_.InjectFault(trap::Fault{trap::kVectorDb, std::nullopt, 0}); !s.ok()) {
      return HostFailure(s, "reflecting a #DB to the guest");
    }
    Interception result;
    result.verdict = RunVerdict::kContinue;
    result.detail = "guest #DB reflected";
    return result;
  }
  return {};
}

Interception TrapEngine::Emulate(const trap::TrapInsn& insn, uint64_t address,
                                 std::string_view label, std::string_view text,
                                 kvm_regs& regs) {
  const uint64_t loads_before = shadow_.loads();
  absl::StatusOr<trap::Emulation> done = trap::Emulate(insn, address, regs, cpu_, shadow_);
  if (!done.ok()) return HostFailure(done.status(), absl::StrFormat("emulating %s at %s", text, label));
  if (absl::Status s = cpu_.SetRegs(regs); !s.ok()) {
    return HostFailure(s, "writing registers after a trap");
  }
  Interception result;
  result.verdict = RunVerdict::kContinue;
  if (done->fault) {
    if (absl::Status s = cpu_.InjectFault(*done->fault); !s.ok()) {
      return HostFailure(s, "injecting the fault of a trapped instruction");
    }
  }
  result.detail = DetailFor(done->kind, done->fault);
  // TrapKindName's names are literals.
  result.trap = TrapRecord{trap::TrapKindName(done->kind), address, label};
  result.dr_loads = shadow_.loads() - loads_before;
  return result;
}

std::string_view TrapEngine::DetailFor(trap::TrapKind kind,
                                       const std::optional<trap::Fault>& fault) {
  auto [it, inserted] = details_.try_emplace({kind, fault ? int{fault->vector} : -1});
  if (inserted) {
    it->second.append("trap ").append(trap::TrapKindName(kind));
    if (fault) it->second.append(" raising ").append(FaultName(*fault));
  }
  return it->second;
}

std::string_view TrapEngine::LabelAt(uint64_t rip) {
  auto [it, inserted] = labels_.try_emplace(rip);
  if (inserted) it->second = image_.symbols().Symbolize(rip);
  return it->second;
}

}  // namespace sigvisor::x86
