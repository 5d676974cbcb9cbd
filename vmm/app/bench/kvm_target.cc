#include "vmm/app/bench/kvm_target.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/machine/linux_board.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/app/bench/peer.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/image.h"
#include "vmm/app/launch/warmup.h"

namespace sigvisor::bench {

namespace {

// A Linux build's kernel, loaded as `run --image` loads it, with the embedded
// initramfs; refused when the matrix asks what it cannot run. The Linux board says
// what that is, asked before the kernel is loaded; the refusal names the flags.
absl::StatusOr<launch::LoadedImage> LoadLinuxBuild(const VariantInfo& variant, const Matrix& matrix) {
  for (TrapMechanism trap : matrix.traps) {
    if (!x86::LinuxBoard::CheckTrap(trap).ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--variants: %s runs with --traps off only (the trap mechanisms patch the bundled "
          "kernel's sites): give --traps off",
          variant.name));
    }
  }
  for (const std::string& workload : matrix.workloads) {
    if (absl::Status s =
            launch::GuestWords(launch::KernelDialect::kLinuxInit, workload, "", "", "").status();
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--workloads: %s cannot run '%s': %s", variant.name, workload, s.message()));
    }
  }
  absl::StatusOr<launch::LoadedImage> loaded = launch::LoadImage(variant.linux_image, "baseline");
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat("--variants: ", loaded.status().message()));
  }
  if (!loaded->linux_kernel()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--variants: linux=%s is not a Linux kernel (give a bzImage, or a vmlinux with a PVH "
        "note)",
        variant.linux_image));
  }
  // The embedded initramfs, as `run --image` gives it (its RAM is the matrix's).
  if (absl::Status s = launch::PrepareGuest(*loaded, launch::GuestRequest{}).status(); !s.ok()) {
    return s;
  }
  return loaded;
}

}  // namespace

absl::StatusOr<KvmBenchTarget> KvmBenchTarget::Create(const KvmSystem& kvm, const Matrix& matrix,
                                                      bool cpl0_emulated, launch::RunSettings settings) {
  KvmBenchTarget target(kvm, matrix);
  target.cpl0_emulated_ = cpl0_emulated;
  target.settings_ = settings;
  target.settings_.memory_mib = matrix.memory_mib;  // the matrix records what its runs had
  for (const VariantInfo& variant : matrix.variants) {
    if (variant.linux_kernel()) {
      absl::StatusOr<launch::LoadedImage> loaded = LoadLinuxBuild(variant, matrix);
      if (!loaded.ok()) return loaded.status();
      target.images_.push_back(std::move(loaded->elf));
      target.targets_.push_back(std::move(loaded->target));
      continue;
    }
    absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant.name);
    if (!build.ok()) return build.status();
    absl::StatusOr<ElfImage> image = ParseKernel(**build);
    if (!image.ok()) return image.status();
    target.images_.push_back(*std::move(image));
    target.targets_.push_back(x86::BootTargetOf(target.images_.back()));
  }
  if (std::find(matrix.traps.begin(), matrix.traps.end(), TrapMechanism::kPv) !=
      matrix.traps.end()) {
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

uint64_t KvmBenchTarget::text_bytes(size_t v) const {
  uint64_t bytes = 0;
  for (const ElfSection& section : images_[v].executable_sections()) bytes += section.bytes.size();
  return bytes;
}

absl::Status KvmBenchTarget::UseSnapshots(const std::string& dir, const std::string& version,
                                          const std::string& host_kind) {
  if (!inject_specs_.empty()) {
    return absl::InvalidArgumentError(
        "--restore with --inject: fault injection reads the boot protocol, which a restored "
        "guest has passed; boot instead");
  }
  // One snapshot of `image`, booted with `trap` (off, or pv for a pv counterpart).
  auto take = [&](size_t v, const ElfImage& image, TrapMechanism trap, const std::string& name)
      -> absl::StatusOr<std::shared_ptr<const x86::SavedVm>> {
    x86::MachineConfig config = launch::MachineConfigFor(
        settings_, {.cmdline = "", .cpl0_emulated = cpl0_emulated_, .trap = trap});
    config.target = targets_[v];
    config.save_to = dir + "/" + name;
    config.save_header =
        x86::NewSnapshotHeader(image, "kernel", name, version, host_kind);
    absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm_, image, config);
    if (!report.ok()) return report.status();
    if (report->result.outcome != Outcome::kSaved) {
      return absl::InternalError(absl::StrFormat(
          "--restore: %s did not reach its quiescent point (%s: %s)", name,
          OutcomeName(report->result.outcome), report->result.diagnosis));
    }
    absl::StatusOr<x86::SavedVm> saved = x86::ReadSavedVm(config.save_to);
    if (!saved.ok()) return saved.status();
    return std::make_shared<const x86::SavedVm>(*std::move(saved));
  };
  for (size_t v = 0; v < matrix_.variants.size(); ++v) {
    const VariantInfo& variant = matrix_.variants[v];
    if (!std::holds_alternative<x86::SigvisorKernel>(targets_[v])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--restore: %s names no quiescent point to save at (only the bundled kernel does "
          "today); run it without --restore",
          variant.name));
    }
    absl::StatusOr<std::shared_ptr<const x86::SavedVm>> saved =
        take(v, images_[v], TrapMechanism::kOff, variant.name);
    if (!saved.ok()) return saved.status();
    saved_.push_back(*std::move(saved));
    if (!pv_images_.empty()) {
      absl::StatusOr<std::shared_ptr<const x86::SavedVm>> saved_pv =
          take(v, pv_images_[v], TrapMechanism::kPv, variant.name + ",debugreg=pv");
      if (!saved_pv.ok()) return saved_pv.status();
      saved_pv_.push_back(*std::move(saved_pv));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RunSample> KvmBenchTarget::Run(const RunSpec& spec, std::string* console) const {
  const bool linux_kernel = std::holds_alternative<x86::LinuxKernel>(targets_[spec.variant]);
  const std::string& workload = matrix_.workloads[spec.workload];
  absl::StatusOr<std::string> cmdline =
      linux_kernel ? launch::GuestWords(launch::KernelDialect::kLinuxInit, workload,
                                        absl::StrCat(matrix_.ops),
                                        launch::WarmupValue(matrix_.warmup, workload),
                                        "sigvisor_repeats=1")
                   : BundledKernelWords(workload, matrix_);
  if (!cmdline.ok()) return cmdline.status();
  x86::MachineConfig config = launch::MachineConfigFor(
      settings_,
      {.cmdline = *cmdline,
       .cpl0_emulated = cpl0_emulated_,
       .trap = matrix_.traps[spec.trap],
       .check_clocks = true});  // each phase's clocks, at the vCPU's TSC rate
  config.target = targets_[spec.variant];
  if (!saved_.empty()) {
    config.target = x86::RestoredVm{config.trap == TrapMechanism::kPv ? saved_pv_[spec.variant]
                                                                       : saved_[spec.variant]};
  }
  std::vector<InjectionRecord> injections;
  launch::AddFaultInjector(config, inject_specs_, inject_seed_, &injections);
  const ElfImage& image =
      config.trap == TrapMechanism::kPv ? pv_images_[spec.variant] : images_[spec.variant];
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
