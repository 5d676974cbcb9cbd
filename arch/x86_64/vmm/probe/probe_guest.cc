#include "arch/x86_64/vmm/probe/probe_guest.h"

#include <time.h>

#include <cstddef>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/kvm_backend.h"
#include "arch/x86_64/vmm/machine/boot_layout.h"
#include "arch/x86_64/vmm/machine/long_mode.h"
#include "guest-kit/probe/probe_abi.h"
#include "vmm/base/clock.h"
#include "vmm/kvm/stats_fd.h"
#include "vmm/loader/elf_loader.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/vm_exit.h"
#include "vmm/run/watchdog.h"

// The calibration guest, embedded by //guest-kit/probe:calibrate_image.
extern "C" const uint8_t sigvisor_probe_calibrate_start[];
extern "C" const uint8_t sigvisor_probe_calibrate_end[];

namespace sigvisor::probe {
namespace {

// The guest edits the VMM's boot tables in place, at the addresses it was built with.
static_assert(PROBE_PARAMS_GPA == x86::kBootInfoGpa);
static_assert(PROBE_BOOT_PML4_GPA == x86::kPml4Gpa);
static_assert(PROBE_BOOT_PDPT_GPA == x86::kPdptGpa);
static_assert(PROBE_BOOT_PD_GPA == x86::kPdGpa);
static_assert(PROBE_BOOT_LOW_PT_GPA == x86::kLowPtGpa);
static_assert(PROBE_BOOT_TSS_GPA == x86::kBootTssGpa);

// The parameter block at PROBE_PARAMS_GPA.
struct ProbeParams {
  uint64_t case_id;
  uint64_t iterations;
  uint64_t bp_count;
  uint64_t db_count;
  uint64_t dr6;
};
static_assert(sizeof(ProbeParams) == PROBE_PARAM_SIZE);
static_assert(offsetof(ProbeParams, case_id) == PROBE_PARAM_CASE);
static_assert(offsetof(ProbeParams, iterations) == PROBE_PARAM_ITERATIONS);
static_assert(offsetof(ProbeParams, bp_count) == PROBE_PARAM_BP_COUNT);
static_assert(offsetof(ProbeParams, db_count) == PROBE_PARAM_DB_COUNT);
static_assert(offsetof(ProbeParams, dr6) == PROBE_PARAM_DR6);

// The image is a few pages at 1 MiB; 2 MiB is the least the boot tables accept
// with room for it, and a small memslot keeps VM creation cheap.
constexpr uint64_t kGuestMemoryBytes = 2ull << 20;

constexpr uint8_t kInt3 = 0xcc;

// CLOCK_MONOTONIC in nanoseconds: the clock of every probe timing.
absl::Status Context(const absl::Status& status, std::string_view what) {
  return absl::Status(status.code(), absl::StrFormat("%s: %s", what, status.message()));
}

// Everything one run owns. Members are destroyed in reverse order: the stats fd
// and vCPU go before the VM, the VM before the memory it maps.
struct ProbeVm {
  GuestMemory memory;
  KvmVm vm;
  KvmVcpu vcpu;
  // Absent on kernels without KVM_GET_STATS_FD: the stat deltas are then unknown,
  // and DetectHost falls back to timing (probe.cc).
  std::optional<StatsFd> stats;
};

absl::StatusOr<ProbeVm> BootVm(const KvmSystem& kvm, const ElfImage& image,
                               std::span<const kvm_cpuid_entry2> cpuid,
                               const ProbeParams& params) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kGuestMemoryBytes);
  if (!memory.ok()) return Context(memory.status(), "probe guest memory");
  if (absl::Status s = x86::WriteBootTables(*memory); !s.ok()) {
    return Context(s, "probe boot tables");
  }
  if (absl::Status s = LoadElfImage(image, *memory); !s.ok()) {
    return Context(s, "loading the probe guest");
  }
  if (absl::Status s = memory->WriteObject(PROBE_PARAMS_GPA, params); !s.ok()) {
    return Context(s, "probe parameter block");
  }
  absl::StatusOr<KvmVm> vm = kvm.CreateVm();
  if (!vm.ok()) return Context(vm.status(), "probe VM");
  if (absl::Status s = vm->SetMemoryRegion(0, 0, memory->size(), memory->host_base());
      !s.ok()) {
    return Context(s, "probe VM memory");
  }
  absl::StatusOr<KvmVcpu> vcpu = vm->CreateVcpu(0);
  if (!vcpu.ok()) return Context(vcpu.status(), "probe vCPU");
  if (absl::Status s = x86::SetUpVcpu(*vcpu, image.entry(), PROBE_PARAMS_GPA, cpuid); !s.ok()) {
    return Context(s, "probe vCPU boot state");
  }
  std::optional<StatsFd> stats;
  if (absl::StatusOr<StatsFd> opened = vcpu->OpenStats(); opened.ok()) stats = std::move(*opened);
  return ProbeVm{std::move(*memory), std::move(*vm), std::move(*vcpu), std::move(stats)};
}

