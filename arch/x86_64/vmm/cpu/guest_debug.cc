#include "arch/x86_64/vmm/cpu/guest_debug.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

// DR7's enable bits of slot i (L and G) and its RW/LEN field.
uint64_t EnableBits(int i) { return 3ull << (2 * i); }
uint64_t ControlField(int i) { return 0xfull << (16 + 4 * i); }

// RW: 00 execute, 01 write, 11 read/write. LEN: 00 1, 01 2, 11 4, 10 8 bytes.
std::optional<uint64_t> Encode(GuestDebug::BreakKind kind, int length) {
  uint64_t rw = 0;
  switch (kind) {
    case GuestDebug::BreakKind::kExecute:
      if (length != 1) return std::nullopt;
      return 0;
    case GuestDebug::BreakKind::kWrite: rw = 1; break;
    case GuestDebug::BreakKind::kAccess: rw = 3; break;
  }
  uint64_t len = 0;
  switch (length) {
    case 1: len = 0; break;
    case 2: len = 1; break;
    case 4: len = 3; break;
    case 8: len = 2; break;
    default: return std::nullopt;
  }
  return rw | (len << 2);
}

}  // namespace

absl::Status GuestDebug::SetSingleStep(unsigned requester, bool on) {
  if (on) {
    step_requesters_ |= requester;
  } else {
    step_requesters_ &= ~requester;
  }
  return Load();
}

absl::Status GuestDebug::SetBlockInterrupts(unsigned requester, bool on) {
  if (on) {
    block_requesters_ |= requester;
  } else {
    block_requesters_ &= ~requester;
  }
  return Load();
}

absl::StatusOr<int> GuestDebug::AddBreakpoint(uint64_t address, BreakKind kind, int length) {
  if (!Encode(kind, length)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a hardware %s of %d bytes is not possible (execute: 1 byte; data: 1, 2, "
                        "4 or 8)",
                        kind == BreakKind::kExecute ? "breakpoint" : "watchpoint", length));
  }
  if (kind != BreakKind::kExecute && address % length != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a %d-byte watchpoint must be aligned (%#x is not)", length, address));
  }
  for (int i = 0; i < 4; ++i) {
    if (slots_[i].used || (guest_owned_ && (guest_dr7_ & EnableBits(i)))) continue;
    slots_[i] = Slot{true, address, kind, length};
    if (absl::Status s = Load(); !s.ok()) {
      slots_[i] = Slot{};
      return s;
    }
    return i;
  }
  return absl::ResourceExhaustedError(
      "all four hardware debug-register slots are in use");
}

absl::Status GuestDebug::RemoveBreakpoint(uint64_t address, BreakKind kind, int length) {
  for (Slot& slot : slots_) {
    if (slot.used && slot.address == address && slot.kind == kind && slot.length == length) {
      slot = Slot{};
      return Load();
    }
  }
  return absl::NotFoundError(absl::StrFormat("no hardware breakpoint at %#x", address));
}

absl::Status GuestDebug::RemoveAllBreakpoints() {
  slots_ = {};
  return Load();
}

absl::Status GuestDebug::SetGuestOwned(const std::array<uint64_t, 4>& dr, uint64_t dr7) {
  for (int i = 0; i < 4; ++i) {
    if ((dr7 & EnableBits(i)) && slots_[i].used) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the guest enabled debug-register slot %d, which holds a debugger breakpoint", i));
    }
  }
  guest_owned_ = true;
  guest_dr_ = dr;
  guest_dr7_ = dr7;
  return Load();
}

std::optional<int> GuestDebug::VmmBreakpointHit(uint64_t dr6) const {
  for (int i = 0; i < 4; ++i) {
    if ((dr6 & (kDr6B0 << i)) && slots_[i].used) return i;
  }
  return std::nullopt;
}

std::optional<uint64_t> GuestDebug::BreakpointAddress(int slot) const {
  if (slot < 0 || slot >= 4 || !slots_[slot].used) return std::nullopt;
  return slots_[slot].address;
}

absl::Status GuestDebug::SetSoftwareBreakpoints(bool on) {
  software_ = on;
  return Load();
}

absl::Status GuestDebug::Reanchor() {
  if (!single_stepping()) return absl::OkStatus();
  loaded_.reset();
  return Load();
}

absl::Status GuestDebug::Load() {
  kvm_guest_debug debug = {};
  bool any_slot = false;
  uint64_t dr7 = 0;
  for (int i = 0; i < 4; ++i) {
    if (slots_[i].used) {
      any_slot = true;
      debug.arch.debugreg[i] = slots_[i].address;
      dr7 |= (2ull << (2 * i)) | (*Encode(slots_[i].kind, slots_[i].length) << (16 + 4 * i));
    } else if (guest_owned_ && (guest_dr7_ & EnableBits(i))) {
      debug.arch.debugreg[i] = guest_dr_[i];
      dr7 |= (guest_dr7_ & (EnableBits(i) | ControlField(i)));
    }
  }
  if (guest_owned_) dr7 |= kDr7GdBit;
  if (dr7 != 0) dr7 |= 0x400;  // bit 10 reads as 1
  debug.arch.debugreg[7] = dr7;
  if (step_requesters_ != 0 || any_slot || guest_owned_ || software_) {
    debug.control |= KVM_GUESTDBG_ENABLE;
  }
  if (software_) debug.control |= KVM_GUESTDBG_USE_SW_BP;
  if (step_requesters_ != 0) debug.control |= KVM_GUESTDBG_SINGLESTEP;
  if (block_requesters_ != 0) debug.control |= KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_BLOCKIRQ;
  if (any_slot || guest_owned_) debug.control |= KVM_GUESTDBG_USE_HW_BP;
  if (loaded_ && std::memcmp(&*loaded_, &debug, sizeof(debug)) == 0) return absl::OkStatus();
  if (!loaded_ && debug.control == 0) {  // never enabled: nothing to clear
    loaded_ = debug;
    return absl::OkStatus();
  }
  if (absl::Status s = vcpu_.SetGuestDebug(debug); !s.ok()) return s;
  loaded_ = debug;
  return absl::OkStatus();
}

}  // namespace sigvisor::x86
