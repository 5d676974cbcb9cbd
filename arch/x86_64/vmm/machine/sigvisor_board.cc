#include "arch/x86_64/vmm/machine/sigvisor_board.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/machine/boot_layout.h"
#include "arch/x86_64/vmm/machine/long_mode.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_loader.h"
#include "vmm/machine/boot_info.h"

namespace sigvisor::x86 {

absl::StatusOr<std::unique_ptr<Board>> SigvisorBoard::Make(const ElfImage& image,
                                                           const SigvisorKernel&,
                                                           const MachineConfig& config) {
  if (absl::Status s = CheckAbiVersion(image, SIGVISOR_ABI_VERSION); !s.ok()) {
    if (image.abi_version()) return s;
    return absl::Status(s.code(), absl::StrCat(s.message(),
                                               "; nor is it a Multiboot kernel (no Multiboot "
                                               "v1 header, magic 0x1BADB002, in its first "
                                               "8 KiB)"));
  }
  if (config.vcpus != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--vcpus %d is for Multiboot kernels; sigvisor images run on one vCPU", config.vcpus));
  }
  if (absl::Status s = CheckLoadsAboveBootState(image); !s.ok()) return s;
  return std::unique_ptr<Board>(new SigvisorBoard(config));
}

SigvisorBoard::SigvisorBoard(const MachineConfig& config)
    : cmdline_(config.cmdline),
      boot_flags_((config.cpl0_emulated ? SIGVISOR_BOOT_CPL0_EMULATED : 0u) |
                  (config.injection_events ? SIGVISOR_BOOT_INJECT_EVENTS : 0u)),
      pv_page_gpa_(config.trap == TrapMechanism::kPv ? kPvPageGpa : 0) {}

absl::StatusOr<std::string> SigvisorBoard::Load(const ElfImage& image, GuestMemory& memory,
                                                KvmVcpu& vcpu,
                                                std::span<const kvm_cpuid_entry2> cpuid) {
  if (absl::Status s = LoadElfImage(image, memory); !s.ok()) return s;
  if (absl::Status s = WriteBootTables(memory); !s.ok()) return s;
  const BootInfoParams boot_info = {.image_end = image.load_end(),
                                    .flags = boot_flags_,
                                    .cmdline = cmdline_,
                                    .pv_page_gpa = pv_page_gpa_};
  if (absl::Status s = WriteBootInfo(memory, kBootInfoGpa, boot_info); !s.ok()) return s;
  if (absl::Status s = SetUpVcpu(vcpu, image.entry(), kBootInfoGpa, cpuid); !s.ok()) return s;
  return cmdline_;
}

absl::Status SigvisorBoard::Attach(const BoardWiring& wiring) {
  // The guest protocol takes the hypercalls no interceptor registered for.
  guest_protocol_.emplace(wiring.memory, wiring.console);
  if (absl::Status s = guest_protocol_->Register(wiring.hypercalls); !s.ok()) return s;
  serial_.emplace(wiring.console);
  hypercall_ports_.emplace(wiring.hypercalls);
  for (absl::Status s : {
           wiring.bus.Register(AddressSpace::kPort, kSerialPort, Serial16550::kPortCount,
                               &*serial_),
           wiring.bus.Register(AddressSpace::kPort, kDebugExitPort, DebugExit::kPortCount,
                               &debug_exit_),
           wiring.bus.Register(AddressSpace::kPort, SIGVISOR_HC_PORT_BASE,
                               HypercallDevice::kPortCount, &*hypercall_ports_),
       }) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace sigvisor::x86
