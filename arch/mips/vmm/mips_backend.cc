#include "arch/mips/vmm/mips_backend.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace sigvisor::mips {
namespace {

void AddCounters(StatsSnapshot& stats, const std::string& prefix, const CoreCounters& c) {
  stats[prefix + "instructions"] = c.instructions;
  stats[prefix + "exceptions"] = c.exceptions;
  stats[prefix + "tlb_refills"] = c.tlb_refills;
  stats[prefix + "tlb_invalid"] = c.tlb_invalid;
  stats[prefix + "tlb_modified"] = c.tlb_modified;
  stats[prefix + "syscalls"] = c.syscalls;
  stats[prefix + "interrupts"] = c.interrupts;
  stats[prefix + "icache_lines_flushed"] = c.icache_lines_flushed;
  stats[prefix + "ipis_sent"] = c.ipis_sent;
  stats[prefix + "mmio_exits"] = c.mmio_exits;
  stats[prefix + "bus_errors"] = c.bus_errors;
  stats[prefix + "vdso_fetches"] = c.vdso_fetches;
  stats[prefix + "vdso_writes"] = c.vdso_writes;
  stats[prefix + "modelled_cycles"] = c.modelled_cycles();
}

}  // namespace

absl::StatusOr<VmExit> MipsBackend::Run() {
  if (exit_outstanding_) {
    MipsCore& core = system_.core(exit_core_);
    PendingMmio& pending = core.mutable_pending_mmio();
    if (!pending.is_write) std::memcpy(pending.data.data(), buffer_.data(), pending.size);
    core.CompleteMmio();
    exit_outstanding_ = false;
  }
  for (;;) {
    if (kicked_.exchange(false, std::memory_order_acq_rel)) {
      VmExit exit;
      exit.kind = ExitKind::kInterrupted;
      return exit;
    }
    const SystemEvent event = system_.Run(kSliceSteps);
    switch (event.stop) {
      case SystemStop::kBudget: continue;
      case SystemStop::kHalted: {
        VmExit exit;
        exit.kind = ExitKind::kHalt;
        return exit;
      }
      case SystemStop::kMmio: {
        const PendingMmio& pending = system_.core(event.core).pending_mmio();
        exit_core_ = event.core;
        exit_outstanding_ = true;
        buffer_.fill(0);
        if (pending.is_write) std::memcpy(buffer_.data(), pending.data.data(), pending.size);
        VmExit exit;
        exit.kind = ExitKind::kMmio;
        exit.is_write = pending.is_write;
        exit.address = pending.paddr;
        exit.size = pending.size;
        exit.data = std::span<uint8_t>(buffer_.data(), pending.size);
        return exit;
      }
    }
  }
}

absl::StatusOr<StatsSnapshot> MipsBackend::ReadStats() {
  StatsSnapshot stats;
  AddCounters(stats, "", system_.Total());
  if (system_.core_count() > 1) {
    for (int i = 0; i < system_.core_count(); ++i) {
      AddCounters(stats, absl::StrCat("core", i, "."), system_.core(i).counters());
    }
  }
  return stats;
}

absl::StatusOr<CpuLocation> MipsBackend::Locate() {
  const MipsCore& core = system_.core(system_.current_core());
  CpuLocation where;
  where.pc = core.pc();
  where.cpl = core.user_mode() ? 3 : 0;
  where.page_table_root = core.entry_hi() & kEntryHiAsidMask;
  where.paging = true;
  where.registers = core.DumpRegisters();
  return where;
}

}  // namespace sigvisor::mips
