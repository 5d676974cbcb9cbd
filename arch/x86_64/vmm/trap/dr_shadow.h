// The guest's debug registers as the trap engine keeps them: a per-vCPU shadow of
// DR0-DR3, DR6 and DR7 that every trapped guest access reads and writes, and a lazy
// load of the hardware (KVM's) debug registers.
//
// Lazy DR7: a guest write costs no hardware load when it leaves the effective
// hardware state unchanged. The effective state is
//   - DR7's enable bits L0-L3/G0-G3,
//   - for each enabled breakpoint, its address (DR0-DR3) and type/length (RW/LEN),
//   - DR6's status bits the hardware holds and the guest has cleared (a #DB the
//     hardware delivers later would otherwise be reported with stale bits).
// So DR7 written again and again with no enable bit set (the 2004 signal path's
// unconditional write) costs nothing, and a breakpoint the guest really enables is
// loaded at once and fires as it would without the VMM. DR7.GD is never loaded:
// every debug-register access traps anyway, and the shadow emulates GD itself.
//
// Guest reads return the shadow. The hardware changes DR6 behind the VMM's back
// when it delivers a #DB (a breakpoint, a single step); before DR6 is read or
// written, and before GD is honoured, the shadow catches up from the hardware
// (a read of KVM's registers, never a load).
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_DR_SHADOW_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_DR_SHADOW_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sigvisor::trap {

inline constexpr uint64_t kDr6Init = 0xffff0ff0;  // DR6 at reset
inline constexpr uint64_t kDr7Init = 0x400;       // DR7 at reset
inline constexpr uint64_t kDr6Bd = 1u << 13;      // a debug-register access was detected
inline constexpr uint64_t kDr7Gd = 1u << 13;      // general detect enable

struct DebugRegs {
  uint64_t dr[4] = {0, 0, 0, 0};
  uint64_t dr6 = kDr6Init;
  uint64_t dr7 = kDr7Init;
  bool operator==(const DebugRegs&) const = default;
};

// Where the loads go: KVM_GET/SET_DEBUGREGS for `patch`, a fake in tests.
class DrHardware {
 public:
  virtual ~DrHardware() = default;
  virtual absl::StatusOr<DebugRegs> GetDebugRegs() = 0;
  virtual absl::Status SetDebugRegs(const DebugRegs& regs) = 0;
};

// Which DR6 bits the guest can change and which read as 1, as KVM computes them
// from the guest's CPUID (RTM and bus-lock detection make bits 16 and 11 live).
struct Dr6Layout {
  uint64_t fixed_one = kDr6Init;
  uint64_t volatile_bits = 0xe00f;  // B0-B3, BD, BS, BT
  static Dr6Layout ForCpu(bool rtm, bool bus_lock_detect);
};

class DrShadow {
 public:
  // `hardware`: what the hardware holds now (KVM_GET_DEBUGREGS); the guest starts
  // seeing the same values.
  explicit DrShadow(const DebugRegs& hardware, Dr6Layout layout = {});

  // A guest `mov %dbN, %reg`, N in 0-3, 6, 7 (the caller resolved DR4/DR5 aliases).
  absl::StatusOr<uint64_t> Read(int n, DrHardware& hw);

  // A guest `mov %reg, %dbN`, N in 0-3, 6, 7. For DR6/DR7 the caller has checked
  // that bits 63:32 are zero (else #GP). Loads the hardware if the effective state
  // changed.
  absl::Status Write(int n, uint64_t value, DrHardware& hw);

  // A paravirtual guest's registers all at once (--trap=pv: the page holds what it
  // wrote, arch/x86_64/vmm/trap/pv_page.h): DR0-DR3 and DR7, and DR6 when the guest wrote it
  // since the last call. The hardware is loaded at most once, and only if the
  // effective state changed, as for Write(). DR6/DR7 bits 63:32 must be zero.
  absl::Status Assign(const uint64_t (&dr)[4], std::optional<uint64_t> dr6, uint64_t dr7,
                      DrHardware& hw);

  // Whether the guest's DR7.GD is set, i.e. the access about to be emulated must
  // raise #DB instead.
  absl::StatusOr<bool> GeneralDetect(DrHardware& hw);
  // A #DB reporting `status` (DR6 bits B0-B3, BD, BS, BT) is being delivered to the
  // guest: DR6 as the CPU leaves it, and DR7.GD cleared.
  void DebugExceptionDelivered(uint64_t status);
  // The #DB of general detection: DebugExceptionDelivered(BD).
  void RaiseGeneralDetect() { DebugExceptionDelivered(kDr6Bd); }

  const DebugRegs& guest() const { return guest_; }
  const DebugRegs& hardware() const { return hardware_; }
  uint64_t loads() const { return loads_; }  // KVM_SET_DEBUGREGS done

 private:
  absl::Status CatchUp(DrHardware& hw);
  bool NeedsLoad() const;
  // Loads the guest's registers (GD cleared) if NeedsLoad().
  absl::Status LoadIfNeeded(DrHardware& hw);

  DebugRegs guest_;
  DebugRegs hardware_;
  Dr6Layout layout_;
  uint64_t loads_ = 0;
};

}  // namespace sigvisor::trap

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_DR_SHADOW_H_
