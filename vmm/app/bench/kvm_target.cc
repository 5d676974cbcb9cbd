#include "vmm/app/bench/kvm_target.h"

#include <algorithm>
#include <filesystem>

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
#include "vmm/base/fnv1a.h"

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

// The build --traps pv runs in place of `variant`: its debugreg=pv counterpart (the same
// seed settings). A variant that has none is refused with the builds that do.
absl::StatusOr<const KernelVariant*> PvCounterpart(const VariantInfo& variant) {
  absl::StatusOr<const KernelVariant*> build =
      ResolveVariant(variant.build_name() + ",debugreg=pv");
  if (build.ok()) return build;
  std::vector<std::string> with_pv;
  for (const KernelVariant& v : KernelVariants()) {
    if (v.name.find("debugreg=pv") != std::string_view::npos) with_pv.emplace_back(v.name);
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "--traps pv boots each build's debugreg=pv counterpart, and '%s' has none (built: %s)",
      variant.name, absl::StrJoin(with_pv, "; ")));
}

// The machine a variant's runs get (its "@vcpus=N@ipi=M@lapic=L"), as `run --vcpus
// --ipi --lapic` sets it.
void SetMachine(const VariantInfo& variant, x86::MachineConfig& config) {
  config.vcpus = variant.vcpus;
  if (!variant.ipi.empty()) {
    // ParseVariantList took it from ParseIpiMethod's own names.
    if (absl::StatusOr<x86::IpiMethod> ipi = x86::ParseIpiMethod(variant.ipi); ipi.ok()) {
      config.ipi = *ipi;
    }
  }
  if (!variant.lapic.empty()) {
    // Likewise from ParseLapic's.
    if (absl::StatusOr<x86::Lapic> lapic = x86::ParseLapic(variant.lapic); lapic.ok()) {
      config.lapic = *lapic;
    }
  }
}

// What `run` would refuse of `variant`'s machine under each of the matrix's trap
// mechanisms (its board's checks: x86::CheckMachineConfig), before any run.
absl::Status CheckVariantMachine(const VariantInfo& variant, const ElfImage& image,
                                 const x86::BootTarget& target, const Matrix& matrix,
                                 const launch::RunSettings& settings, bool cpl0_emulated) {
  if (variant.default_machine()) return absl::OkStatus();
  for (TrapMechanism trap : matrix.traps) {
    x86::MachineConfig config = launch::MachineConfigFor(
        settings, {.cmdline = "", .cpl0_emulated = cpl0_emulated, .trap = trap});
    config.target = target;
    SetMachine(variant, config);
    if (absl::Status s = x86::CheckMachineConfig(image, config); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrFormat("--variants: '%s' with --traps %s: %s", variant.name,
                                          TrapMechanismName(trap), s.message()));
    }
  }
  return absl::OkStatus();
}

// What a restore of `saved` boots as: the kind of guest its header names, given the
// image whose FNV-1a (as given) is `image_fnv1a64`.
x86::RestoredVm RestoredFrom(const std::shared_ptr<const x86::SavedVm>& saved,
                             uint64_t image_fnv1a64) {
  return x86::RestoredVm{saved,
                         saved->header.guest_kind == "linux" ? x86::BootProtocol::kLinux
                                                             : x86::BootProtocol::kSigvisor,
                         image_fnv1a64};
}

}  // namespace

SnapshotKinds SnapshotKindsFor(const std::vector<TrapMechanism>& traps) {
  SnapshotKinds kinds;
  for (TrapMechanism trap : traps) (trap == TrapMechanism::kPv ? kinds.pv : kinds.plain) = true;
  return kinds;
}

std::string BuildSnapshotDir(const std::string& dir, std::string_view build) {
  if (!dir.empty() && dir.back() == '/') return absl::StrFormat("%s%s", dir, build);
  return absl::StrFormat("%s/%s", dir, build);
}

