// Thin RAII wrappers over the KVM API: the system (/dev/kvm), a VM, a vCPU with its
// shared kvm_run page. Every fd and mapping is owned; every failing ioctl becomes an
// absl::Status naming the ioctl and the errno.
#ifndef SIGVISOR_VMM_KVM_KVM_H_
#define SIGVISOR_VMM_KVM_KVM_H_

#include <linux/kvm.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/base/unique_fd.h"
#include "vmm/kvm/kvm_layouts.h"
#include "vmm/kvm/stats_fd.h"

namespace sigvisor {

class KvmVcpu;
class KvmVm;

class KvmSystem {
 public:
  // Opens /dev/kvm (or `path`) and checks the API version. The error says what to
  // do when the device is missing or not accessible.
  static absl::StatusOr<KvmSystem> Open(const std::string& path = "/dev/kvm");

  // KVM_CHECK_EXTENSION: 0 when absent, else the capability's value.
  int CheckExtension(int capability) const;

  absl::StatusOr<KvmVm> CreateVm() const;

  // KVM_GET_SUPPORTED_CPUID, asked once, when the system is opened: the answer is
  // the host's and does not change, and asking costs ~0.4 ms (the kernel executes
  // CPUID for every leaf, each a VM exit where the host is itself a guest), which
  // every VM would otherwise pay. The error, if the host refused, is kept for the
  // callers that need the table.
  const absl::StatusOr<std::vector<kvm_cpuid_entry2>>& SupportedCpuid() const {
    return supported_cpuid_;
  }

  // KVM_GET_MSR_INDEX_LIST: the MSRs this host's KVM saves and restores for a guest.
  absl::StatusOr<std::vector<uint32_t>> MsrIndexList() const;

  int fd() const { return fd_.get(); }

 private:
  KvmSystem(UniqueFd fd, size_t run_size, absl::StatusOr<std::vector<kvm_cpuid_entry2>> cpuid)
      : fd_(std::move(fd)), run_size_(run_size), supported_cpuid_(std::move(cpuid)) {}
  UniqueFd fd_;
  size_t run_size_;  // KVM_GET_VCPU_MMAP_SIZE
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> supported_cpuid_;
};

class KvmVm {
 public:
  // KVM_SET_USER_MEMORY_REGION. `host` must stay mapped for the VM's lifetime.
  absl::Status SetMemoryRegion(uint32_t slot, uint64_t gpa, uint64_t size, void* host);

  // KVM_SET_TSS_ADDR and KVM_SET_IDENTITY_MAP_ADDR where Intel VMX needs them; no-ops
  // where the host ignores them.
  absl::Status SetTssAddr(uint64_t gpa);

  absl::Status EnableCap(uint32_t capability, uint64_t arg0);

  // KVM_CREATE_IRQCHIP: the in-kernel PIC, IOAPIC and a LAPIC per vCPU. Before any
  // vCPU is created. A `hlt` then waits in the kernel instead of exiting.
  absl::Status CreateIrqchip();

  // KVM_CREATE_PIT2: the in-kernel i8254 on ports 0x40-0x43 (and 0x61's speaker
  // gate), ticking into IRQ 0. After CreateIrqchip; Linux guests calibrate with it.
  absl::Status CreatePit();

  // KVM_IRQ_LINE: sets interrupt line `irq` of the in-kernel PIC and IOAPIC to
  // `level` (a device's line, e.g. COM1's IRQ 4). Needs CreateIrqchip.
  absl::Status SetIrqLine(uint32_t irq, bool level);

  // KVM_SIGNAL_MSI: a message-signalled interrupt, `data` written to `address` (for an
  // IPI to APIC ID n: address 0xfee00000 | n << 12, data = the vector: fixed, edge,
  // physical destination). Needs CreateIrqchip. True when KVM delivered it; false when
  // the guest blocked it (no LAPIC took it, e.g. one software-disabled). Thread-safe: a
  // VM ioctl, callable from any vCPU's thread.
  absl::StatusOr<bool> SignalMsi(uint64_t address, uint32_t data);

  // KVM_GET_IRQCHIP / KVM_SET_IRQCHIP of one in-kernel chip (`chip_id`:
  // KVM_IRQCHIP_PIC_MASTER, _PIC_SLAVE or _IOAPIC), e.g. to leave the PICs as a PC's
  // firmware does. Need CreateIrqchip.
  absl::StatusOr<kvm_irqchip> GetIrqchip(uint32_t chip_id) const;
  absl::Status SetIrqchip(const kvm_irqchip& chip);

  // KVM_GET_PIT2 / KVM_SET_PIT2: the in-kernel PIT's channels. Setting a channel's count
  // reloads it, so channel 0 in a periodic mode starts ticking. Need CreatePit.
  absl::StatusOr<kvm_pit_state2> GetPit() const;
  absl::Status SetPit(const kvm_pit_state2& state);

