// The local APIC model: one register table (which offsets exist, in which mode, read
// or written), the SDM's priority rules, and fixed IPIs posted under one lock. Kicks
// run after the lock is released, since a kick may wait on the target's thread.
#include "arch/x86_64/vmm/cpu/local_apic.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

// The xAPIC register offsets (the SDM's local APIC register address map).
constexpr uint32_t kId = 0x020;
constexpr uint32_t kVersion = 0x030;
constexpr uint32_t kTpr = 0x080;
constexpr uint32_t kPpr = 0x0a0;
constexpr uint32_t kEoi = 0x0b0;
constexpr uint32_t kLdr = 0x0d0;
constexpr uint32_t kDfr = 0x0e0;
constexpr uint32_t kSvr = 0x0f0;
constexpr uint32_t kIsr = 0x100;
constexpr uint32_t kTmr = 0x180;
constexpr uint32_t kIrr = 0x200;
constexpr uint32_t kEsr = 0x280;
constexpr uint32_t kLvtCmci = 0x2f0;
constexpr uint32_t kIcr = 0x300;
constexpr uint32_t kIcrHigh = 0x310;
constexpr uint32_t kLvtTimer = 0x320;
constexpr uint32_t kLvtError = 0x370;
constexpr uint32_t kTimerInitialCount = 0x380;
constexpr uint32_t kTimerCurrentCount = 0x390;
constexpr uint32_t kTimerDivide = 0x3e0;
constexpr uint32_t kSelfIpi = 0x3f0;
constexpr uint32_t kLastOffset = 0xff0;

// Version 0x14 (an integrated APIC), LVT entries 0..5 after the CMCI one.
constexpr uint32_t kVersionValue = (5 << 16) | 0x14;
constexpr uint32_t kSvrEnable = 1 << 8;
constexpr uint32_t kSvrKeptBits = 0x13ff;  // vector, enable, focus check, EOI broadcast
constexpr uint32_t kLvtMasked = 1 << 16;
constexpr uint32_t kLdrKeptBits = 0xff000000;
constexpr uint32_t kDfrReservedOnes = 0x0fffffff;
constexpr uint32_t kIcrDeliveryStatus = 1 << 12;  // always idle: a send completes at once
constexpr uint32_t kXapicDestinationShift = 24;
constexpr uint32_t kXapicBroadcast = 0xff;
constexpr uint32_t kX2apicBroadcast = 0xffffffff;
constexpr int kFirstLegalVector = 16;  // 0-15 are the CPU's exceptions

enum Access : uint8_t { kNone = 0, kRead = 1, kWrite = 2, kReadWrite = kRead | kWrite };

struct Register {
  uint32_t first;  // an array (ISR, TMR, IRR, the LVT) spans first..last
  uint32_t last;
  std::string_view name;
  uint8_t xapic;   // Access through the MMIO page
  uint8_t x2apic;  // Access through the MSRs
};

constexpr Register kRegisters[] = {
    {kId, kId, "ID", kRead, kRead},
    {kVersion, kVersion, "VERSION", kRead, kRead},
    {kTpr, kTpr, "TPR", kReadWrite, kReadWrite},
    {kPpr, kPpr, "PPR", kRead, kRead},
    {kEoi, kEoi, "EOI", kWrite, kWrite},
    {kLdr, kLdr, "LDR", kReadWrite, kRead},  // x2APIC derives it from the ID
    {kDfr, kDfr, "DFR", kReadWrite, kNone},  // x2APIC has cluster mode only
    {kSvr, kSvr, "SVR", kReadWrite, kReadWrite},
    {kIsr, kIsr + 0x70, "ISR", kRead, kRead},
    {kTmr, kTmr + 0x70, "TMR", kRead, kRead},
    {kIrr, kIrr + 0x70, "IRR", kRead, kRead},
    {kEsr, kEsr, "ESR", kReadWrite, kReadWrite},
    {kLvtCmci, kLvtCmci, "LVT", kReadWrite, kReadWrite},
    {kIcr, kIcr, "ICR", kReadWrite, kReadWrite},
    {kIcrHigh, kIcrHigh, "ICR_HIGH", kReadWrite, kNone},  // x2APIC's ICR is one 64-bit MSR
    {kLvtTimer, kLvtError, "LVT", kReadWrite, kReadWrite},
    {kTimerInitialCount, kTimerInitialCount, "TIMER_INITIAL", kReadWrite, kReadWrite},
    {kTimerCurrentCount, kTimerCurrentCount, "TIMER_CURRENT", kRead, kRead},
    {kTimerDivide, kTimerDivide, "TIMER_DIVIDE", kReadWrite, kReadWrite},
    {kSelfIpi, kSelfIpi, "SELF_IPI", kNone, kWrite},
};

