// The bench matrix: workloads x variants x trap mechanisms x repetitions, the order
// its runs go in, and the slices (--shard i/n) that independent jobs run.
//
// Order: repetition-major, then workload, then trap mechanism, then variant, so the
// variants of one workload alternate (A B A B ...) and drift over the whole bench
// touches every variant alike. A shard is a contiguous slice of that order: whole
// A B groups, so each shard is interleaved too.
#ifndef SIGVISOR_VMM_APP_BENCH_MATRIX_H_
#define SIGVISOR_VMM_APP_BENCH_MATRIX_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/app/launch/warmup.h"
#include "vmm/run/trap_mechanism.h"

namespace sigvisor::bench {

// Where a variant spec's machine settings begin: "smp=on@vcpus=2@ipi=pv@lapic=vmm".
inline constexpr char kMachineSuffixMark = '@';

// One kernel build as the matrix names it: a build of the bundled kernel, or a stock
// Linux kernel given as "linux=PATH" (kLinuxBuildSpec).
struct VariantInfo {
  std::string name;      // canonical ("baseline", "dr7=lazy", "accelerated,dr7=always");
                         // "linux:<file name>" for a Linux kernel
  std::string settings;  // "dr7=always pda=gs uaccess=err_or dequeue=copy"; for Linux,
                         // "stock Linux kernel <path>"
  uint64_t text_bytes = 0;     // the ELF's executable sections (Linux: its vmlinux's)
  std::string image_fnv1a64;   // "0x..." of the image bytes: which build was measured
  // A Linux kernel's path: the runs boot it with the embedded initramfs. Not in the
  // JSON (settings says it); empty for a bundled build.
  std::string linux_image;
  // The machine its runs get (a spec's "@vcpus=N", "@ipi=M", "@lapic=L": `run --vcpus`,
  // `--ipi`, `--lapic`); `name` ends in the same suffix, so that two machines of one
  // build are two rows.
  int vcpus = 1;
  std::string ipi;    // "" (the kernel's default: x2apic on several vCPUs), or an IpiMethodName
  std::string lapic;  // "" (KVM's in-kernel local APICs, run's default), or a LapicName

  bool linux_kernel() const { return !linux_image.empty(); }
  // The build's own name: `name` without its machine suffix.
  std::string build_name() const { return name.substr(0, name.find(kMachineSuffixMark)); }
  // No machine setting: one vCPU, as a spec without a suffix gets (nothing for run's
  // checks to refuse).
  bool default_machine() const { return vcpus == 1 && ipi.empty() && lapic.empty(); }
  // The machine suffix `name` ends in, in this order: "@vcpus=2@ipi=pv@lapic=vmm"; ""
  // for one vCPU and neither --ipi nor --lapic.
  static std::string MachineSuffix(int vcpus, std::string_view ipi, std::string_view lapic);
  bool operator==(const VariantInfo&) const = default;
};

// "linux=/boot/vmlinuz-6.1.0-57-amd64" in --variants: a stock Linux kernel as a build.
inline constexpr std::string_view kLinuxBuildSpec = "linux=";

struct Matrix {
  std::vector<std::string> workloads;   // guest workloads (launch::BenchWorkloadNames)
  std::vector<VariantInfo> variants;
  std::vector<TrapMechanism> traps;
  uint32_t repetitions = 5;
  uint64_t ops = 100;                   // measured operations per run
  uint64_t warmup = launch::kDefaultWarmupOps;  // unmeasured ones before each phase
  uint32_t memory_mib = 32;
  // bench --restore: each run restored its build's snapshot instead of booting
  // (docs/snapshots.md); its per-op counts are a booted run's.
  bool restored = false;

  size_t runs() const {
    return workloads.size() * variants.size() * traps.size() * repetitions;
  }
  bool operator==(const Matrix&) const = default;
};

// One run: indices into the matrix's lists; `repetition` counts from 0.
struct RunSpec {
  size_t index = 0;  // position in Schedule()
  size_t workload = 0;
  size_t variant = 0;
  size_t trap = 0;
  uint32_t repetition = 0;
};

// Every run of the matrix in the order they go.
std::vector<RunSpec> Schedule(const Matrix& matrix);

// What the bundled kernel's init is told for one run of `workload`, under sigvisor and
// under a peer alike: "workload=W ops=N", and " warmup=K" when launch::WarmupValue gives
// one (not for the guest's own default, nor for hello and console, which have none).
std::string BundledKernelWords(const std::string& workload, const Matrix& matrix);

// "divzero,pipe_rw" -> names, each checked against the catalogue's bench workloads
// (launch::BenchWorkloadNames); "all" is every one of them. Duplicates and unknown names are refused.
absl::StatusOr<std::vector<std::string>> ParseWorkloadList(std::string_view list);

// Variant specs, separated by ';' or white space (a spec has commas of its own:
// "baseline; accelerated,dr7=always"); "all" is every built variant. Each resolves
// through ResolveVariant, or names a Linux kernel's file ("linux=PATH": read here for
// its hash; the KVM target loads it); two specs naming one build are refused.
// A spec may end in machine settings, each at most once: "@vcpus=N" (the vCPUs of its
// runs), "@ipi=M" (how an smp=on kernel sends IPIs) and "@lapic=L" (whose local APICs
// its vCPUs have), as `run --vcpus N --ipi M --lapic L`; what `run` would refuse of
// them for a bundled build (x86::CheckMachineConfig, with --trap off: a uniprocessor
// build on several vCPUs, --ipi or --lapic on one) is refused here, in one line naming
// the spec; a Linux build's, and each trap mechanism's, when the KVM target loads it
// (KvmBenchTarget::Create).
absl::StatusOr<std::vector<VariantInfo>> ParseVariantList(std::string_view list);

// Refuses a matrix that would run a workload across CPUs on a variant of fewer vCPUs
// than its catalogue row needs (launch::WorkloadVcpus), in one line naming both, before
// any run.
absl::Status CheckWorkloadVcpus(const Matrix& matrix);

// The VariantInfo of a built variant, by canonical name or any --variant spec.
absl::StatusOr<VariantInfo> DescribeBuiltVariant(std::string_view spec);

// --shard i/n: 1 <= i <= n.
struct Shard {
  uint32_t index = 1;  // 1-based
  uint32_t count = 1;
  bool operator==(const Shard&) const = default;
};
absl::StatusOr<Shard> ParseShard(std::string_view text);

// The runs [begin, end) of Schedule() that shard `shard` runs: contiguous slices of
// nearly equal size (they differ by at most one run) that cover every run once.
struct RunRange {
  size_t begin = 0;
  size_t end = 0;
};
RunRange ShardRange(size_t runs, Shard shard);

// A list flag split at commas (and white space), empty items dropped.
std::vector<std::string> SplitList(std::string_view list);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_MATRIX_H_
