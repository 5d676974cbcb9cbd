#include "vmm/app/bench/kvm_target.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/app/bench/peer.h"
#include "vmm/app/images/embedded_images.h"

namespace sigvisor::bench {

absl::StatusOr<KvmBenchTarget> KvmBenchTarget::Create(const KvmSystem& kvm, const Matrix& matrix,
                                                      bool cpl0_emulated, RunSettings settings) {
  KvmBenchTarget target(kvm, matrix);
  target.cpl0_emulated_ = cpl0_emulated;
  target.settings_ = settings;
  target.settings_.memory_mib = matrix.memory_mib;  // the matrix records what its runs had
  for (const VariantInfo& variant : matrix.variants) {
    absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant.name);
    if (!build.ok()) return build.status();
    absl::StatusOr<ElfImage> image = ParseKernel(**build);
    if (!image.ok()) return image.status();
    target.images_.push_back(*std::move(image));
  }
  for (const std::string& trap : matrix.traps) {
    std::optional<x86::TrapMechanism> mechanism = x86::ParseTrapMechanism(trap);
    if (!mechanism) {
      return absl::InvalidArgumentError(
          absl::StrFormat("trap mechanism '%s' cannot run a bench", trap));
    }
    target.mechanisms_.push_back(*mechanism);
  }
  if (std::find(target.mechanisms_.begin(), target.mechanisms_.end(), x86::TrapMechanism::kPv) !=
      target.mechanisms_.end()) {
    for (const VariantInfo& variant : matrix.variants) {
      absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant.name + ",debugreg=pv");
      if (!build.ok()) {
        std::vector<std::string> with_pv;
        for (const KernelVariant& v : KernelVariants()) {
          if (v.name.find("debugreg=pv") != std::string_view::npos) with_pv.emplace_back(v.name);
        }
        return absl::InvalidArgumentError(absl::StrFormat(
            "--traps pv boots each build's debugreg=pv counterpart, and '%s' has none (built: "
            "%s)",
            variant.name, absl::StrJoin(with_pv, "; ")));
      }
      absl::StatusOr<ElfImage> image = ParseKernel(**build);
      if (!image.ok()) return image.status();
      target.pv_images_.push_back(*std::move(image));
    }
  }
  return target;
}

absl::StatusOr<RunSample> KvmBenchTarget::Run(const RunSpec& spec, std::string* console) const {
  x86::MachineConfig config = MachineConfigFor(
      settings_,
      {.cmdline = absl::StrFormat("workload=%s ops=%d", matrix_.workloads[spec.workload],
                                  matrix_.ops),
       .cpl0_emulated = cpl0_emulated_,
       .trap = mechanisms_[spec.trap],
       .check_clocks = true});  // each phase's clocks, at the vCPU's TSC rate
  std::vector<InjectionRecord> injections;
  AddFaultInjector(config, inject_specs_, inject_seed_, &injections);
  const ElfImage& image = config.trap == x86::TrapMechanism::kPv ? pv_images_[spec.variant]
                                                                 : images_[spec.variant];
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm_, image, config);
  if (!report.ok()) return report.status();
  if (console != nullptr) *console = report->result.console;
  RunSample sample = SampleFromResult(spec, report->result, cpl0_emulated_);
  for (const InjectionRecord& injection : injections) {
    ++sample.injections[std::string(InjectionOutcomeName(injection.outcome))];
  }
  return sample;
}

}  // namespace sigvisor::bench