const Register* FindRegister(uint32_t offset, bool x2apic) {
  if (offset % 16 != 0) return nullptr;
  for (const Register& reg : kRegisters) {
    if (offset < reg.first || offset > reg.last) continue;
    return (x2apic ? reg.x2apic : reg.xapic) == kNone ? nullptr : &reg;
  }
  return nullptr;
}

uint32_t X2apicMsr(uint32_t offset) { return LocalApics::kX2apicFirstMsr + (offset >> 4); }

std::string Describe(const Register& reg, uint32_t offset, bool x2apic) {
  return x2apic ? absl::StrFormat("x2APIC register %s (MSR %#x)", reg.name, X2apicMsr(offset))
                : absl::StrFormat("local APIC register %s (offset %#x)", reg.name, offset);
}

// The register at `offset` if its mode lets it be accessed as `wanted`, or why not.
absl::StatusOr<const Register*> Lookup(uint32_t offset, bool x2apic, Access wanted) {
  if (offset % 16 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("local APIC access at offset %#x: registers are 16-byte aligned", offset));
  }
  if (offset > kLastOffset) {
    return absl::InvalidArgumentError(
        x2apic ? absl::StrFormat("no x2APIC register at MSR %#x", X2apicMsr(offset))
               : absl::StrFormat("local APIC access at offset %#x is past its 4 KiB page", offset));
  }
  const Register* reg = FindRegister(offset, x2apic);
  if (reg == nullptr) {
    return absl::InvalidArgumentError(
        x2apic ? absl::StrFormat("no x2APIC register at MSR %#x", X2apicMsr(offset))
               : absl::StrFormat("no local APIC register at offset %#x", offset));
  }
  if (((x2apic ? reg->x2apic : reg->xapic) & wanted) == 0) {
    return absl::InvalidArgumentError(
        wanted == kRead
            ? absl::StrFormat("read of the write-only %s", Describe(*reg, offset, x2apic))
            : absl::StrFormat("write to the read-only %s", Describe(*reg, offset, x2apic)));
  }
  return reg;
}

// The LVT entries in the order Apic::lvt keeps them: CMCI, then timer..error.
int LvtIndex(uint32_t offset) { return offset == kLvtCmci ? 0 : 1 + (offset - kLvtTimer) / 16; }

int PriorityClass(uint32_t priority_or_vector) { return (priority_or_vector >> 4) & 0xf; }

absl::Status CheckVector(int vector, std::string_view source) {
  if (vector >= kFirstLegalVector) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("illegal %s vector %d (0-15 are the CPU's exceptions)", source, vector));
}

}  // namespace

std::optional<std::string_view> LocalApicRegisterName(uint64_t offset, bool x2apic) {
  if (offset > kLastOffset) return std::nullopt;
  const Register* reg = FindRegister(static_cast<uint32_t>(offset), x2apic);
  if (reg == nullptr) return std::nullopt;
  return reg->name;
}

std::optional<int> LocalApics::VectorSet::Highest() const {
  for (int index = static_cast<int>(words_.size()) - 1; index >= 0; --index) {
    if (words_[index] != 0) return 32 * index + 31 - std::countl_zero(words_[index]);
  }
  return std::nullopt;
}

std::vector<int> LocalApics::VectorSet::Ascending() const {
  std::vector<int> vectors;
  for (int vector = 0; vector < 256; ++vector) {
    if (Has(vector)) vectors.push_back(vector);
  }
  return vectors;
}

LocalApics::LocalApics(int vcpus) : apics_(std::clamp(vcpus, 1, kMaxVcpus)) {
  for (Apic& apic : apics_) SetResetValues(apic);
}

