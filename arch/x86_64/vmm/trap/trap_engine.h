// The trap mechanisms of an x86-64 KVM run (TrapMechanism, vmm/run/trap_mechanism.h):
// how guest debug-register accesses and segment-register loads reach the VMM, which
// emulates and counts each one.
//
//   patch  every site (arch/x86_64/vmm/trap/site_table.h) starts with `hlt`; KVM_EXIT_HLT with
//          RIP = site + 1 is a trap, emulated from the site's decoded operands.
//   hw-gd  KVM_SET_GUEST_DEBUG with USE_HW_BP and DR7.GD: a guest DR access exits as
//          KVM_EXIT_DEBUG with DR6.BD and is decoded there; the guest's own enabled
//          breakpoints live in the same registers and their #DBs are reflected to the
//          guest. Segment loads are still patched (GD cannot see them). Works on
//          hardware KVM; on PVM hosts the VMM's GD never exits (see `sigvisor probe`).
//   pv     nothing is patched: a kernel built with debugreg=pv writes its debug
//          registers into a page it shares with the VMM (arch/x86_64/vmm/trap/pv_page.h) and
//          counts them there, per register and per calling site, with no exit; a
//          hypercall asks for a load only when the hardware must change, and the DR
//          shadow decides as for patch. Segment-base wrmsrs are counted the same way
//          (and stay native); swapgs and segment-register loads are not covered.
//          The engine reads the page at every phase boundary and at the end.
//   off    nothing is trapped (the control run).
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_TRAP_ENGINE_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_TRAP_ENGINE_H_

#include <linux/kvm.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/trap/decoder.h"
#include "arch/x86_64/vmm/trap/dr_shadow.h"
#include "arch/x86_64/vmm/trap/kvm_trap_cpu.h"
#include "arch/x86_64/vmm/trap/pv_page.h"
#include "arch/x86_64/vmm/trap/site_table.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/exit_interceptor.h"
#include "vmm/run/trap_mechanism.h"

namespace sigvisor::x86 {

class TrapEngine : public ExitInterceptor {
 public:
  // Arms `mechanism` (not kOff) for `image`, already loaded into `memory`, on a vCPU
  // that SetUpVcpu prepared with `cpuid`: scans the image, patches the sites, takes
  // over the debug registers. `sync_regs`: the host has KVM_CAP_SYNC_REGS for
  // registers, segment registers and events. `guest_debug` (may be null): the vCPU's
  // guest-debug arbiter, which hw-gd then shares with a debugger or tracer. Every
  // argument must outlive the engine.
  // `pv_page_gpa` (kPv only): where the pv page goes, as the boot info says; the
  // image must be a debugreg=pv build (it has pv_set_debugreg). `restored`: the guest
  // was restored from a snapshot, so its pv page is already laid out and in use
  // (adopted, not rewritten); patch and hw-gd install as at boot.
  static absl::StatusOr<std::unique_ptr<TrapEngine>> Install(
      TrapMechanism mechanism, const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
      std::span<const kvm_cpuid_entry2> cpuid, bool sync_regs, GuestDebug* guest_debug = nullptr,
      uint64_t pv_page_gpa = 0, bool restored = false);

  Interception Intercept(const VmExit& exit) override;
  std::vector<TrapBatch> CollectTraps() override;

  TrapMechanism mechanism() const { return mechanism_; }
  const trap::SiteTable& sites() const { return sites_; }
  const trap::DrShadow& debug_registers() const { return shadow_; }

 private:
  TrapEngine(TrapMechanism mechanism, const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
             bool sync_regs, GuestDebug* guest_debug, trap::Decoder decoder,
             trap::SiteTable sites, trap::DrShadow shadow);

  static absl::StatusOr<std::unique_ptr<TrapEngine>> InstallPv(
      const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
      std::span<const kvm_cpuid_entry2> cpuid, bool sync_regs, GuestDebug* guest_debug,
      uint64_t pv_page_gpa, bool restored);
  Interception OnHalt();
  Interception OnPvLoad(const VmExit& exit);
  Interception OnDebug(const VmExit& exit);
  // `label` must stay valid per exit_interceptor.h's contract (a site's symbol, or
  // LabelAt's); `text` is used only in a failure's diagnosis.
  Interception Emulate(const trap::TrapInsn& insn, uint64_t address, std::string_view label,
                       std::string_view text, kvm_regs& regs);
  // The ledger's detail for a trap of `kind` raising `fault`: "trap dr_write", "trap
  // dr_read raising #GP", formatted the first time and kept.
  std::string_view DetailFor(trap::TrapKind kind, const std::optional<trap::Fault>& fault);
  // hw-gd: the symbol+offset of a DR access at `rip`, symbolized the first time.
  std::string_view LabelAt(uint64_t rip);

  TrapMechanism mechanism_;
  const ElfImage& image_;
  GuestDebug* guest_debug_;
  KvmTrapCpu cpu_;
  trap::Decoder decoder_;
  trap::SiteTable sites_;
  trap::DrShadow shadow_;
  std::optional<trap::PvPage> pv_;  // kPv
  // Texts an Interception views (exit_interceptor.h: they must outlive the next
  // Intercept()), made once so a trapped exit's timed handling neither formats nor
  // allocates after the first of its kind. std::map: its nodes never move, so a view
  // of a short (in-object) string stays valid as entries are added.
  std::string pv_load_detail_;                                // kPv's load hypercall
  std::map<std::pair<trap::TrapKind, int>, std::string> details_;  // (kind, vector or -1)
  std::map<uint64_t, std::string> labels_;                    // hw-gd: RIP -> symbol+offset
};

// The kinds of trap each mechanism counts, for reports: patch and hw-gd all four
// (hw-gd's segment loads patched), pv the guest's DR writes and segment-base wrmsrs.
std::string_view TrapCoverage(TrapMechanism mechanism);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_TRAP_ENGINE_H_