// The exit loop of one case: handles each exit the case expects, times the loop
// between the markers and records anything else as the run's failure.
//
// The vCPU runs through the backend seam (typed VmExits, the shared watchdog's
// kick); `vcpu` is for the registers a report carries, which CpuLocation does not,
// and for the int3 skip (see OnInternalError).
class CaseRunner {
 public:
  CaseRunner(x86::KvmBackend& backend, KvmVcpu& vcpu, const GuestMemory& memory, CaseRun& result)
      : backend_(backend), vcpu_(vcpu), memory_(memory), result_(result) {}

  absl::Status Loop(absl::Duration timeout) {
    // Scoped to the loop: the watchdog's thread is joined before anyone reads the
    // result, and before the backend it kicks goes away.
    Watchdog watchdog(backend_, timeout);
    for (;;) {
      absl::StatusOr<VmExit> exit = backend_.Run();
      if (!exit.ok()) return exit.status();
      if (exit->kind == ExitKind::kInterrupted) {
        // Only the watchdog kicks this vCPU; a signal meant for someone else just
        // resumes the guest.
        if (!watchdog.fired()) continue;
        Fail(absl::StrFormat("no %s within %s (watchdog)",
                             begun_ ? "END marker" : "report or marker",
                             absl::FormatDuration(timeout)));
        return absl::OkStatus();
      }
      absl::StatusOr<bool> more = OnExit(*exit);
      if (!more.ok()) return more.status();
      if (!*more) return absl::OkStatus();
    }
  }

 private:
  // True to resume the vCPU, false when the run is over.
  absl::StatusOr<bool> OnExit(const VmExit& exit) {
    switch (exit.kind) {
      case ExitKind::kIo: return OnIo(exit);
      case ExitKind::kHalt:
        if (result_.case_id == PROBE_CASE_HLT && begun_) {
          ++result_.halts;
          return true;
        }
        return Fail("the guest halted without a report");
      case ExitKind::kInternalError: return OnInternalError(exit);
      case ExitKind::kDebug: return OnDebug(exit);
      case ExitKind::kShutdown: return Fail("the guest triple-faulted (KVM_EXIT_SHUTDOWN)");
      default:
        return Fail(absl::StrFormat("unexpected exit %s (KVM reason %d)", ExitKindName(exit.kind),
                                    exit.raw_reason));
    }
  }

  absl::StatusOr<bool> OnIo(const VmExit& exit) {
    const uint64_t port = exit.address;
    // Every report is one `outl %eax`; anything else is not from this guest.
    const bool ok_shape = exit.is_write && exit.size == sizeof(uint32_t) && exit.count == 1 &&
                          exit.data.size() == sizeof(uint32_t);
    if (!ok_shape) return Fail(absl::StrFormat("unexpected port access at port %#x", port));
    uint32_t value;
    std::memcpy(&value, exit.data.data(), sizeof(value));

    switch (port) {
      case PROBE_PORT_MARKER: return OnMarker(value);
      case PROBE_PORT_WORK:
        ++result_.work_outs;
        return true;
      case PROBE_PORT_VECTOR: {
        absl::StatusOr<kvm_regs> regs = vcpu_.GetRegs();
        if (!regs.ok()) return regs.status();
        result_.vector = VectorReport{static_cast<int>(value), regs->rbx, regs->rcx, regs->rsi};
        if (IsFactCase()) {
          result_.completed = true;
          return false;
        }
        return Fail(absl::StrFormat("exception %d (error code %#x) at rip %#x cs %#x", value,
                                    regs->rbx, regs->rcx, regs->rsi));
      }
      case PROBE_PORT_SYSCALL: {
        absl::StatusOr<CpuLocation> where = backend_.Locate();
        if (!where.ok()) return where.status();
        result_.syscall = SyscallReport{value, where->cpl};
        result_.completed = IsFactCase();
        return false;
      }
      default: return Fail(absl::StrFormat("out to unknown port %#x", port));
    }
  }