// What the members' initializers do not set of the reset state: every LVT masked.
void LocalApics::SetResetValues(Apic& apic) { apic.lvt.fill(kLvtMasked); }

void LocalApics::SetKick(int vcpu, std::function<void()> kick) {
  if (!Valid(vcpu)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  apics_[vcpu].kick = std::move(kick);
}

absl::StatusOr<uint64_t> LocalApics::Read(int vcpu, uint32_t offset, bool x2apic) {
  if (!Valid(vcpu)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("local APIC read by vCPU %d of %d", vcpu, vcpus()));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return ReadLocked(vcpu, offset, x2apic);
}

absl::Status LocalApics::Write(int vcpu, uint32_t offset, uint64_t value, bool x2apic) {
  if (!Valid(vcpu)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("local APIC write by vCPU %d of %d", vcpu, vcpus()));
  }
  Kicks kicks;
  absl::Status status;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status = WriteLocked(vcpu, offset, value, x2apic, kicks);
  }
  for (const std::function<void()>& kick : kicks) kick();
  return status;
}

bool LocalApics::Post(int vcpu, uint8_t vector) {
  if (!Valid(vcpu) || vector < kFirstLegalVector) return false;
  Kicks kicks;
  bool posted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posted = PostLocked(vcpu, vector, /*kick=*/true, kicks);
  }
  for (const std::function<void()>& kick : kicks) kick();
  return posted;
}

std::optional<uint8_t> LocalApics::Deliverable(int vcpu) const {
  if (!Valid(vcpu)) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  return DeliverableLocked(apics_[vcpu]);
}

