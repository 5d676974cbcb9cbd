#include "arch/x86_64/vmm/machine/boot_target.h"

#include <type_traits>

namespace sigvisor::x86 {

BootProtocol ProtocolOf(const BootTarget& target) {
  return std::visit(
      [](const auto& kind) {
        using Kind = std::decay_t<decltype(kind)>;
        if constexpr (std::is_same_v<Kind, MultibootKernel>) return BootProtocol::kMultiboot;
        if constexpr (std::is_same_v<Kind, LinuxKernel>) return BootProtocol::kLinux;
        if constexpr (std::is_same_v<Kind, RestoredVm>) return kind.protocol;
        return BootProtocol::kSigvisor;
      },
      target);
}

BootTarget BootTargetOf(const ElfImage& image) {
  if (image.abi_version()) return SigvisorKernel{};
  if (image.multiboot()) return MultibootKernel{};
  if (image.pvh_entry()) return LinuxKernel{.pvh = true};
  return SigvisorKernel{};
}

absl::Status AddMultibootOptions(BootTarget& target, std::string_view image_name,
                                 bool irqchip, const std::vector<std::string>& module_specs) {
  MultibootKernel* multiboot = std::get_if<MultibootKernel>(&target);
  if (multiboot == nullptr) {
    if (!module_specs.empty()) {
      return absl::InvalidArgumentError(
          "--module passes modules to a Multiboot kernel; this image is not one");
    }
    if (irqchip && std::holds_alternative<SigvisorKernel>(target)) {
      return absl::InvalidArgumentError(
          "--irqchip is for Multiboot kernels; sigvisor images run without an in-kernel "
          "irqchip (their traps rely on hlt reaching the VMM)");
    }
    return absl::OkStatus();
  }
  multiboot->image_name = std::string(image_name);
  multiboot->irqchip = irqchip;
  for (const std::string& spec : module_specs) {
    absl::StatusOr<MultibootModule> module = ReadMultibootModule(spec);
    if (!module.ok()) return module.status();
    multiboot->modules.push_back(*std::move(module));
  }
  return absl::OkStatus();
}

}  // namespace sigvisor::x86
