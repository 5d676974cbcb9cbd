#include "arch/x86_64/vmm/trace/kernel_entry_stops.h"

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/idt_gates.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kLargePage = 2ull << 20;
constexpr uint64_t kPageDirectorySpan = 1ull << 30;  // one page directory: the first GiB
constexpr uint64_t kAddressMask = 0x000ffffffffff000ull;
constexpr uint64_t kPresent = 1, kWritable = 2, kLargePageBit = 0x80;
constexpr uint64_t kGateSize = kIdtGateBytes;
constexpr int kVectorUd = 6;

constexpr uint64_t kSyscallSlot = 256 * kGateSize;  // past the IDT's 256 vectors

}  // namespace

absl::StatusOr<KernelEntryStops> KernelEntryStops::Install(
    VcpuState& cpu, const kvm_sregs& sregs, uint64_t ram_bytes,
    std::function<absl::Status()> flush_shadow_mmu) {
  KernelEntryStops stops(cpu, std::move(flush_shadow_mmu));
  stops.cr3_ = sregs.cr3 & kAddressMask;
  stops.window_ = (ram_bytes + kLargePage - 1) / kLargePage * kLargePage;
  if (stops.window_ + kLargePage > kPageDirectorySpan) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "following the kernel on this host needs 2 MiB of guest-physical address space "
        "above RAM in the first GiB; with %d MiB of RAM there is none (use a smaller "
        "--memory)",
        ram_bytes >> 20));
  }

  // The page directory that maps the first GiB: PML4[0] -> PDPT[0] -> PD.
  GuestMemory& memory = cpu.memory();
  absl::StatusOr<uint64_t> pml4e = memory.ReadObject<uint64_t>(stops.cr3_);
  if (!pml4e.ok()) return pml4e.status();
  absl::StatusOr<uint64_t> pdpte = memory.ReadObject<uint64_t>(*pml4e & kAddressMask);
  if (!pdpte.ok()) return pdpte.status();
  if (!(*pml4e & kPresent) || !(*pdpte & kPresent) || (*pdpte & kLargePageBit)) {
    return absl::FailedPreconditionError(
        "the guest's page tables do not map the first GiB through a page directory");
  }
  stops.pde_address_ = (*pdpte & kAddressMask) + stops.window_ / kLargePage * 8;
  absl::StatusOr<uint64_t> pde = memory.ReadObject<uint64_t>(stops.pde_address_);
  if (!pde.ok()) return pde.status();
  if (*pde & kPresent) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the guest maps %#x, where the kernel-entry window would go", stops.window_));
  }

  // The gates, read before anything is written.
  for (const IdtGate& gate : ReadIdtGates(cpu, sregs)) {
    stops.gates_[gate.vector] = {gate.address, gate.handler};
  }
  if (stops.gates_.empty()) {
    return absl::FailedPreconditionError("the guest's IDT has no present gate to follow");
  }

  // Supervisor-only, executable: a fetch there reaches the missing guest memory.
  if (absl::Status s = memory.WriteObject<uint64_t>(
          stops.pde_address_, stops.window_ | kPresent | kWritable | kLargePageBit);
      !s.ok()) {
    return s;
  }
  stops.installed_ = true;
  for (const auto& [vector, gate] : stops.gates_) {
    if (absl::Status s = stops.WriteGateOffset(gate.first, stops.window_ + vector * kGateSize);
        !s.ok()) {
      (void)stops.Remove();
      return s;
    }
  }
  absl::StatusOr<uint64_t> lstar = cpu.vcpu().GetMsr(kMsrLstar);
  if (!lstar.ok()) {
    (void)stops.Remove();
    return lstar.status();
  }
  if (*lstar != 0) {
    const kvm_msr_entry redirected = {.index = kMsrLstar, .data = stops.window_ + kSyscallSlot};
    if (absl::Status s = cpu.vcpu().SetMsrs({&redirected, 1}); !s.ok()) {
      (void)stops.Remove();
      return s;
    }
    stops.lstar_ = *lstar;
  }
  if (stops.flush_shadow_mmu_) {
    if (absl::Status s = stops.flush_shadow_mmu_(); !s.ok()) {
      (void)stops.Remove();
      return s;
    }
  }
  return stops;
}

absl::Status KernelEntryStops::WriteGateOffset(uint64_t gate_address, uint64_t offset) {
  const uint8_t low[2] = {static_cast<uint8_t>(offset), static_cast<uint8_t>(offset >> 8)};
  uint8_t high[6];
  for (int i = 0; i < 6; ++i) high[i] = static_cast<uint8_t>(offset >> (16 + 8 * i));
  if (!cpu_->WriteVirtual(cr3_, gate_address, low) ||
      !cpu_->WriteVirtual(cr3_, gate_address + 6, high)) {
    return absl::InternalError(
        absl::StrFormat("could not write the IDT gate at %#x", gate_address));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int>> KernelEntryStops::Take() {
  if (!installed_) return std::nullopt;
  absl::StatusOr<kvm_regs> regs = cpu_->GetRegs();
  if (!regs.ok()) return regs.status();
  const uint64_t offset = regs->rip - window_;
  if (regs->rip < window_ || offset > kSyscallSlot || offset % kGateSize != 0) {
    return std::nullopt;
  }
  int vector = kSyscallEntry;
  uint64_t handler = lstar_;
  if (offset == kSyscallSlot) {
    if (lstar_ == 0) return std::nullopt;
  } else {
    auto gate = gates_.find(static_cast<int>(offset / kGateSize));
    if (gate == gates_.end()) return std::nullopt;
    vector = gate->first;
    handler = gate->second.second;
  }

  // KVM queues a #UD with every emulation failure it reports; this one is ours.
  absl::StatusOr<kvm_vcpu_events> events = cpu_->vcpu().GetEvents();
  if (!events.ok()) return events.status();
  if ((events->exception.injected || events->exception.pending) &&
      events->exception.nr == kVectorUd) {
    events->exception.injected = 0;
    events->exception.pending = 0;
    if (absl::Status s = cpu_->vcpu().SetEvents(*events); !s.ok()) return s;
  }
  regs->rip = handler;
  if (absl::Status s = cpu_->SetRegs(*regs); !s.ok()) return s;
  return vector;
}

absl::Status KernelEntryStops::Remove() {
  if (!installed_) return absl::OkStatus();
  installed_ = false;
  absl::Status status = absl::OkStatus();
  for (const auto& [vector, gate] : gates_) {
    if (absl::Status s = WriteGateOffset(gate.first, gate.second); !s.ok() && status.ok()) {
      status = s;
    }
  }
  if (lstar_ != 0) {
    const kvm_msr_entry restored = {.index = kMsrLstar, .data = lstar_};
    if (absl::Status s = cpu_->vcpu().SetMsrs({&restored, 1}); !s.ok() && status.ok()) status = s;
  }
  if (absl::Status s = cpu_->memory().WriteObject<uint64_t>(pde_address_, 0);
      !s.ok() && status.ok()) {
    status = s;
  }
  if (flush_shadow_mmu_) {
    if (absl::Status s = flush_shadow_mmu_(); !s.ok() && status.ok()) status = s;
  }
  return status;
}

}  // namespace sigvisor::x86