absl::StatusOr<BenchSnapshots> ReadBenchSnapshots(const std::string& dir,
                                                  const std::vector<VariantInfo>& variants,
                                                  SnapshotKinds kinds) {
  auto read = [&](std::string_view build) -> absl::StatusOr<std::shared_ptr<const x86::SavedVm>> {
    const std::string path = BuildSnapshotDir(dir, build);
    std::error_code error;
    if (!std::filesystem::exists(path + "/state", error)) {
      return absl::NotFoundError(absl::StrFormat(
          "%s holds no snapshot of build '%s' (no %s/state): save this bench's builds there "
          "with `sigvisor bench --save-snapshots %s` and its --variants and --traps",
          dir, build, path, dir));
    }
    absl::StatusOr<x86::SavedVm> saved = x86::ReadSavedVm(path);
    if (!saved.ok()) return saved.status();
    return std::make_shared<const x86::SavedVm>(*std::move(saved));
  };
  BenchSnapshots snapshots;
  for (const VariantInfo& variant : variants) {
    if (kinds.plain) {
      absl::StatusOr<std::shared_ptr<const x86::SavedVm>> saved = read(variant.name);
      if (!saved.ok()) return saved.status();
      snapshots.builds.push_back(*std::move(saved));
    }
    if (kinds.pv) {
      absl::StatusOr<const KernelVariant*> pv = PvCounterpart(variant);
      if (!pv.ok()) return pv.status();
      absl::StatusOr<std::shared_ptr<const x86::SavedVm>> saved = read((*pv)->name);
      if (!saved.ok()) return saved.status();
      snapshots.pv_builds.push_back(*std::move(saved));
    }
  }
  return snapshots;
}

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
      target.image_fnvs_.push_back(loaded->source_fnv1a64);
      continue;
    }
    absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant.build_name());
    if (!build.ok()) return build.status();
    absl::StatusOr<ElfImage> image = ParseKernel(**build);
    if (!image.ok()) return image.status();
    target.images_.push_back(*std::move(image));
    target.targets_.push_back(x86::BootTargetOf(target.images_.back()));
    target.image_fnvs_.push_back(Fnv1a64(target.images_.back().bytes()));
  }
  // Each variant's machine under each trap mechanism, before the pv counterparts
  // (several vCPUs take --traps off only, and run's check says so).
  for (size_t v = 0; v < matrix.variants.size(); ++v) {
    if (absl::Status s =
            CheckVariantMachine(matrix.variants[v], target.images_[v], target.targets_[v], matrix,
                                target.settings_, cpl0_emulated);
        !s.ok()) {
      return s;
    }
  }
  if (std::find(matrix.traps.begin(), matrix.traps.end(), TrapMechanism::kPv) !=
      matrix.traps.end()) {
    for (const VariantInfo& variant : matrix.variants) {
      absl::StatusOr<const KernelVariant*> build = PvCounterpart(variant);
      if (!build.ok()) return build.status();
      absl::StatusOr<ElfImage> image = ParseKernel(**build);
      if (!image.ok()) return image.status();
      target.pv_images_.push_back(*std::move(image));
      target.pv_names_.emplace_back((*build)->name);
    }
  }
  return target;
}

uint64_t KvmBenchTarget::ImageFnv(size_t v, TrapMechanism trap) const {
  return trap == TrapMechanism::kPv ? Fnv1a64(pv_images_[v].bytes()) : image_fnvs_[v];
}

uint64_t KvmBenchTarget::text_bytes(size_t v) const {
  uint64_t bytes = 0;
  for (const ElfSection& section : images_[v].executable_sections()) bytes += section.bytes.size();
  return bytes;
}