void LocalApics::Accept(int vcpu, uint8_t vector) {
  if (!Valid(vcpu)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Apic& apic = apics_[vcpu];
  if (!apic.irr.Has(vector)) return;
  apic.irr.Clear(vector);
  apic.isr.Set(vector);
}

bool LocalApics::WaitForInterrupt(int vcpu, const std::function<bool()>& stop) {
  if (!Valid(vcpu)) return false;
  std::unique_lock<std::mutex> lock(mutex_);
  Apic& apic = apics_[vcpu];
  apic.waiting = true;
  while (!DeliverableLocked(apic).has_value() && !stop()) apic.wake.wait(lock);
  apic.waiting = false;
  return DeliverableLocked(apic).has_value();
}

void LocalApics::Wake(int vcpu) {
  if (!Valid(vcpu)) return;
  // Under the lock, so that a waiter that has just found stop() false is already
  // inside wait() and gets the notification.
  std::lock_guard<std::mutex> lock(mutex_);
  apics_[vcpu].wake.notify_all();
}

std::vector<int> LocalApics::Pending(int vcpu) const {
  if (!Valid(vcpu)) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  return apics_[vcpu].irr.Ascending();
}

std::vector<int> LocalApics::InService(int vcpu) const {
  if (!Valid(vcpu)) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  return apics_[vcpu].isr.Ascending();
}

bool LocalApics::AtReset(int vcpu) const {
  if (!Valid(vcpu)) return false;
  Apic reset;
  SetResetValues(reset);
  std::lock_guard<std::mutex> lock(mutex_);
  const Apic& apic = apics_[vcpu];
  return apic.tpr == reset.tpr && apic.ldr == reset.ldr && apic.dfr == reset.dfr &&
         apic.svr == reset.svr && apic.icr_low == reset.icr_low &&
         apic.icr_high == reset.icr_high && apic.lvt == reset.lvt &&
         apic.timer_divide == reset.timer_divide && apic.irr.Empty() && apic.isr.Empty();
}

LocalApics::Counts LocalApics::counts(int vcpu) const {
  if (!Valid(vcpu)) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  return apics_[vcpu].counts;
}

bool LocalApics::Enabled(const Apic& apic) { return (apic.svr & kSvrEnable) != 0; }

// SDM 10.8.3.1: the task priority, unless the highest vector in service is of a higher
// class, which then sets the class (and its sub-class is 0).
uint32_t LocalApics::ProcessorPriority(const Apic& apic) {
  const int in_service = apic.isr.Highest().value_or(0);
  if (PriorityClass(apic.tpr) >= PriorityClass(in_service)) return apic.tpr;
  return in_service & 0xf0;
}

std::optional<uint8_t> LocalApics::DeliverableLocked(const Apic& apic) {
  const std::optional<int> pending = apic.irr.Highest();
  if (!Enabled(apic) || !pending.has_value()) return std::nullopt;
  // Only the class counts: a pending vector of the in-service vector's class waits
  // for its EOI, whatever their order within the class.
  if (PriorityClass(*pending) <= PriorityClass(ProcessorPriority(apic))) return std::nullopt;
  return static_cast<uint8_t>(*pending);
}

absl::StatusOr<uint64_t> LocalApics::ReadLocked(int vcpu, uint32_t offset, bool x2apic) const {
  absl::StatusOr<const Register*> reg = Lookup(offset, x2apic, kRead);
  if (!reg.ok()) return reg.status();
  const Apic& apic = apics_[vcpu];
  const int word = (offset - (*reg)->first) / 16;
  switch ((*reg)->first) {
    case kId:
      return x2apic ? vcpu : static_cast<uint32_t>(vcpu) << kXapicDestinationShift;
    case kVersion:
      return kVersionValue;
    case kTpr:
      return apic.tpr;
    case kPpr:
      return ProcessorPriority(apic);
    case kLdr:
      // x2APIC's logical ID: cluster (ID / 16) in bits 31:16, a bit per member below.
      if (x2apic) return ((vcpu >> 4) << 16) | (1u << (vcpu & 0xf));
      return apic.ldr;
    case kDfr:
      return apic.dfr;
    case kSvr:
      return apic.svr;
    case kIsr:
      return apic.isr.Word(word);
    case kTmr:
      return 0;  // fixed IPIs are edge-triggered
    case kIrr:
      return apic.irr.Word(word);
    case kEsr:
      return 0;  // the model refuses what would set an error
    case kLvtCmci:
    case kLvtTimer:
      return apic.lvt[LvtIndex(offset)];
    case kIcr:
      if (x2apic) return (uint64_t{apic.icr_high} << 32) | apic.icr_low;
      return apic.icr_low;
    case kIcrHigh:
      return apic.icr_high;
    case kTimerInitialCount:  // only 0 can be written
    case kTimerCurrentCount:
      return 0;
    case kTimerDivide:
      return apic.timer_divide;
  }
  return absl::InternalError(absl::StrFormat("local APIC register %s has no reader", (*reg)->name));
}

absl::Status LocalApics::WriteLocked(int vcpu, uint32_t offset, uint64_t value, bool x2apic,
                                     Kicks& kicks) {
  absl::StatusOr<const Register*> reg = Lookup(offset, x2apic, kWrite);
  if (!reg.ok()) return reg.status();
  const bool full_icr = x2apic && offset == kIcr;
  if (!full_icr && value > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrFormat("write of %#x to the 32-bit %s", value, Describe(**reg, offset, x2apic)));
  }
  // x2APIC turns the xAPIC's "any value" of these into "0, else #GP".
  if (x2apic && (offset == kEoi || offset == kEsr) && value != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("write of %#x to the %s, which takes 0",
                                                      value, Describe(**reg, offset, x2apic)));
  }
  Apic& apic = apics_[vcpu];
  const uint32_t low = static_cast<uint32_t>(value);
  switch ((*reg)->first) {
    case kTpr:
      apic.tpr = low & 0xff;
      return absl::OkStatus();
    case kEoi:
      if (std::optional<int> in_service = apic.isr.Highest()) apic.isr.Clear(*in_service);
      ++apic.counts.eois;
      return absl::OkStatus();
    case kLdr:
      apic.ldr = low & kLdrKeptBits;
      return absl::OkStatus();
    case kDfr:
      apic.dfr = low | kDfrReservedOnes;
      return absl::OkStatus();
    case kSvr:
      apic.svr = low & kSvrKeptBits;
      // SDM 10.4.7.2: software-disabling masks every LVT entry.
      if (!Enabled(apic)) {
        for (uint32_t& entry : apic.lvt) entry |= kLvtMasked;
      }
      return absl::OkStatus();
    case kEsr:
      return absl::OkStatus();
    case kLvtCmci:
    case kLvtTimer:
      apic.lvt[LvtIndex(offset)] = Enabled(apic) ? low : low | kLvtMasked;
      return absl::OkStatus();
    case kIcr: {
      const uint32_t destination =
          x2apic ? static_cast<uint32_t>(value >> 32) : apic.icr_high >> kXapicDestinationShift;
      if (absl::Status sent = SendIpi(vcpu, low, destination, x2apic, kicks); !sent.ok()) {
        return sent;
      }
      apic.icr_low = low & ~kIcrDeliveryStatus;
      if (x2apic) apic.icr_high = destination;
      return absl::OkStatus();
    }
    case kIcrHigh:
      apic.icr_high = low & (0xffu << kXapicDestinationShift);
      return absl::OkStatus();
    case kTimerInitialCount:
      if (low != 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("the APIC timer is not modelled (initial count %#x written)", low));
      }
      return absl::OkStatus();
    case kTimerDivide:
      apic.timer_divide = low;
      return absl::OkStatus();
    case kSelfIpi: {
      const int vector = low & 0xff;
      if (absl::Status legal = CheckVector(vector, "SELF IPI"); !legal.ok()) return legal;
      ++apic.counts.ipis_sent;
      PostLocked(vcpu, vector, /*kick=*/false, kicks);
      return absl::OkStatus();
    }
  }
  return absl::InternalError(absl::StrFormat("local APIC register %s has no writer", (*reg)->name));
}

