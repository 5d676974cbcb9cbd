// The bench's runs under KVM: each boots the bundled kernel's variant in a fresh VM
// with `workload=W ops=N` on its command line and the run's trap mechanism; a Linux
// build boots its kernel with the embedded initramfs, whose init runs the workload's
// phases once per run (sigvisor_repeats=1: the bench's repetitions are the samples).
#ifndef SIGVISOR_VMM_APP_BENCH_KVM_TARGET_H_
#define SIGVISOR_VMM_APP_BENCH_KVM_TARGET_H_

#include <memory>
#include <optional>
#include <string>
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

namespace sigvisor::bench {

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

  // bench --restore: boots each build once to its guest's quiescent point, saves it in
  // `dir` (one snapshot per build, and per pv counterpart with --traps pv) and from then
  // on restores it for every run instead of booting (docs/snapshots.md). The runs' per-op
  // counts are a booted run's. Refused for a Linux build (its init names no quiescent
  // point yet) and with --inject (injection reads the boot protocol). `version` and
  // `host_kind` go into the snapshots' headers.
  absl::Status UseSnapshots(const std::string& dir, const std::string& version,
                            const std::string& host_kind);

  // `console`, when given, receives the guest's console (bench --peer reads the guest's
  // own timing lines from it).
  absl::StatusOr<RunSample> Run(const RunSpec& spec, std::string* console = nullptr) const;

  // The executable bytes of variant `v`'s kernel (for a Linux build, known once loaded).
  uint64_t text_bytes(size_t v) const;

 private:
  KvmBenchTarget(const KvmSystem& kvm, const Matrix& matrix) : kvm_(&kvm), matrix_(matrix) {}

  const KvmSystem* kvm_;
  Matrix matrix_;
  std::vector<ElfImage> images_;                 // per variant
  // Per variant: what it boots as; a Linux kernel's with what its boot needs besides
  // its vmlinux (images_), the embedded initramfs included.
  std::vector<x86::BootTarget> targets_;
  // --traps pv: per variant, its debugreg=pv counterpart (the build whose kernel
  // writes its debug registers into the VMM's page); empty without pv.
  std::vector<ElfImage> pv_images_;
  bool cpl0_emulated_ = false;
  launch::RunSettings settings_;
  // bench --restore: per variant, its snapshot (and its pv counterpart's); empty: boot.
  std::vector<std::shared_ptr<const x86::SavedVm>> saved_;
  std::vector<std::shared_ptr<const x86::SavedVm>> saved_pv_;
  std::vector<InjectionSpec> inject_specs_;
  uint64_t inject_seed_ = 1;
};

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_KVM_TARGET_H_
