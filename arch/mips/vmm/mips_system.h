// The emulated MIPS machine's processors: N cores sharing RAM, the inter-core
// interrupt (IPI) device of docs/mips-platform.md, and a deterministic round-robin
// scheduler (core 0, 1, ..., N-1, a fixed quantum of instructions each). A waiting
// core's quantum passes as idle cycles so its timer still runs; when every core
// waits, time skips to the earliest timer that can wake one, or the machine halts.
//
// A core that sends an IPI to others yields the rest of its quantum, so the targets
// respond before the sender goes on (it typically spins until they acknowledge).
//
// The IPI device is the machine's own (it changes the cores' interrupt lines at
// once), and so is the vdso page when the machine has one (vdso_page.h: one host page
// that every core maps at the same physical address, read-only); every other
// physical address outside RAM is asked of `host_device`: a device there means an
// MMIO exit to the VMM, none means a bus error to the guest.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_SYSTEM_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_SYSTEM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/mips/vmm/core_counters.h"
#include "arch/mips/vmm/ipi_device.h"
#include "arch/mips/vmm/mips_core.h"
#include "arch/mips/vmm/physical_bus.h"
#include "arch/mips/vmm/vdso_page.h"

namespace sigvisor::mips {

enum class SystemStop {
  kBudget,  // ran the instructions it was given: the caller may check for a kick
  kMmio,    // core `core` waits for the VMM to complete its pending_mmio()
  kHalted,  // every core waits and nothing can wake any of them
};

struct SystemEvent {
  SystemStop stop = SystemStop::kBudget;
  int core = 0;
};

class MipsSystem : public PhysicalBus {
 public:
  using HostDeviceQuery = std::function<bool(uint64_t paddr)>;
  static constexpr uint64_t kDefaultQuantum = 1000;

  // `ram` must outlive the system. 1 to kMaxCores cores. With `vdso_address` the
  // machine has a vdso page there (page-aligned, above RAM, below 512 MiB, where
  // neither the IPI device nor a host device that `host_device` knows of now is),
  // one for all cores.
  static absl::StatusOr<std::unique_ptr<MipsSystem>> Create(
      std::span<uint8_t> ram, int cores, HostDeviceQuery host_device,
      uint64_t quantum = kDefaultQuantum, std::optional<uint64_t> vdso_address = std::nullopt);

  // Runs the cores for up to about `budget` instruction steps in total.
  SystemEvent Run(uint64_t budget);

  int core_count() const { return static_cast<int>(cores_.size()); }
  MipsCore& core(int i) { return *cores_[static_cast<size_t>(i)]; }
  const MipsCore& core(int i) const { return *cores_[static_cast<size_t>(i)]; }
  // The core that ran last (the one an MMIO exit belongs to).
  int current_core() const { return current_; }
  uint32_t ipi_pending() const { return ipi_->pending(); }
  CoreCounters Total() const;
  // The vdso page, null when the machine has none; its guest-physical address.
  const VdsoPage* vdso() const { return vdso_.get(); }
  VdsoPage* mutable_vdso() { return vdso_.get(); }
  uint64_t vdso_address() const { return vdso_address_; }

  // A phase's task (its ASID) watched for its operations (MipsCore::WatchTask): the
  // user-mode instructions it retires, on whatever core, and its entries into system
  // call `syscall`, with its user instructions so far at the first and the latest of
  // them. Watching again starts afresh.
  struct TaskMarks {
    uint64_t entries = 0;
    int core = 0;          // where the first entry was
    bool one_core = true;  // every entry was on that core
    uint64_t first = 0, last = 0;  // the task's user instructions then
  };
  void WatchTask(uint32_t asid, std::optional<uint32_t> syscall);
  void StopWatchingTask();
  const TaskMarks& task_marks() const { return task_marks_; }
  // The watched task's user-mode instructions since WatchTask.
  uint64_t TaskUserInstructions() const;

  // PhysicalBus.
  PhysicalAccess Access(int core, uint64_t paddr, uint32_t size, bool is_write,
                        uint32_t& value) override;
  void OnWatchedSyscall(int core) override;

 private:
  MipsSystem(HostDeviceQuery host_device, uint64_t quantum)
      : host_device_(std::move(host_device)), quantum_(quantum), quantum_left_(quantum) {}
  // Sets core i's IP2 line to `raised` for each bit i of `cores`.
  void SetIpiLines(uint32_t cores, bool raised);
  void NextCore();
  // All cores wait: lets time pass to the earliest wake-up; false when none can come.
  bool SkipIdleTime();

  HostDeviceQuery host_device_;
  const uint64_t quantum_;
  std::vector<std::unique_ptr<MipsCore>> cores_;
  int current_ = 0;
  uint64_t quantum_left_;
  int idle_slots_in_a_row_ = 0;
  std::unique_ptr<IpiDevice> ipi_;
  std::unique_ptr<VdsoPage> vdso_;
  uint64_t vdso_address_ = 0;
  TaskMarks task_marks_;
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_SYSTEM_H_
