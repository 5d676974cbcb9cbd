// An emulated MIPS machine for one run (docs/mips-platform.md): RAM, the loaded
// ELF32 image, sigvisor_boot_info, N cores with the contract's boot registers, the
// machine's vdso page (named in the boot info), the bus with COM1, SOFTRES and the
// hypercall window, and a Session over MipsBackend.
// The MIPS counterpart of arch/x86_64/vmm/x86_machine's BootAndRun.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_MACHINE_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_MACHINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/mips/vmm/core_counters.h"
#include "arch/mips/vmm/mips_elf.h"
#include "arch/mips/vmm/mips_system.h"
#include "arch/mips/vmm/vdso_page.h"
#include "vmm/run/session.h"

namespace sigvisor::mips {

// Fixed physical addresses (Malta's, so the same image runs under QEMU).
inline constexpr uint64_t kSerialAddress = 0x180003f8;
inline constexpr uint64_t kHypercallAddress = 0x1f100000;
// Where sigvisor_boot_info goes; a1 holds its kseg0 address (0x80007000), as the
// x86-64 VMM puts it at SIGVISOR_BOOT_INFO_GPA.
inline constexpr uint64_t kBootInfoAddress = 0x7000;
inline constexpr uint32_t kKseg0Base = 0x80000000u;
inline constexpr uint64_t kMaxMemory = 256ull << 20;
// Count runs at half the 500 MHz modelled clock: the guest's "TSC" rate.
inline constexpr uint64_t kCountKhz = 250'000;

struct MipsMachineConfig {
  uint64_t memory_bytes = 64ull << 20;
  int cores = 1;
  std::string cmdline;  // sigvisor_boot_info.cmdline, and the orders (SIGVISOR_HC_ORDERS)
  uint64_t quantum = MipsSystem::kDefaultQuantum;
  // Supply the VMM's vdso page (vdso_page.h) at kVdsoAddress and name it in the boot
  // info. Without it the guest kernel falls back to its own copy, as under QEMU.
  bool vdso = true;
  // Run whole blocks with the block engine where they can (MipsCore::set_block_engine);
  // false runs the reference interpreter alone, for comparing the two.
  bool block_engine = true;
  SessionOptions session;  // timeout, console sink (describe filled in here)
};

// The machine's vdso page after the run.
struct MipsVdsoReport {
  bool supplied = false;
  uint64_t address = 0;  // guest-physical, as the boot info named it (0: none)
  // Distinct host pages behind the cores' vdso mappings: 1 when supplied (one page
  // shared by every core, no copies), 0 when not.
  int host_pages = 0;
  bool intact = false;  // the VMM's copy holds exactly what it was given
};

struct MipsMachineReport {
  RunResult result;
  uint64_t setup_ns = 0;
  std::vector<CoreCounters> cores;  // per core, over the whole run
  CoreCounters total;
  MipsVdsoReport vdso;
  double modelled_seconds = 0;  // total.modelled_cycles() at CostModel::kClockHz
  // Guest instructions retired per wall-clock second of the run, and per second of
  // this process's CPU time over the run (the interpreter's speed on a busy host).
  double instructions_per_second = 0;
  double instructions_per_cpu_second = 0;
};

// Boots `image` and runs it to the end. Errors are for what prevents booting (bad
// configuration, an image that does not fit); how the guest ended is in the report.
absl::StatusOr<MipsMachineReport> BootAndRun(const MipsElfImage& image,
                                             const MipsMachineConfig& config);

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_MACHINE_H_
