// Which KVM vendor module the kernel runs /dev/kvm with, read from /sys/module: the
// host kind without booting a VM (DetectHost's answer; probe.h).
//
// x86 KVM is kvm.ko plus one vendor module, and the kernel registers one vendor at a
// time (a second one's init fails: "already loaded vendor module"):
//   kvm_pvm    PVM: a guest that does not use PVM's own paravirtual ABI (sigvisor's
//              kernel does not) runs its CPL0 code in PVM's emulator;
//   kvm_intel  VMX, kvm_amd SVM: guest CPL0 runs on the CPU, including when the CPU's
//              VMX/SVM is itself emulated (the hardware lane: nested SVM under TCG).
// A vendor built into the kernel has a /sys/module entry even when its init failed
// (an Intel kernel's built-in kvm_amd on an Intel CPU), so more than one entry, or
// none (no sysfs here), is no answer: the caller then measures (probe.cc).
#ifndef SIGVISOR_ARCH_X86_64_VMM_PROBE_KVM_VENDOR_H_
#define SIGVISOR_ARCH_X86_64_VMM_PROBE_KVM_VENDOR_H_

#include <filesystem>
#include <optional>
#include <string>

namespace sigvisor {

struct KvmVendorModule {
  std::string name;            // "kvm_pvm", "kvm_intel" or "kvm_amd"
  bool cpl0_emulated = false;  // true for kvm_pvm only
};

// The one vendor module `sys_module` (sysfs's module directory) lists, or nullopt
// when it lists none or several.
std::optional<KvmVendorModule> LoadedKvmVendor(
    const std::filesystem::path& sys_module = "/sys/module");

}  // namespace sigvisor

#endif  // SIGVISOR_ARCH_X86_64_VMM_PROBE_KVM_VENDOR_H_
