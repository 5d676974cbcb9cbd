// Every vCPU's local APIC, emulated in the VMM instead of KVM's in-kernel irqchip: the
// registers a guest reaches through the xAPIC page or the x2APIC MSRs, fixed IPIs
// between vCPUs, and the vector each vCPU's run loop should inject next. It is a
// model only (no KVM calls), so the run loop's injection and halt can be written
// against it and its priority rules tested without a VM. What it does not model (the
// timer, INIT/SIPI, logical destinations, ...) it refuses with the guest's mistake in
// one line, rather than behave differently from the hardware without saying so.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_LOCAL_APIC_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_LOCAL_APIC_H_

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sigvisor::x86 {

// The name of the register at xAPIC `offset` ("ICR", "EOI", "LVT", ...) when the
// model has one there in that mode (x2APIC: through MSR 0x800 + (offset >> 4)). One
// table serves the model's refusals and the bus devices' access names.
std::optional<std::string_view> LocalApicRegisterName(uint64_t offset, bool x2apic);

class LocalApics {
 public:
  // An IPI's targets are one 64-bit mask; the IDs stay below the xAPIC broadcast 0xff.
  static constexpr int kMaxVcpus = 64;
  // The x2APIC's MSRs: 0x800 + (xAPIC offset >> 4).
  static constexpr uint32_t kX2apicFirstMsr = 0x800;

  // 1..kMaxVcpus vCPUs (a count outside is clamped into it); APIC ID of vCPU n is n.
  explicit LocalApics(int vcpus);
  int vcpus() const { return static_cast<int>(apics_.size()); }

  // Called (outside the lock) when an interrupt is posted to `vcpu` while it is not
  // waiting in WaitForInterrupt: it must get the vCPU out of KVM_RUN (the backend's
  // Kick). Set before the vCPUs run. Unset: no kick.
  void SetKick(int vcpu, std::function<void()> kick);

  // A register access by `vcpu` to its own APIC. `offset` is the xAPIC register offset
  // (0x000..0xff0, a multiple of 16); `x2apic` says the access came through the MSRs
  // (MSR 0x800 + (offset >> 4)). InvalidArgument with a one-line reason for what the
  // model refuses: the caller ends the run with it as the guest's error.
  // An IPI the writer sends itself (SELF IPI, a self shorthand, a broadcast) does not
  // kick it: it is out of KVM_RUN for this very access, and its run loop asks
  // Deliverable before it re-enters, as it must after an EOI or a TPR write anyway.
  absl::StatusOr<uint64_t> Read(int vcpu, uint32_t offset, bool x2apic);
  absl::Status Write(int vcpu, uint32_t offset, uint64_t value, bool x2apic);

  // A fixed interrupt `vector` (>= 16) for `vcpu` from outside (the VMM's send_ipi
  // hypercall): sets its IRR bit and wakes it. false, and nothing set, for a vector
  // below 16 or when its APIC is software-disabled (SVR bit 8 clear; counted in
  // blocked(vcpu)).
  bool Post(int vcpu, uint8_t vector);

  // For `vcpu`'s own run loop:
  // The vector to inject now: the highest one pending whose priority class is above
  // the processor priority's; none if nothing qualifies or the APIC is disabled.
  std::optional<uint8_t> Deliverable(int vcpu) const;
  // It was injected: moves the vector from pending (IRR) to in service (ISR).
  void Accept(int vcpu, uint8_t vector);
  // The vCPU halted: blocks until Deliverable(vcpu) has a vector (returns true) or
  // `stop()` returns true (returns false). `stop` is evaluated under the lock, at entry
  // and after every Wake(vcpu) or Post to it. From its first stop() on, the vCPU counts
  // as waiting: an interrupt posted to it notifies it instead of kicking it.
  bool WaitForInterrupt(int vcpu, const std::function<bool()>& stop);
  // Makes a WaitForInterrupt(vcpu) re-evaluate its stop() (the backend's Kick calls it
  // after setting what stop() reads).
  void Wake(int vcpu);

  // For a timeout's diagnosis and tests: the vectors pending (IRR) and in service
  // (ISR), ascending.
  std::vector<int> Pending(int vcpu) const;
  std::vector<int> InService(int vcpu) const;

  // `vcpu`'s registers are still as the constructor left them (its reset state): nothing
  // the guest wrote or was posted changed them. A snapshot holds no VMM APIC; it is
  // taken where every one is so (false for a vCPU out of range).
  bool AtReset(int vcpu) const;

  // What `vcpu`'s APIC counted since construction (all 0 for a vCPU out of range).
  struct Counts {
    // The IPIs it sent through its ICR or its SELF IPI register, one per target
    // addressed, whether the target's APIC took it or dropped it (a drop also counts in
    // the target's `blocked`).
    uint64_t ipis_sent = 0;
    uint64_t received = 0;  // interrupts posted to it (by an IPI or Post)
    uint64_t eois = 0;      // EOIs it wrote
    uint64_t blocked = 0;   // interrupts it refused: its APIC was software-disabled
  };
  Counts counts(int vcpu) const;

 private:
  // A 256-bit vector array laid out as the APIC's ISR, TMR and IRR registers are: word
  // i holds vectors 32i..32i+31.
  class VectorSet {
   public:
    void Set(int vector) { words_[vector / 32] |= Bit(vector); }
    void Clear(int vector) { words_[vector / 32] &= ~Bit(vector); }
    bool Has(int vector) const { return (words_[vector / 32] & Bit(vector)) != 0; }
    uint32_t Word(int index) const { return words_[index]; }
    std::optional<int> Highest() const;
    bool Empty() const { return words_ == std::array<uint32_t, 8>{}; }
    std::vector<int> Ascending() const;

   private:
    static uint32_t Bit(int vector) { return uint32_t{1} << (vector % 32); }
    std::array<uint32_t, 8> words_ = {};
  };

  struct Apic {
    uint32_t tpr = 0;
    uint32_t ldr = 0;
    uint32_t dfr = 0xffffffff;
    uint32_t svr = 0xff;  // software-disabled until the guest sets bit 8
    uint32_t icr_low = 0;
    uint32_t icr_high = 0;             // xAPIC: destination in bits 31:24; x2APIC: the whole ID
    std::array<uint32_t, 7> lvt = {};  // CMCI, timer, thermal, perf, LINT0, LINT1, error
    uint32_t timer_divide = 0;
    VectorSet irr;
    VectorSet isr;

    bool waiting = false;  // in WaitForInterrupt: a post notifies `wake`, not `kick`
    std::condition_variable wake;
    std::function<void()> kick;

    Counts counts;
  };

  // The kicks a write owes, called once the lock is released (a kick may block on the
  // target's thread, which may be waiting for this lock).
  using Kicks = std::vector<std::function<void()>>;

  static void SetResetValues(Apic& apic);
  bool Valid(int vcpu) const { return vcpu >= 0 && vcpu < vcpus(); }
  static bool Enabled(const Apic& apic);
  static uint32_t ProcessorPriority(const Apic& apic);
  static std::optional<uint8_t> DeliverableLocked(const Apic& apic);

  absl::StatusOr<uint64_t> ReadLocked(int vcpu, uint32_t offset, bool x2apic) const;
  absl::Status WriteLocked(int vcpu, uint32_t offset, uint64_t value, bool x2apic, Kicks& kicks);
  // A fixed IPI as the ICR's low word `command` asks; `destination` is the ICR's
  // destination field (xAPIC: ICR high bits 31:24; x2APIC: bits 63:32).
  absl::Status SendIpi(int sender, uint32_t command, uint32_t destination, bool x2apic,
                       Kicks& kicks);
  // Sets `vector` pending at `target` and wakes it (its kick only if `kick`); false
  // when its APIC is disabled.
  bool PostLocked(int target, uint8_t vector, bool kick, Kicks& kicks);

  mutable std::mutex mutex_;
  std::vector<Apic> apics_;  // index = vCPU = APIC ID
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_LOCAL_APIC_H_
