#include "arch/x86_64/vmm/cpu/kvm_backend.h"

#include <signal.h>

#include <csignal>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/interrupt_state.h"
#include "arch/x86_64/vmm/cpu/local_apic.h"
#include "arch/x86_64/vmm/cpu/vcpu_state.h"

namespace sigvisor::x86 {
namespace {

// The kick signal only has to interrupt KVM_RUN (which then returns EINTR); its
// handler does nothing. Installing the same no-op handler again is harmless.
int KickSignal() { return SIGRTMIN + 1; }

void InstallKickHandler() {
  struct sigaction action = {};
  action.sa_handler = [](int) {};
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: KVM_RUN must return EINTR
  sigaction(KickSignal(), &action, nullptr);
}

VmExit ExitFromRun(kvm_run* run, size_t run_size) {
  VmExit exit;
  exit.raw_reason = run->exit_reason;
  switch (run->exit_reason) {
    case KVM_EXIT_IO: {
      exit.kind = ExitKind::kIo;
      exit.is_write = run->io.direction == KVM_EXIT_IO_OUT;
      exit.address = run->io.port;
      exit.size = run->io.size;
      exit.count = run->io.count;
      const uint64_t bytes = uint64_t{run->io.size} * run->io.count;
      // KVM's offsets are trusted, but checked all the same: never index past the page.
      if (run->io.data_offset <= run_size && bytes <= run_size - run->io.data_offset) {
        exit.data = {reinterpret_cast<uint8_t*>(run) + run->io.data_offset, bytes};
      }
      break;
    }
    case KVM_EXIT_MMIO:
      exit.kind = ExitKind::kMmio;
      exit.is_write = run->mmio.is_write;
      exit.address = run->mmio.phys_addr;
      exit.size = std::min<uint32_t>(run->mmio.len, sizeof(run->mmio.data));
      exit.data = {run->mmio.data, exit.size};
      break;
    case KVM_EXIT_HLT: exit.kind = ExitKind::kHalt; break;
    case KVM_EXIT_SHUTDOWN: exit.kind = ExitKind::kShutdown; break;
    case KVM_EXIT_INTERNAL_ERROR:
      exit.kind = ExitKind::kInternalError;
      exit.raw_detail = run->internal.suberror;
      break;
    case KVM_EXIT_FAIL_ENTRY:
      exit.kind = ExitKind::kFailEntry;
      exit.raw_detail = run->fail_entry.hardware_entry_failure_reason;
      break;
    case KVM_EXIT_DEBUG:
      exit.kind = ExitKind::kDebug;
      exit.raw_detail = run->debug.arch.dr6;
      exit.address = run->debug.arch.pc;
      break;
    case KVM_EXIT_INTR: exit.kind = ExitKind::kInterrupted; break;
    case KVM_EXIT_IRQ_WINDOW_OPEN: exit.kind = ExitKind::kIrqWindowOpen; break;
    case KVM_EXIT_X86_RDMSR:
    case KVM_EXIT_X86_WRMSR:
      // An MSR KVM handed to the VMM (KVM_CAP_X86_USER_SPACE_MSR): EDX:EAX as 8 bytes,
      // a read's answer written back into msr.data before the next KVM_RUN.
      exit.kind = ExitKind::kMsr;
      exit.is_write = run->exit_reason == KVM_EXIT_X86_WRMSR;
      exit.address = run->msr.index;
      exit.size = sizeof(run->msr.data);
      exit.data = {reinterpret_cast<uint8_t*>(&run->msr.data), sizeof(run->msr.data)};
      exit.raw_detail = run->msr.reason;
      break;
    case KVM_EXIT_SYSTEM_EVENT:
      exit.kind = ExitKind::kSystemEvent;
      exit.raw_detail = run->system_event.type;
      break;
    default: exit.kind = ExitKind::kUnknown; break;
  }
  return exit;
}

}  // namespace

KvmBackend::KvmBackend(KvmVcpu& vcpu, std::optional<StatsFd> stats, VcpuState* state)
    : vcpu_(vcpu), stats_(std::move(stats)), state_(state) {
  InstallKickHandler();
}

void KvmBackend::UseVmmLapic(LocalApics& apics, int index) {
  apics_ = &apics;
  apic_index_ = index;
  apics.SetKick(index, [this] { Kick(); });
}

absl::Status KvmBackend::InjectFromVmmLapic() {
  kvm_run* run = vcpu_.run();
  std::optional<uint8_t> vector = apics_->Deliverable(apic_index_);
  if (!vector) {
    run->request_interrupt_window = 0;
    return absl::OkStatus();
  }
  // KVM_INTERRUPT queues the vector for the next entry whatever the guest's state, so
  // it is given only when the last exit said the guest takes one (IF set, no sti or
  // mov-ss shadow); otherwise KVM exits at the window and the next Run() gives it.
  if (!run->ready_for_interrupt_injection || !run->if_flag) {
    run->request_interrupt_window = 1;
    return absl::OkStatus();
  }
  if (absl::Status s = vcpu_.Interrupt(*vector); !s.ok()) return s;
  apics_->Accept(apic_index_, *vector);
  // Only a vector that outranks the one now in service can follow before its EOI.
  run->request_interrupt_window = apics_->Deliverable(apic_index_) ? 1 : 0;
  return absl::OkStatus();
}

absl::StatusOr<VmExit> KvmBackend::Run() {
  run_thread_.store(pthread_self(), std::memory_order_release);
  if (apics_ != nullptr) {
    if (halted_) {
      kvm_run* run = vcpu_.run();
      const bool woken = apics_->WaitForInterrupt(apic_index_, [run] {
        return __atomic_load_n(&run->immediate_exit, __ATOMIC_ACQUIRE) != 0;
      });
      if (!woken) {
        // Kicked while halted (the watchdog, the machine's stop): as a KVM_RUN that a
        // kick interrupted, without entering.
        __atomic_store_n(&run->immediate_exit, 0, __ATOMIC_RELEASE);
        VmExit kicked;
        kicked.kind = ExitKind::kInterrupted;
        kicked.raw_reason = KVM_EXIT_INTR;
        return kicked;
      }
      halted_ = false;
    }
    if (absl::Status s = InjectFromVmmLapic(); !s.ok()) return s;
  }
  if (state_ != nullptr) {
    if (absl::Status s = state_->PrepareEntry(); !s.ok()) return s;
  }
  if (absl::Status s = vcpu_.Run(); !s.ok()) return s;
  if (state_ != nullptr) state_->NoteExit();
  if (vcpu_.run()->exit_reason == KVM_EXIT_INTR) {
    // A kick is consumed by the exit it caused: the next KVM_RUN enters the guest
    // (the watchdog keeps kicking while it wants the run to end).
    __atomic_store_n(&vcpu_.run()->immediate_exit, 0, __ATOMIC_RELEASE);
  }
  VmExit exit = ExitFromRun(vcpu_.run(), vcpu_.run_size());
  if (apics_ != nullptr && exit.kind == ExitKind::kHalt) {
    halted_ = true;
    exit.halt_waits_for_interrupt = true;
  }
  return exit;
}

void KvmBackend::Kick() {
  // immediate_exit covers a kick that lands just before KVM_RUN; the signal covers
  // one that lands inside it.
  __atomic_store_n(&vcpu_.run()->immediate_exit, 1, __ATOMIC_RELEASE);
  pthread_t thread = run_thread_.load(std::memory_order_acquire);
  if (thread != 0) pthread_kill(thread, KickSignal());
  // A halted vCPU waits outside KVM_RUN, for its APIC: the kick must reach it there.
  if (apics_ != nullptr) apics_->Wake(apic_index_);
}

absl::StatusOr<StatsSnapshot> KvmBackend::ReadStats() {
  if (!stats_) return StatsSnapshot{};
  return stats_->Read();
}

absl::StatusOr<CpuLocation> KvmBackend::Locate() {
  absl::StatusOr<kvm_regs> regs = vcpu_.GetRegs();
  if (!regs.ok()) return regs.status();
  absl::StatusOr<kvm_sregs> sregs = vcpu_.GetSregs();
  if (!sregs.ok()) return sregs.status();
  CpuLocation where;
  where.pc = regs->rip;
  where.cpl = sregs->cs.dpl;
  where.page_table_root = sregs->cr3;
  where.paging = (sregs->cr0 & (1ull << 31)) != 0;
  // The architectural reset state: CS 0xf000 with base 0xffff0000, RIP 0xfff0.
  where.reset_by_host = sregs->cs.selector == 0xf000 && sregs->cs.base == 0xffff0000 &&
                        regs->rip == 0xfff0;
  if (const kvm_run* run = vcpu_.run(); run->exit_reason == KVM_EXIT_IO) {
    // DX is where in/out/ins/outs take a port from, when not from an imm8.
    where.port_io = CpuLocation::PortIo{
        .port = run->io.port,
        .size = run->io.size,
        .out = run->io.direction == KVM_EXIT_IO_OUT,
        .port_in_register = static_cast<uint16_t>(regs->rdx) == run->io.port};
  }
  where.registers = absl::StrFormat(
      "rax=%#x rbx=%#x rcx=%#x rdx=%#x rsi=%#x rdi=%#x rsp=%#x rbp=%#x rflags=%#x cs=%#x "
      "cr2=%#x cr3=%#x",
      regs->rax, regs->rbx, regs->rcx, regs->rdx, regs->rsi, regs->rdi, regs->rsp, regs->rbp,
      regs->rflags, sregs->cs.selector, sregs->cr2, sregs->cr3);
  return where;
}

std::string KvmBackend::DescribeInterrupts() {
  constexpr uint64_t kRflagsIf = 1u << 9;
  absl::StatusOr<kvm_regs> regs = vcpu_.GetRegs();
  if (!regs.ok()) return {};
  // What KVM will not give (no irqchip: no LAPIC) is left out.
  InterruptState interrupts{.interrupts_enabled = (regs->rflags & kRflagsIf) != 0};
  if (apics_ != nullptr) {
    // KVM knows neither: the halt and the APIC are the VMM's.
    interrupts.mp_state = halted_ ? KVM_MP_STATE_HALTED : KVM_MP_STATE_RUNNABLE;
    interrupts.lapic = InterruptState::LapicVectorSets{
        .pending = apics_->Pending(apic_index_), .in_service = apics_->InService(apic_index_)};
    return DescribeInterruptState(interrupts);
  }
  if (absl::StatusOr<kvm_mp_state> mp = vcpu_.GetMpState(); mp.ok()) {
    interrupts.mp_state = mp->mp_state;
  }
  if (absl::StatusOr<kvm_lapic_state> lapic = vcpu_.GetLapic(); lapic.ok()) {
    interrupts.lapic = VectorSetsOf(*lapic);
  }
  return DescribeInterruptState(interrupts);
}

absl::Status KvmBackend::AdvanceRip(uint64_t bytes) {
  absl::StatusOr<kvm_regs> regs = vcpu_.GetRegs();
  if (!regs.ok()) return regs.status();
  regs->rip += bytes;
  return vcpu_.SetRegs(*regs);
}

}  // namespace sigvisor::x86