absl::StatusOr<std::vector<std::string>> KvmBenchTarget::SaveSnapshots(
    const std::string& dir, const std::string& version, const std::string& host_kind) const {
  // The directory first (its last level, as `sigvisor snapshot --out` makes its own),
  // so that a path that cannot be one fails before the first boot.
  std::error_code error;
  std::filesystem::create_directory(dir, error);
  if (error || !std::filesystem::is_directory(dir, error)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot make the snapshot directory '%s'%s (its parent must exist)", dir,
        error ? absl::StrFormat(": %s", error.message()) : std::string(": not a directory")));
  }
  std::vector<std::string> written;
  // One snapshot of `image`, booted with `trap` (off, or pv for a pv counterpart).
  auto save = [&](size_t v, const ElfImage& image, TrapMechanism trap,
                  const std::string& name) -> absl::Status {
    x86::MachineConfig config = launch::MachineConfigFor(
        settings_, {.cmdline = "", .cpl0_emulated = cpl0_emulated_, .trap = trap});
    config.target = targets_[v];
    config.save_to = BuildSnapshotDir(dir, name);
    const VariantInfo& variant = matrix_.variants[v];
    SetMachine(variant, config);  // several vCPUs: every one saved (docs/snapshots.md)
    // A Linux build's snapshot names its kernel's file, as `sigvisor snapshot --image`'s.
    config.save_header =
        variant.linux_kernel()
            ? x86::NewSnapshotHeader(ImageFnv(v, trap), variant.linux_image, "", version, host_kind)
            : x86::NewSnapshotHeader(ImageFnv(v, trap), "kernel", name, version, host_kind);
    if (variant.linux_kernel()) config.save_header.guest_kind = "linux";
    absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm_, image, config);
    if (!report.ok()) return report.status();
    if (report->result.outcome != Outcome::kSaved) {
      return absl::InternalError(
          absl::StrFormat("%s did not reach its quiescent point (%s: %s): nothing was saved", name,
                          OutcomeName(report->result.outcome), report->result.diagnosis));
    }
    written.push_back(config.save_to);
    return absl::OkStatus();
  };
  const SnapshotKinds kinds = SnapshotKindsFor(matrix_.traps);
  for (size_t v = 0; v < matrix_.variants.size(); ++v) {
    const VariantInfo& variant = matrix_.variants[v];
    if (kinds.plain) {
      if (absl::Status s = save(v, images_[v], TrapMechanism::kOff, variant.name); !s.ok()) {
        return s;
      }
    }
    if (kinds.pv) {
      if (absl::Status s = save(v, pv_images_[v], TrapMechanism::kPv, pv_names_[v]); !s.ok()) {
        return s;
      }
    }
  }
  return written;
}

absl::Status KvmBenchTarget::RestoreSnapshots(BenchSnapshots snapshots, const RestoreHost& host) {
  if (!inject_specs_.empty()) {
    return absl::InvalidArgumentError(
        "--inject with restored snapshots: fault injection reads the boot protocol, which a "
        "restored guest has passed; boot instead");
  }
  const SnapshotKinds kinds = SnapshotKindsFor(matrix_.traps);
  const size_t builds = matrix_.variants.size();
  if ((kinds.plain && snapshots.builds.size() != builds) ||
      (kinds.pv && snapshots.pv_builds.size() != builds)) {
    return absl::InternalError("the snapshots given are not one per build of the matrix");
  }
  for (size_t v = 0; v < builds; ++v) {
    for (TrapMechanism trap : matrix_.traps) {
      const bool pv = trap == TrapMechanism::kPv;
      const std::shared_ptr<const x86::SavedVm>& saved =
          pv ? snapshots.pv_builds[v] : snapshots.builds[v];
      if (absl::Status s = CheckRestoreHost(saved->header, host, saved->dir); !s.ok()) return s;
      x86::MachineConfig config = launch::MachineConfigFor(
          settings_, {.cmdline = "", .cpl0_emulated = cpl0_emulated_, .trap = trap});
      config.target = RestoredFrom(saved, ImageFnv(v, trap));
      SetMachine(matrix_.variants[v], config);
      if (absl::Status s = x86::CheckRestore(*kvm_, pv ? pv_images_[v] : images_[v], config);
          !s.ok()) {
        return s;
      }
    }
  }
  saved_ = std::move(snapshots.builds);
  saved_pv_ = std::move(snapshots.pv_builds);
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
  SetMachine(matrix_.variants[spec.variant], config);
  const auto& restoring = config.trap == TrapMechanism::kPv ? saved_pv_ : saved_;
  if (!restoring.empty()) {
    config.target = RestoredFrom(restoring[spec.variant], ImageFnv(spec.variant, config.trap));
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