  absl::StatusOr<bool> OnMarker(uint32_t marker) {
    switch (marker) {
      case PROBE_MARK_BEGIN: {
        absl::StatusOr<StatsSnapshot> stats = backend_.ReadStats();
        if (!stats.ok()) return stats.status();
        stats_begin_ = std::move(*stats);
        begun_ = true;
        begin_ns_ = static_cast<int64_t>(MonotonicNs());  // after the stats read: time only the guest's loop
        return true;
      }
      case PROBE_MARK_END: {
        const int64_t end_ns = static_cast<int64_t>(MonotonicNs());
        if (!begun_) return Fail("END marker without BEGIN");
        absl::StatusOr<StatsSnapshot> stats = backend_.ReadStats();
        if (!stats.ok()) return stats.status();
        result_.loop_ns = end_ns - begin_ns_;
        result_.insn_emulation = Delta(*stats, "insn_emulation");
        result_.kvm_exits = Delta(*stats, "exits");
        result_.completed = true;
        return false;
      }
      case PROBE_MARK_BAD_PARAMS:
        return absl::InvalidArgumentError(absl::StrFormat(
            "the probe guest refused case %d with %d iterations", result_.case_id,
            result_.iterations));
      default: return Fail(absl::StrFormat("unknown marker %d", marker));
    }
  }

  // On PVM an int3 at CPL0 is an instruction the emulator refuses: skip it.
  //
  // This handler's own cost is part of the int3 round trip the probe reports, and a
  // register ioctl costs microseconds on PVM: hence one KVM_GET_REGS for both the
  // check and the skip, rather than Locate() (adds KVM_GET_SREGS) or AdvanceRip()
  // (reads the registers a second time).
  absl::StatusOr<bool> OnInternalError(const VmExit& exit) {
    const uint64_t suberror = exit.raw_detail;
    if (result_.case_id != PROBE_CASE_INT3 || !begun_) {
      return Fail(absl::StrFormat("KVM_EXIT_INTERNAL_ERROR (suberror %d)", suberror));
    }
    absl::StatusOr<kvm_regs> regs = vcpu_.GetRegs();
    if (!regs.ok()) return regs.status();
    // The boot tables identity-map the guest, so its rip is a guest-physical address.
    absl::StatusOr<uint8_t> opcode = memory_.ReadObject<uint8_t>(regs->rip);
    if (!opcode.ok() || *opcode != kInt3) {
      return Fail(absl::StrFormat("KVM_EXIT_INTERNAL_ERROR (suberror %d) not at an int3",
                                  suberror));
    }
    regs->rip += 1;
    if (absl::Status s = vcpu_.SetRegs(*regs); !s.ok()) return s;
    ++result_.int3_exits;
    return true;
  }

  // The VMM's DR7.GD caught a guest mov to DR7: skip the write, as a debugger that
  // owns the debug registers would.
  absl::StatusOr<bool> OnDebug(const VmExit& exit) {
    const uint64_t dr6 = exit.raw_detail;
    if (result_.case_id != PROBE_CASE_MOV_DR7 || !begun_) {
      return Fail(absl::StrFormat("KVM_EXIT_DEBUG (dr6 %#x)", dr6));
    }
    // exit.address is the pc of the trapping instruction (identity-mapped, as above).
    absl::StatusOr<uint16_t> opcode = memory_.ReadObject<uint16_t>(exit.address);
    if (!opcode.ok() || *opcode != 0x230f) {  // 0f 23: mov to a debug register
      return Fail(absl::StrFormat("KVM_EXIT_DEBUG (dr6 %#x) not at a mov to DR7", dr6));
    }
    if (absl::Status s = backend_.AdvanceRip(PROBE_MOV_DR_LEN); !s.ok()) return s;
    ++result_.debug_exits;
    return true;
  }

