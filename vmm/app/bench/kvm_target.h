// The bench's runs under KVM: each boots the bundled kernel's variant in a fresh VM
// with `workload=W ops=N` on its command line and the run's trap mechanism; a Linux
// build boots its kernel with the embedded initramfs, whose init runs the workload's
// phases once per run (sigvisor_repeats=1: the bench's repetitions are the samples).
#ifndef SIGVISOR_VMM_APP_BENCH_KVM_TARGET_H_
#define SIGVISOR_VMM_APP_BENCH_KVM_TARGET_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/machine/saved_vm.h"
#include "arch/x86_64/vmm/trap/trap_engine.h"
#include "vmm/app/bench/matrix.h"
#include "vmm/app/bench/results.h"
#include "vmm/app/launch/run_settings.h"
#include "vmm/inject/injection_spec.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"
#include "vmm/snapshot/snapshot_header.h"

namespace sigvisor::bench {

// Which snapshots a bench restores (docs/snapshots.md): its builds' own, for every trap
// mechanism but pv, and their debugreg=pv counterparts', for pv (their kernels take the
// pv page at boot).
struct SnapshotKinds {
  bool plain = false;
  bool pv = false;
};
SnapshotKinds SnapshotKindsFor(const std::vector<TrapMechanism>& traps);

// The snapshots a bench restores, per variant of its matrix: `builds[v]` (when
// kinds.plain) and `pv_builds[v]`, the debugreg=pv counterpart's (when kinds.pv).
struct BenchSnapshots {
  std::vector<std::shared_ptr<const x86::SavedVm>> builds;
  std::vector<std::shared_ptr<const x86::SavedVm>> pv_builds;
};

// Where in a directory of a bench's snapshots the snapshot of `build` (its canonical
// name, as `sigvisor images` lists it) lives: DIR/<build>, so that `sigvisor snapshot
// --variant B --out DIR/B` makes one as well.
std::string BuildSnapshotDir(const std::string& dir, std::string_view build);

// bench --snapshots DIR: the snapshot of each of `variants` from DIR/<its name>/ and,
// with kinds.pv, of each one's debugreg=pv counterpart from DIR/<the counterpart's
// name>/ (accelerated's: DIR/accelerated,debugreg=pv/). Read and checked as files, with
// no KVM: a missing one is refused naming it and how to save it, a damaged one as `run
// --restore` refuses it. What depends on the host and the matrix is checked when a
// target takes them (KvmBenchTarget::RestoreSnapshots).
absl::StatusOr<BenchSnapshots> ReadBenchSnapshots(const std::string& dir,
                                                  const std::vector<VariantInfo>& variants,
                                                  SnapshotKinds kinds);

class KvmBenchTarget {
 public:
  // Parses every variant's image once (a Linux kernel decompressed once). `kvm` must
  // outlive the target. A pv run boots the variant's debugreg=pv counterpart (the same
  // seed settings): a variant that has none is refused with the builds that do. A
  // Linux build is refused a trap mechanism its board refuses (x86::LinuxBoard::CheckTrap)
  // and a workload its init does not have. Every run has `settings` (timeout, sandbox),
  // with the matrix's memory.
  static absl::StatusOr<KvmBenchTarget> Create(const KvmSystem& kvm, const Matrix& matrix,
                                               bool cpl0_emulated, launch::RunSettings settings);

  // --inject: every run injects these (the same points in every run: --seed is fixed)
  // and records how its injections ended.
  void SetInjection(std::vector<InjectionSpec> specs, uint64_t seed) {
    inject_specs_ = std::move(specs);
    inject_seed_ = seed;
  }

  // bench --save-snapshots DIR, and --restore in a scratch DIR: boots each build once
  // to its guest's quiescent point and saves it in DIR/<build name>/ (BuildSnapshotDir),
  // the kinds the matrix's trap mechanisms restore (SnapshotKindsFor; a pv counterpart
  // booted with pv). Returns the directories written, in order. Refused for a Linux
  // build where CPL0 is emulated (its FPU state cannot be read there, docs/snapshots.md).
  // `version` and `host_kind` go into
  // the snapshots' headers.
  absl::StatusOr<std::vector<std::string>> SaveSnapshots(const std::string& dir,
                                                         const std::string& version,
                                                         const std::string& host_kind) const;

  // From now on every run restores its build's snapshot (ReadBenchSnapshots) instead of
  // booting (docs/snapshots.md); the runs' per-op counts are a booted run's. Each
  // snapshot is checked first against `host` (host kind, guest ABI), this host's CPU,
  // its build's image, the matrix's RAM and each trap mechanism it serves, and its
  // memory image's checksums: one that does not fit is refused before the first run
  // rather than failing every run. Refused with --inject (injection reads the boot
  // protocol, which a restored guest has passed).
  absl::Status RestoreSnapshots(BenchSnapshots snapshots, const RestoreHost& host);

  // `console`, when given, receives the guest's console (bench --peer reads the guest's
  // own timing lines from it).
  absl::StatusOr<RunSample> Run(const RunSpec& spec, std::string* console = nullptr) const;

  // The executable bytes of variant `v`'s kernel (for a Linux build, known once loaded).
  uint64_t text_bytes(size_t v) const;

 private:
  KvmBenchTarget(const KvmSystem& kvm, const Matrix& matrix) : kvm_(&kvm), matrix_(matrix) {}
  // The FNV-1a of the image variant `v` runs under `trap` (its pv counterpart's for pv).
  uint64_t ImageFnv(size_t v, TrapMechanism trap) const;

  const KvmSystem* kvm_;
  Matrix matrix_;
  std::vector<ElfImage> images_;                 // per variant
  // Per variant: the FNV-1a of its image as given (a Linux build's file), which its
  // snapshots are taken and checked by.
  std::vector<uint64_t> image_fnvs_;
  // Per variant: what it boots as; a Linux kernel's with what its boot needs besides
  // its vmlinux (images_), the embedded initramfs included.
  std::vector<x86::BootTarget> targets_;
  // --traps pv: per variant, its debugreg=pv counterpart (the build whose kernel
  // writes its debug registers into the VMM's page); empty without pv.
  std::vector<ElfImage> pv_images_;
  std::vector<std::string> pv_names_;  // their canonical names ("accelerated,debugreg=pv")
  bool cpl0_emulated_ = false;
  launch::RunSettings settings_;
  // Restoring (RestoreSnapshots): per variant, its snapshot (and its pv counterpart's);
  // both empty: boot.
  std::vector<std::shared_ptr<const x86::SavedVm>> saved_;
  std::vector<std::shared_ptr<const x86::SavedVm>> saved_pv_;
  std::vector<InjectionSpec> inject_specs_;
  uint64_t inject_seed_ = 1;
};

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_KVM_TARGET_H_
