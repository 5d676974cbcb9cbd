// What a core asks of its machine for a physical address outside RAM: the machine's
// own devices answer at once (the IPI device), the host's devices need a VM exit
// (UART, hypercalls, power-off), and anything else is a bus error for the guest.
// A core also tells its machine of the system calls it was asked to watch for.
#ifndef SIGVISOR_ARCH_MIPS_VMM_PHYSICAL_BUS_H_
#define SIGVISOR_ARCH_MIPS_VMM_PHYSICAL_BUS_H_

#include <cstdint>

namespace sigvisor::mips {

enum class PhysicalAccess {
  kDone,      // handled; a read's result is in `value`
  kExit,      // a host device is there: the core stops and the VMM completes it
  kBusError,  // nothing is there
};

class PhysicalBus {
 public:
  virtual ~PhysicalBus() = default;
  // An access of `size` (1, 2 or 4) bytes by core `core` at `paddr` (not in RAM).
  virtual PhysicalAccess Access(int core, uint64_t paddr, uint32_t size, bool is_write,
                                uint32_t& value) = 0;
  // Core `core` is about to take the system call its watch names (MipsCore::
  // WatchSyscall), before the exception is counted.
  virtual void OnWatchedSyscall(int core) {}
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_PHYSICAL_BUS_H_