  // KVM_GET_CLOCK / KVM_SET_CLOCK: the VM's kvmclock base (the guest's paravirtual
  // clock). Set, only the clock value is taken (flags cleared, as Firecracker does).
  absl::StatusOr<kvm_clock_data> GetClock() const;
  absl::Status SetClock(const kvm_clock_data& clock);

  absl::StatusOr<KvmVcpu> CreateVcpu(int id);

  int fd() const { return fd_.get(); }

 private:
  friend class KvmSystem;
  KvmVm(UniqueFd fd, size_t run_size) : fd_(std::move(fd)), run_size_(run_size) {}
  UniqueFd fd_;
  size_t run_size_;
};

class KvmVcpu {
 public:
  // KVM_RUN. Returns when the vCPU exits to user space (see run()->exit_reason).
  // EINTR (a signal, e.g. the watchdog's) is not an error: the exit reason is then
  // KVM_EXIT_INTR. So is EAGAIN (an AP woken from waiting for INIT/SIPI).
  absl::Status Run();

  kvm_run* run() const { return static_cast<kvm_run*>(run_mapping_.get()); }
  size_t run_size() const { return run_mapping_.size(); }

  absl::StatusOr<kvm_regs> GetRegs() const;
  absl::Status SetRegs(const kvm_regs& regs);
  absl::StatusOr<kvm_sregs> GetSregs() const;
  absl::Status SetSregs(const kvm_sregs& sregs);
  absl::Status SetCpuid(std::span<const kvm_cpuid_entry2> entries);
  // KVM_SET_MSRS. KVM stops at the first MSR it refuses: the error names it, and
  // `set` (when given) says how many went in before it.
  absl::Status SetMsrs(std::span<const kvm_msr_entry> msrs, size_t* set = nullptr);
  // KVM_GET_MSRS of one MSR; an error when the host does not give it.
  absl::StatusOr<uint64_t> GetMsr(uint32_t index) const;
  // KVM_GET_MSRS of `indices`: the entries the host gave, in order. KVM stops at the
  // first MSR it refuses; that one is left out (and named in `refused`, when given)
  // and the rest are asked again, so one refusal costs one entry, not the batch.
  absl::StatusOr<std::vector<kvm_msr_entry>> GetMsrs(std::span<const uint32_t> indices,
                                                     std::vector<uint32_t>* refused = nullptr) const;
  absl::StatusOr<kvm_debugregs> GetDebugRegs() const;
  absl::Status SetDebugRegs(const kvm_debugregs& regs);
  absl::Status SetGuestDebug(const kvm_guest_debug& debug);
  absl::StatusOr<kvm_vcpu_events> GetEvents() const;
  absl::Status SetEvents(const kvm_vcpu_events& events);
  // KVM_GET_FPU: the x87/SSE state (its status word says whether an x87 exception is
  // pending).
  absl::StatusOr<kvm_fpu> GetFpu() const;
  // KVM_GET_LAPIC / KVM_SET_LAPIC (in-kernel irqchip): the local APIC's registers, e.g.
  // LINT0/LINT1 set up as a PC's BIOS leaves them before a Linux kernel starts.
  absl::StatusOr<kvm_lapic_state> GetLapic() const;
  absl::Status SetLapic(const kvm_lapic_state& lapic);
  // KVM_INTERRUPT (no in-kernel irqchip): queues external interrupt `vector`; valid
  // when kvm_run says ready_for_interrupt_injection.
  absl::Status Interrupt(uint32_t vector);
  // KVM_GET_MP_STATE (in-kernel irqchip): an AP waits UNINITIALIZED for INIT/SIPI.
  absl::StatusOr<kvm_mp_state> GetMpState() const;
  absl::Status SetMpState(const kvm_mp_state& state);
  // KVM_GET_XSAVE / KVM_SET_XSAVE (the legacy 4 KiB area) and the XCRs beside it.
  absl::StatusOr<KvmXsave> GetXsave() const;
  absl::Status SetXsave(const KvmXsave& xsave);
  absl::StatusOr<kvm_xcrs> GetXcrs() const;
  absl::Status SetXcrs(const kvm_xcrs& xcrs);

  // Completes an exit KVM left half done (the port I/O or MMIO it returned for):
  // KVM_RUN with immediate_exit set finishes the instruction and returns before the
  // guest runs another (KVM_CAP_IMMEDIATE_EXIT). Before a save, so that the state
  // read is the one after the instruction.
  absl::Status CompletePendingIo();

  // KVM_GET_TSC_KHZ: the rate of this vCPU's TSC (the host's, unless scaled).
  absl::StatusOr<uint64_t> TscKhz() const;

  // KVM_GET_STATS_FD for this vCPU.
  absl::StatusOr<StatsFd> OpenStats() const;

  int fd() const { return fd_.get(); }

 private:
  friend class KvmVm;
  KvmVcpu(UniqueFd fd, UniqueMapping run) : fd_(std::move(fd)), run_mapping_(std::move(run)) {}
  UniqueFd fd_;
  UniqueMapping run_mapping_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_KVM_KVM_H_