absl::Status LocalApics::SendIpi(int sender, uint32_t command, uint32_t destination, bool x2apic,
                                 Kicks& kicks) {
  static constexpr std::string_view kDeliveryModes[] = {
      "fixed", "lowest-priority", "SMI", "reserved (3)", "NMI", "INIT", "start-up", "reserved (7)"};
  enum Shorthand { kDestinationField = 0, kSelf = 1, kAllIncludingSelf = 2, kAllExcludingSelf = 3 };
  const int vector = command & 0xff;
  const int delivery_mode = (command >> 8) & 0x7;
  const bool logical_destination = (command >> 11) & 1;
  const int shorthand = (command >> 18) & 0x3;

  if (delivery_mode != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ICR delivery mode %s is not modelled (fixed only)", kDeliveryModes[delivery_mode]));
  }
  // A shorthand names its targets itself: older Linux sends those with the logical bit
  // set, and the hardware ignores it.
  if (logical_destination && shorthand == kDestinationField) {
    return absl::InvalidArgumentError(
        "ICR logical destination mode is not modelled (physical only)");
  }
  if (absl::Status legal = CheckVector(vector, "ICR"); !legal.ok()) return legal;

  const uint64_t everyone = vcpus() == kMaxVcpus ? ~uint64_t{0} : (uint64_t{1} << vcpus()) - 1;
  const uint64_t self = uint64_t{1} << sender;
  uint64_t targets = 0;  // bit n: vCPU n
  switch (shorthand) {
    case kDestinationField:
      if (destination == (x2apic ? kX2apicBroadcast : kXapicBroadcast)) {
        targets = everyone;
      } else if (destination >= static_cast<uint32_t>(vcpus())) {
        return absl::InvalidArgumentError(
            absl::StrFormat("ICR destination APIC ID %d: no such vCPU", destination));
      } else {
        targets = uint64_t{1} << destination;
      }
      break;
    case kSelf:
      targets = self;
      break;
    case kAllIncludingSelf:
      targets = everyone;
      break;
    case kAllExcludingSelf:
      targets = everyone & ~self;
      break;
  }
  for (int target = 0; target < vcpus(); ++target) {
    if ((targets >> target & 1) == 0) continue;
    ++apics_[sender].counts.ipis_sent;
    PostLocked(target, vector, /*kick=*/target != sender, kicks);
  }
  return absl::OkStatus();
}

bool LocalApics::PostLocked(int target, uint8_t vector, bool kick, Kicks& kicks) {
  Apic& apic = apics_[target];
  if (!Enabled(apic)) {
    ++apic.counts.blocked;
    return false;
  }
  apic.irr.Set(vector);
  ++apic.counts.received;
  if (apic.waiting) {
    apic.wake.notify_all();
  } else if (kick && apic.kick) {
    kicks.push_back(apic.kick);
  }
  return true;
}

}  // namespace sigvisor::x86
