// The one owner of a vCPU's KVM_SET_GUEST_DEBUG state. KVM keeps a single
// kvm_guest_debug per vCPU, and several mechanisms want a piece of it: the tracer
// and the gdb stub single-step (KVM_GUESTDBG_SINGLESTEP), the gdb stub sets hardware
// breakpoints (USE_HW_BP, DR0-DR3/DR7), and the hw-gd trap mechanism owns DR7.GD
// with the guest's own enabled breakpoints in their slots. Each asks here; this
// class merges the requests into one state and loads it when it changes, and tells
// a debug exit's owner from its DR6.
//
// What this host does with it (docs/host-notes.md, `sigvisor probe`): on PVM,
// single steps and execution breakpoints fire at CPL0 only, data watchpoints never.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_GUEST_DEBUG_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_GUEST_DEBUG_H_

#include <linux/kvm.h>

#include <array>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor::x86 {

inline constexpr uint64_t kDr6B0 = 1;          // B0..B3: bits 0..3
inline constexpr uint64_t kDr6Bd = 1u << 13;   // debug-register access detected
inline constexpr uint64_t kDr6Bs = 1u << 14;   // single step
inline constexpr uint64_t kDr7GdBit = 1u << 13;

class GuestDebug {
 public:
  enum class BreakKind { kExecute, kWrite, kAccess };

  // `vcpu` must outlive this object. Nothing is loaded until a request changes it.
  explicit GuestDebug(KvmVcpu& vcpu) : vcpu_(vcpu) {}
  GuestDebug(const GuestDebug&) = delete;
  GuestDebug& operator=(const GuestDebug&) = delete;

  // Single-stepping for one requester (a bit of `requesters`: the tracer, the
  // debugger); on while any requester wants it.
  static constexpr unsigned kStepTracer = 1;
  static constexpr unsigned kStepDebugger = 2;
  static constexpr unsigned kStepInjector = 4;
  static constexpr unsigned kStepSyscallCompletion = 8;
  absl::Status SetSingleStep(unsigned requester, bool on);
  bool single_stepping() const { return step_requesters_ != 0; }

  // KVM_GUESTDBG_BLOCKIRQ: no interrupt is injected while on, stepped or not; on
  // while any requester (a bit) wants it. The tracer: a step costs more than a tick's
  // period, so each stepped span of a kernel with timers (Linux) would end with a tick
  // pending and the trace be all timer work. A run's measured phases (run
  // --block-phase-interrupts, phase_interrupt_block.h): each phase the signal path alone.
  static constexpr unsigned kBlockTracer = 1;
  static constexpr unsigned kBlockPhases = 2;
  absl::Status SetBlockInterrupts(unsigned requester, bool on);
  bool blocking_interrupts() const { return block_requesters_ != 0; }

  // A VMM breakpoint in a free slot: execute (length 1), or a data watchpoint of
  // 1, 2, 4 or 8 bytes. Fails when all four slots are taken (by the VMM's own or,
  // under hw-gd, by the guest's enabled breakpoints) or the arguments are invalid.
  absl::StatusOr<int> AddBreakpoint(uint64_t address, BreakKind kind, int length);
  // Removes the VMM breakpoint with exactly these arguments; NotFound if none.
  absl::Status RemoveBreakpoint(uint64_t address, BreakKind kind, int length);
  absl::Status RemoveAllBreakpoints();

  // hw-gd: DR7.GD on, and the guest's debug registers (`dr`, `dr7`) loaded in the
  // slots it enabled. Fails if a slot it enables holds a VMM breakpoint.
  absl::Status SetGuestOwned(const std::array<uint64_t, 4>& dr, uint64_t dr7);

  // Whether a debug exit with this DR6 is the VMM's single step / which VMM
  // breakpoint slot it names (nullopt: none of the VMM's).
  bool IsVmmStep(uint64_t dr6) const { return single_stepping() && (dr6 & kDr6Bs); }
  std::optional<int> VmmBreakpointHit(uint64_t dr6) const;
  std::optional<uint64_t> BreakpointAddress(int slot) const;

  // Software breakpoints (int3) the VMM planted: KVM_GUESTDBG_USE_SW_BP, so that a
  // #BP exits instead of reaching the guest (hardware KVM; on PVM a CPL0 int3 is an
  // emulation failure either way and a CPL3 one always goes to the guest).
  absl::Status SetSoftwareBreakpoints(bool on);

  // Loads the state again although it did not change. KVM anchors a single step to
  // the RIP at which KVM_SET_GUEST_DEBUG asked for it: it sets RFLAGS.TF only while
  // the guest is still there, so after the VMM moves RIP (an emulated trap site, a
  // redirected kernel entry) the step must be asked for again at the new RIP, or the
  // guest runs on unstepped. A host that steps every CPL0 instruction whatever TF
  // says (PVM) hides this; hardware KVM does not.
  absl::Status Reanchor();

 private:
  struct Slot {
    bool used = false;
    uint64_t address = 0;
    BreakKind kind = BreakKind::kExecute;
    int length = 1;
  };
  absl::Status Load();

  KvmVcpu& vcpu_;
  unsigned step_requesters_ = 0;
  unsigned block_requesters_ = 0;
  std::array<Slot, 4> slots_;
  bool guest_owned_ = false;  // hw-gd
  bool software_ = false;
  std::array<uint64_t, 4> guest_dr_ = {};
  uint64_t guest_dr7_ = 0;
  std::optional<kvm_guest_debug> loaded_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_GUEST_DEBUG_H_
