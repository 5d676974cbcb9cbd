#include "arch/mips/vmm/mips_system.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cost_model.h"

namespace sigvisor::mips {

absl::StatusOr<std::unique_ptr<MipsSystem>> MipsSystem::Create(
    std::span<uint8_t> ram, int cores, HostDeviceQuery host_device, uint64_t quantum,
    std::optional<uint64_t> vdso_address) {
  if (cores < 1 || cores > kMaxCores) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d MIPS cores: give 1 to %d", cores, kMaxCores));
  }
  if (quantum == 0) return absl::InvalidArgumentError("a scheduling quantum of 0 instructions");
  if (vdso_address) {
    // The page must shadow nothing: not RAM, not the IPI device, not a host device;
    // and kseg0/kseg1 (the first 512 MiB) must reach it, as the guest kernel's do.
    const uint64_t at = *vdso_address;
    const uint64_t end = at + VdsoPage::kBytes;
    bool clash = at % VdsoPage::kBytes != 0 || at < ram.size() || end > 0x20000000u ||
                 (at < kIpiBase + kIpiSize && kIpiBase < end);
    for (uint64_t pa = at; !clash && pa < end; ++pa) clash = host_device && host_device(pa);
    if (clash) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a vdso page at physical %#x: it must be page-aligned, above RAM (%#x bytes), below "
          "512 MiB and away from every device",
          at, ram.size()));
    }
  }
  std::unique_ptr<MipsSystem> system(new MipsSystem(std::move(host_device), quantum));
  system->ipi_ = std::make_unique<IpiDevice>(cores);
  if (vdso_address) {
    system->vdso_ = std::make_unique<VdsoPage>();
    system->vdso_address_ = *vdso_address;
  }
  for (int i = 0; i < cores; ++i) {
    system->cores_.push_back(std::make_unique<MipsCore>(i, ram, *system));
    // One page for all: every core reads the same host bytes at the same address.
    if (system->vdso_) system->cores_.back()->MapVdso(*vdso_address, system->vdso_->host());
  }
  return system;
}

CoreCounters MipsSystem::Total() const {
  CoreCounters total;
  for (const auto& core : cores_) total += core->counters();
  return total;
}

void MipsSystem::NextCore() {
  // Another core may store to a word this one has linked: break the link, so its sc
  // fails and retries rather than succeeding over the other core's store. Alone, no
  // other core can: breaking it there would only make an operation's cost depend on
  // where the quantum happened to end (an sc retried now and then).
  if (core_count() > 1) cores_[static_cast<size_t>(current_)]->BreakLink();
  current_ = (current_ + 1) % core_count();
  quantum_left_ = quantum_;
}

bool MipsSystem::SkipIdleTime() {
  uint64_t wait = UINT64_MAX;
  for (const auto& core : cores_) {
    if (core->TimerCanWake()) wait = std::min(wait, core->CyclesUntilTimer());
  }
  if (wait == UINT64_MAX) return false;
  for (const auto& core : cores_) core->Idle(wait);
  return true;
}

SystemEvent MipsSystem::Run(uint64_t budget) {
  while (budget > 0) {
    MipsCore& core = *cores_[static_cast<size_t>(current_)];
    const uint64_t slice = std::min(quantum_left_, budget);
    uint64_t steps = 0;
    const StopReason why = core.Run(slice, steps);
    quantum_left_ -= std::min(steps, quantum_left_);
    budget -= std::min(steps, budget);
    if (why == StopReason::kMmio) return {SystemStop::kMmio, current_};
    if (why == StopReason::kWaiting) {
      // The rest of its quantum passes idle; a waiting core wakes only at its next turn.
      if (steps == 0) {
        core.Idle(quantum_left_);
        budget -= std::min(budget, uint64_t{1});  // progress, even when all cores sleep
        if (++idle_slots_in_a_row_ >= core_count() && !core.InterruptTakeable()) {
          bool anyone_awake = false;
          for (const auto& c : cores_) anyone_awake |= !c->waiting() || c->InterruptTakeable();
          if (!anyone_awake && !SkipIdleTime()) return {SystemStop::kHalted, current_};
          idle_slots_in_a_row_ = 0;
        }
      } else {
        core.Idle(quantum_left_);
        idle_slots_in_a_row_ = 0;
      }
      NextCore();
      continue;
    }
    idle_slots_in_a_row_ = 0;
    if (quantum_left_ == 0 || why == StopReason::kYield) NextCore();
  }
  return {SystemStop::kBudget, current_};
}

void MipsSystem::WatchTask(uint32_t asid, std::optional<uint32_t> syscall) {
  task_marks_ = {};
  for (auto& core : cores_) core->WatchTask(MipsCore::TaskWatch{asid, syscall});
}

void MipsSystem::StopWatchingTask() {
  for (auto& core : cores_) core->WatchTask(std::nullopt);
}

uint64_t MipsSystem::TaskUserInstructions() const {
  uint64_t sum = 0;
  for (const auto& core : cores_) sum += core->watched_user_instructions();
  return sum;
}

void MipsSystem::OnWatchedSyscall(int core) {
  const uint64_t now = TaskUserInstructions();
  if (task_marks_.entries == 0) {
    task_marks_.core = core;
    task_marks_.first = now;
  } else if (core != task_marks_.core) {
    task_marks_.one_core = false;
  }
  task_marks_.last = now;
  ++task_marks_.entries;
}

void MipsSystem::SetIpiLines(uint32_t cores, bool raised) {
  for (int i = 0; i < core_count(); ++i) {
    if ((cores & (1u << i)) != 0)
      cores_[static_cast<size_t>(i)]->SetInterruptLine(kCauseIP2, raised);
  }
}

PhysicalAccess MipsSystem::Access(int core, uint64_t paddr, uint32_t size, bool is_write,
                                  uint32_t& value) {
  if (paddr >= kIpiBase && paddr < kIpiBase + kIpiSize) {
    if (!is_write) {
      value = ipi_->Read(paddr - kIpiBase);
      return PhysicalAccess::kDone;
    }
    const IpiDevice::Effect effect = ipi_->Write(paddr - kIpiBase, value);
    SetIpiLines(effect.acknowledged, false);
    if (effect.sent != 0) {
      MipsCore& sender = *cores_[static_cast<size_t>(core)];
      const uint64_t sent = static_cast<uint64_t>(std::popcount(effect.sent));
      sender.mutable_counters().ipis_sent += sent;
      sender.Idle(sent * CostModel::kCyclesPerIpiSent);  // Count runs on modelled cycles
      SetIpiLines(effect.sent, true);
      // The targets run next, rather than after the rest of the sender's quantum:
      // a sender that spins until they acknowledge then spins for their handling
      // time only, not for an artefact of the schedule.
      if ((effect.sent & ~(1u << core)) != 0) sender.RequestYield();
    }
    return PhysicalAccess::kDone;
  }
  if (host_device_ && host_device_(paddr)) return PhysicalAccess::kExit;
  return PhysicalAccess::kBusError;
}

}  // namespace sigvisor::mips
