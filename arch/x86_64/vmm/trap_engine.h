// The trap mechanisms of an x86-64 KVM run: how guest debug-register accesses and
// segment-register loads reach the VMM, which emulates and counts each one.
//
//   patch  every site (vmm/trap/site_table.h) starts with `hlt`; KVM_EXIT_HLT with
//          RIP = site + 1 is a trap, emulated from the site's decoded operands.
//   hw-gd  KVM_SET_GUEST_DEBUG with USE_HW_BP and DR7.GD: a guest DR access exits as
//          KVM_EXIT_DEBUG with DR6.BD and is decoded there; the guest's own enabled
//          breakpoints live in the same registers and their #DBs are reflected to the
//          guest. Segment loads are still patched (GD cannot see them). Works on
//          hardware KVM; on PVM hosts the VMM's GD never exits (see `sigvisor probe`).
//   off    nothing is trapped (the control run).
//   pv     the guest reports its own traps: not available yet (it needs guest-kernel
//          support that does not exist yet).
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_ENGINE_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_ENGINE_H_

#include <linux/kvm.h>

#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/kvm_trap_cpu.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/exit_interceptor.h"
#include "vmm/trap/decoder.h"
#include "vmm/trap/dr_shadow.h"
#include "vmm/trap/site_table.h"

namespace sigvisor::x86 {

enum class TrapMechanism { kOff, kPatch, kHwGd, kPv };

std::string_view TrapMechanismName(TrapMechanism mechanism);  // "off", "patch", "hw-gd", "pv"
std::optional<TrapMechanism> ParseTrapMechanism(std::string_view name);

class TrapEngine : public ExitInterceptor {
 public:
  // Arms `mechanism` (not kOff) for `image`, already loaded into `memory`, on a vCPU
  // that SetUpVcpu prepared with `cpuid`: scans the image, patches the sites, takes
  // over the debug registers. `sync_regs`: the host has KVM_CAP_SYNC_REGS for
  // registers, segment registers and events. `guest_debug` (may be null): the vCPU's
  // guest-debug arbiter, which hw-gd then shares with a debugger or tracer. Every
  // argument must outlive the engine.
  static absl::StatusOr<std::unique_ptr<TrapEngine>> Install(
      TrapMechanism mechanism, const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
      std::span<const kvm_cpuid_entry2> cpuid, bool sync_regs, GuestDebug* guest_debug = nullptr);

  Interception Intercept(const VmExit& exit) override;

  TrapMechanism mechanism() const { return mechanism_; }
  const trap::SiteTable& sites() const { return sites_; }
  const trap::DrShadow& debug_registers() const { return shadow_; }

 private:
  TrapEngine(TrapMechanism mechanism, const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
             bool sync_regs, GuestDebug* guest_debug, trap::Decoder decoder,
             trap::SiteTable sites, trap::DrShadow shadow);

  Interception OnHalt();
  Interception OnDebug(const VmExit& exit);
  Interception Emulate(const trap::TrapInsn& insn, uint64_t address, const std::string& label,
                       const std::string& text, kvm_regs& regs);

  TrapMechanism mechanism_;
  const ElfImage& image_;
  GuestDebug* guest_debug_;
  KvmTrapCpu cpu_;
  trap::Decoder decoder_;
  trap::SiteTable sites_;
  trap::DrShadow shadow_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_ENGINE_H_