  bool IsFactCase() const {
    return result_.case_id == PROBE_CASE_SYSCALL || result_.case_id == PROBE_CASE_INT80;
  }

  std::optional<uint64_t> Delta(const StatsSnapshot& end, const std::string& name) const {
    auto before = stats_begin_.find(name);
    auto after = end.find(name);
    if (before == stats_begin_.end() || after == end.end()) return std::nullopt;
    return after->second - before->second;
  }

  // Ends the run with `why` and where the vCPU was. Returns false: "do not resume".
  bool Fail(const std::string& why) {
    result_.completed = false;
    result_.failure = why;
    if (absl::StatusOr<CpuLocation> where = backend_.Locate(); where.ok()) {
      absl::StrAppendFormat(&result_.failure, " (rip %#x, cpl %d)", where->pc, where->cpl);
    }
    return false;
  }

  x86::KvmBackend& backend_;
  KvmVcpu& vcpu_;
  const GuestMemory& memory_;
  CaseRun& result_;
  bool begun_ = false;
  int64_t begin_ns_ = 0;
  StatsSnapshot stats_begin_;
};

}  // namespace

absl::StatusOr<ProbeGuest> ProbeGuest::Create(const KvmSystem& kvm) {
  std::vector<uint8_t> bytes(sigvisor_probe_calibrate_start, sigvisor_probe_calibrate_end);
  absl::StatusOr<ElfImage> image = ElfImage::Parse(std::move(bytes));
  if (!image.ok()) return Context(image.status(), "the embedded probe guest");
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> cpuid = kvm.SupportedCpuid();
  if (!cpuid.ok()) return cpuid.status();
  return ProbeGuest(kvm, std::move(*image), std::move(*cpuid));
}

absl::StatusOr<CaseRun> ProbeGuest::Run(int case_id, uint64_t iterations,
                                        absl::Duration timeout) const {
  if (case_id < 0 || case_id >= PROBE_CASE_COUNT || iterations == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "probe case %d with %d iterations: cases are 0..%d, iterations >= 1", case_id,
        iterations, PROBE_CASE_COUNT - 1));
  }
  CaseRun result;
  result.case_id = case_id;
  result.iterations = iterations;

  const int64_t setup_start = MonotonicNs();
  ProbeParams params = {};
  params.case_id = static_cast<uint64_t>(case_id);
  params.iterations = iterations;
  absl::StatusOr<ProbeVm> vm = BootVm(*kvm_, image_, cpuid_, params);
  if (!vm.ok()) return vm.status();
  result.setup_ns = MonotonicNs() - setup_start;

  if (case_id == PROBE_CASE_MOV_DR7) {
    // The VMM owns the debug registers, with GD: on hardware KVM every guest DR
    // access then exits with KVM_EXIT_DEBUG.
    kvm_guest_debug debug = {};
    debug.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP;
    debug.arch.debugreg[7] = PROBE_DR7_GD;
    if (absl::Status s = vm->vcpu.SetGuestDebug(debug); !s.ok()) {
      result.failure = std::string(s.message());
      return result;
    }
  }

  // Declared after `vm`, so it (and the stats fd it now owns) goes first.
  x86::KvmBackend backend(vm->vcpu, std::move(vm->stats));
  CaseRunner runner(backend, vm->vcpu, vm->memory, result);
  if (absl::Status s = runner.Loop(timeout); !s.ok()) {
    return Context(s, absl::StrFormat("probe case %d", case_id));
  }

  absl::StatusOr<ProbeParams> after = vm->memory.ReadObject<ProbeParams>(PROBE_PARAMS_GPA);
  if (!after.ok()) return after.status();
  result.guest_bp_count = after->bp_count;
  result.guest_db_count = after->db_count;
  result.guest_dr6 = after->dr6;
  return result;
}

}  // namespace sigvisor::probe
