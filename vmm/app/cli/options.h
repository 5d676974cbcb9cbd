// Each command's options: a plain struct with the command's own defaults, and the
// flag table that parses the command line into it (options.cc). A command reads its
// struct and nothing else; the helpers it calls take the values they need.
#ifndef SIGVISOR_VMM_APP_CLI_OPTIONS_H_
#define SIGVISOR_VMM_APP_CLI_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "vmm/app/cli/flag_table.h"

namespace sigvisor::cli {

inline constexpr uint64_t kDefaultMaxOutputBytes = uint64_t{64} << 20;
// The longest --timeout: a year (far inside the watchdog's clock, whose deadline a
// longer one would overflow into the past).
inline constexpr absl::Duration kMaxTimeout = absl::Hours(24 * 365);

// `sigvisor run` (x86-64 under KVM, or --arch mips on the interpreter).
struct RunOptions : CommandLine {
  std::string image = "kernel";
  std::string variant = "baseline";
  std::string workload;  // empty: the image's default
  std::string ops;       // empty: the workload's default
  std::string warmup;    // empty: the guest's default (one op)
  std::string cmdline;
  uint32_t memory_mib = 32;
  absl::Duration timeout = absl::Seconds(60);
  bool json = false;
  bool quiet = false;
  std::string kvm = "/dev/kvm";
  std::string trap = "off";
  std::string gdb;
  bool no_sandbox = false;
  uint64_t max_output = kDefaultMaxOutputBytes;
  std::vector<std::string> modules;
  std::string initrd;  // empty: a Linux kernel gets the embedded initramfs
  bool irqchip = false;
  int32_t vcpus = 1;
  std::string ipi;  // empty: x2apic on several vCPUs (an SMP build of the bundled kernel)
  std::string lapic;  // empty: KVM's in-kernel local APICs there
  std::vector<std::string> inject;
  uint64_t seed = 1;
  std::string arch = "x86_64";
  uint32_t cores = 1;
  std::string restore;  // a snapshot directory: restore it instead of booting
  bool check_signal_frames = false;  // signal=pv: compare the VMM's frames with the kernel's
  bool block_phase_interrupts = false;  // no interrupt injected inside a measured phase
};
FlagTable RunFlags(RunOptions& options);

// `sigvisor snapshot`: boot to the guest's quiescent point and save the VM there.
struct SnapshotOptions : CommandLine {
  std::string image = "kernel";
  std::string variant = "baseline";
  uint32_t memory_mib = 32;
  absl::Duration timeout = absl::Seconds(60);
  bool json = false;
  std::string kvm = "/dev/kvm";
  std::string trap = "off";
  int32_t vcpus = 1;
  std::string ipi;    // as run's
  std::string lapic;  // as run's
  bool no_sandbox = false;
  std::string out;
};
FlagTable SnapshotFlags(SnapshotOptions& options);

// `sigvisor trace`: one op of divzero unless told otherwise.
struct TraceOptions : CommandLine {
  std::string image = "kernel";
  std::string variant = "baseline";
  std::string workload = "divzero";
  std::string ops = "1";
  std::string phase;
  std::string cmdline;
  uint32_t memory_mib = 32;
  absl::Duration timeout = absl::Seconds(60);
  bool json = false;
  std::string kvm = "/dev/kvm";
  std::string trap = "off";
  std::string diff;
  bool stages = false;
  bool no_sandbox = false;
  std::string symbols;  // a Linux kernel's System.map, for a vmlinux without symbols
  std::string restore;  // a snapshot directory: trace a restored VM instead of a booted one
};
FlagTable TraceFlags(TraceOptions& options);

// `sigvisor probe` (arch/x86_64/vmm/probe's own ProbeOptions is what it measures with).
struct ProbeCommandOptions : CommandLine {
  uint32_t iterations = 200;
  uint32_t repeats = 3;
  bool json = false;
  std::string kvm = "/dev/kvm";
};
FlagTable ProbeFlags(ProbeCommandOptions& options);

struct ImagesOptions : CommandLine {
  bool json = false;
};
FlagTable ImagesFlags(ImagesOptions& options);

struct ImageOptions : CommandLine {
  std::string variant = "baseline";
  std::string o;
  std::string arch = "x86_64";
};
FlagTable ImageFlags(ImageOptions& options);

struct SitesOptions : CommandLine {
  std::string image = "kernel";
  std::string variant = "baseline";
  bool json = false;
  bool uaccess = false;
};
FlagTable SitesFlags(SitesOptions& options);

// How bench, study and merge print: --json or --csv (text without either), --svg.
struct OutputOptions {
  bool json = false;
  bool csv = false;
  std::string svg;
};

// How bench and study run each of their guests under KVM.
struct KvmRunsOptions {
  uint32_t memory_mib = 32;
  absl::Duration timeout = absl::Seconds(60);
  std::string kvm = "/dev/kvm";
  std::vector<std::string> inject;
  uint64_t seed = 1;
  bool no_sandbox = false;
};

// `sigvisor bench`: empty lists and counts take the bench's defaults (bench_command.cc).
struct BenchOptions : CommandLine {
  std::string workloads;
  std::string variants;
  std::string traps;
  std::string ops;
  std::string warmup;
  std::string repetitions;
  std::string shard;
  OutputOptions output;
  KvmRunsOptions runs;
  std::string peer;
  bool restore = false;        // snapshots of its own, in a scratch directory
  std::string snapshots;       // restore each build's snapshot from DIR/<build name>/
  std::string save_snapshots;  // save each build's snapshot in DIR/<build name>/ and stop
};
FlagTable BenchFlags(BenchOptions& options);

// `sigvisor study NAME...`: empty counts and --traps take each study's own.
struct StudyOptions : CommandLine {
  std::string ops;
  std::string repetitions;
  std::string traps;
  OutputOptions output;
  KvmRunsOptions runs;
  uint32_t cores = 4;  // study tramp's several-core rows
  std::string linux_kernel;  // --linux: a Linux kernel traced for each seed study's Linux column
};
FlagTable StudyFlags(StudyOptions& options);

struct MergeOptions : CommandLine {
  OutputOptions output;
};
FlagTable MergeFlags(MergeOptions& options);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_OPTIONS_H_
