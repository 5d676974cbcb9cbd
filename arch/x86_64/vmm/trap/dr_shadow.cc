#include "arch/x86_64/vmm/trap/dr_shadow.h"

#include "absl/strings/str_format.h"

namespace sigvisor::trap {
namespace {

constexpr uint64_t kDr6TrapBits = 0xf;        // B0-B3: cleared by every #DB delivery
constexpr uint64_t kDr6StickyBits = 0xe000;   // BD, BS, BT: kept until the guest clears them
constexpr uint64_t kDr6StatusBits = kDr6TrapBits | kDr6StickyBits;
constexpr uint64_t kDr6ActiveLow = 0xffff0ff0;
constexpr uint64_t kDr7Volatile = 0xffff2bff;  // what a write can change (bit 10 reads as 1)
constexpr uint64_t kDr7Enables = 0xff;         // L0, G0, ..., L3, G3

bool Enabled(const DebugRegs& regs, int i) { return (regs.dr7 >> (2 * i)) & 3; }
uint64_t TypeAndLength(const DebugRegs& regs, int i) { return (regs.dr7 >> (16 + 4 * i)) & 0xf; }

}  // namespace

Dr6Layout Dr6Layout::ForCpu(bool rtm, bool bus_lock_detect) {
  constexpr uint64_t kRtm = 1u << 16, kBusLock = 1u << 11;
  Dr6Layout layout;
  layout.fixed_one = 0xfffe07f0 | (rtm ? 0 : kRtm) | (bus_lock_detect ? 0 : kBusLock);
  layout.volatile_bits = kDr6StatusBits | (rtm ? kRtm : 0) | (bus_lock_detect ? kBusLock : 0);
  return layout;
}

DrShadow::DrShadow(const DebugRegs& hardware, Dr6Layout layout)
    : guest_(hardware), hardware_(hardware), layout_(layout) {}

absl::Status DrShadow::CatchUp(DrHardware& hw) {
  absl::StatusOr<DebugRegs> now = hw.GetDebugRegs();
  if (!now.ok()) return now.status();
  if (now->dr6 == hardware_.dr6) return absl::OkStatus();
  // A #DB was delivered since the VMM last looked: the hardware cleared B0-B3 and set
  // what it detected; the guest's own sticky bits stay. Delivering it cleared GD.
  guest_.dr6 = now->dr6 | (guest_.dr6 & kDr6StickyBits);
  guest_.dr7 &= ~kDr7Gd;
  hardware_.dr6 = now->dr6;
  return absl::OkStatus();
}

bool DrShadow::NeedsLoad() const {
  if ((guest_.dr7 & kDr7Enables) != (hardware_.dr7 & kDr7Enables)) return true;
  for (int i = 0; i < 4; ++i) {
    if (!Enabled(guest_, i)) continue;
    if (guest_.dr[i] != hardware_.dr[i] || TypeAndLength(guest_, i) != TypeAndLength(hardware_, i)) {
      return true;
    }
  }
  return (hardware_.dr6 & ~guest_.dr6 & kDr6StatusBits) != 0;
}

absl::StatusOr<uint64_t> DrShadow::Read(int n, DrHardware& hw) {
  switch (n) {
    case 0:
    case 1:
    case 2:
    case 3: return guest_.dr[n];
    case 6:
      if (absl::Status s = CatchUp(hw); !s.ok()) return s;
      return guest_.dr6;
    case 7: return guest_.dr7;
    default:
      return absl::InvalidArgumentError(absl::StrFormat("no debug register DR%d to read", n));
  }
}

absl::Status DrShadow::Write(int n, uint64_t value, DrHardware& hw) {
  switch (n) {
    case 0:
    case 1:
    case 2:
    case 3: guest_.dr[n] = value; break;
    case 6:
      if (absl::Status s = CatchUp(hw); !s.ok()) return s;
      guest_.dr6 = (value & layout_.volatile_bits) | layout_.fixed_one;
      break;
    case 7: guest_.dr7 = (value & kDr7Volatile) | kDr7Init; break;
    default:
      return absl::InvalidArgumentError(absl::StrFormat("no debug register DR%d to write", n));
  }
  return LoadIfNeeded(hw);
}

absl::Status DrShadow::Assign(const uint64_t (&dr)[4], std::optional<uint64_t> dr6, uint64_t dr7,
                              DrHardware& hw) {
  for (int i = 0; i < 4; ++i) guest_.dr[i] = dr[i];
  if (dr6) {
    if (absl::Status s = CatchUp(hw); !s.ok()) return s;
    guest_.dr6 = (*dr6 & layout_.volatile_bits) | layout_.fixed_one;
  }
  guest_.dr7 = (dr7 & kDr7Volatile) | kDr7Init;
  return LoadIfNeeded(hw);
}

absl::Status DrShadow::LoadIfNeeded(DrHardware& hw) {
  if (!NeedsLoad()) return absl::OkStatus();
  DebugRegs load = guest_;
  load.dr7 &= ~kDr7Gd;
  if (absl::Status s = hw.SetDebugRegs(load); !s.ok()) return s;
  hardware_ = load;
  ++loads_;
  return absl::OkStatus();
}

absl::StatusOr<bool> DrShadow::GeneralDetect(DrHardware& hw) {
  if ((guest_.dr7 & kDr7Gd) == 0) return false;
  if (absl::Status s = CatchUp(hw); !s.ok()) return s;
  return (guest_.dr7 & kDr7Gd) != 0;
}

void DrShadow::DebugExceptionDelivered(uint64_t status) {
  // What KVM does when it delivers a #DB with this payload.
  guest_.dr6 = (guest_.dr6 & ~kDr6TrapBits) | kDr6ActiveLow | (status & kDr6StatusBits);
  guest_.dr7 &= ~kDr7Gd;
}

}  // namespace sigvisor::trap
