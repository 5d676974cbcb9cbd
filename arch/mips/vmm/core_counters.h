// What one emulated MIPS core counts (docs/mips-platform.md, "Counters"): the inputs
// of the cost model and the events a report breaks down.
#ifndef SIGVISOR_ARCH_MIPS_VMM_CORE_COUNTERS_H_
#define SIGVISOR_ARCH_MIPS_VMM_CORE_COUNTERS_H_

#include <cstdint>

#include "arch/mips/vmm/cost_model.h"

namespace sigvisor::mips {

struct CoreCounters {
  uint64_t instructions = 0;  // retired (an instruction that faults does not retire)
  uint64_t exceptions = 0;    // every exception entry, interrupts included
  uint64_t tlb_refills = 0;
  uint64_t tlb_invalid = 0;
  uint64_t tlb_modified = 0;
  uint64_t syscalls = 0;
  uint64_t interrupts = 0;
  uint64_t icache_lines_flushed = 0;  // cache Hit_Invalidate_I and synci
  uint64_t ipis_sent = 0;             // one per target core
  uint64_t bus_errors = 0;            // accesses to physical addresses nothing answers
  uint64_t mmio_exits = 0;            // accesses handed to the host's devices
  // The machine's vdso page (vdso_page.h). Fetches are counted per I-cache line the
  // core runs into: instructions fetched one after the other from one line are one
  // fetch, as one line fill would serve them, so a signal that returns through the
  // two-word trampoline counts exactly one. Writes are stores that hit the page: each
  // faulted and changed nothing.
  uint64_t vdso_fetches = 0;
  uint64_t vdso_writes = 0;

  uint64_t modelled_cycles() const {
    return CostModel::Cycles(instructions, exceptions, icache_lines_flushed, ipis_sent);
  }

  CoreCounters& operator+=(const CoreCounters& o) {
    instructions += o.instructions;
    exceptions += o.exceptions;
    tlb_refills += o.tlb_refills;
    tlb_invalid += o.tlb_invalid;
    tlb_modified += o.tlb_modified;
    syscalls += o.syscalls;
    interrupts += o.interrupts;
    icache_lines_flushed += o.icache_lines_flushed;
    ipis_sent += o.ipis_sent;
    bus_errors += o.bus_errors;
    mmio_exits += o.mmio_exits;
    vdso_fetches += o.vdso_fetches;
    vdso_writes += o.vdso_writes;
    return *this;
  }
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_CORE_COUNTERS_H_
