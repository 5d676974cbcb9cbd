// `sigvisor bench`: a matrix of workloads x kernel variants x trap mechanisms x
// repetitions in one process, the variants interleaved.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/machine/linux_board.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/bench/kvm_target.h"
#include "vmm/app/bench/peer.h"
#include "vmm/app/bench/progress.h"
#include "vmm/app/bench/runner.h"
#include "vmm/app/bench/scheduler_shard.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/warmup.h"
#include "vmm/app/launch/workloads.h"

namespace sigvisor::cli {
namespace {

// A fresh private directory under $TMPDIR (or /tmp): "<TMPDIR>/<prefix>-XXXXXX".
absl::StatusOr<std::string> MakeScratchDirectory(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" +
                        prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot make a directory %s: %s (set TMPDIR to a writable one)", pattern,
        std::strerror(errno)));
  }
  return pattern;
}

}  // namespace

constexpr uint64_t kDefaultOps = 100;
constexpr uint32_t kDefaultRepetitions = 5;
constexpr const char* kDefaultVariants = "baseline;accelerated";

int PrintBench(const bench::BenchResult& result, BenchOutput& output) {
  switch (output.format) {
    case OutputFormat::kJson:
      std::printf("%s\n", WithBuildInfo(bench::BenchToJson(result)).dump(2).c_str());
      break;
    case OutputFormat::kCsv:
      std::printf("%s", bench::FormatBenchCsv(result).c_str());
      break;
    case OutputFormat::kText:
      std::printf("%s", bench::FormatBenchText(result).c_str());
      break;
  }
  std::fflush(stdout);
  if (!WriteSvg(output, bench::FormatBenchSvg(result))) return kExitResultLost;
  if (!result.complete()) {
    std::fprintf(stderr, "sigvisor: %s\n", bench::CompletenessLine(result).c_str());
    return 1;
  }
  return 0;
}

// The bundled kernel's build `variant` written to a file QEMU can boot; removed
// when this goes out of scope.
class PeerImageFile {
 public:
  static absl::StatusOr<PeerImageFile> Write(const std::string& variant) {
    absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant);
    if (!build.ok()) return build.status();
    const char* tmp = std::getenv("TMPDIR");
    PeerImageFile file(absl::StrFormat("%s/sigvisor-%d-peer-kernel.elf", tmp ? tmp : "/tmp",
                                       getpid()));
    std::ofstream out(file.path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>((*build)->bytes.data()),
              static_cast<std::streamsize>((*build)->bytes.size()));
    out.close();
    if (!out.good()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--peer: cannot write the image to '%s'", file.path_));
    }
    return file;
  }
  PeerImageFile(PeerImageFile&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  PeerImageFile(const PeerImageFile&) = delete;
  PeerImageFile& operator=(const PeerImageFile&) = delete;
  PeerImageFile& operator=(PeerImageFile&&) = delete;
  ~PeerImageFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  explicit PeerImageFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// --peer: the matrix's runs under sigvisor interleaved with the same workloads on the
// same image under QEMU; prints the side-by-side table (or the bench JSON with a
// "peers" member).
int BenchSideBySide(const bench::Matrix& matrix, const bench::KvmBenchTarget& target,
                    const std::vector<bench::PeerKind>& kinds, const BenchOutput& output,
                    const BenchOptions& options, const KvmSystem& kvm,
                    const bench::RunnerOptions& runner) {
  absl::StatusOr<PeerImageFile> image = PeerImageFile::Write(matrix.variants.at(0).name);
  if (!image.ok()) return ReportError(image.status());
  std::vector<bench::PeerResult> peers;
  for (const bench::PeerKind& kind : kinds) {
    peers.push_back(bench::FindPeer(kind));
    if (peers.back().skipped) {
      std::fprintf(stderr, "bench: %s: skipped: %s\n", kind.name.c_str(),
                   peers.back().skip_reason.c_str());
    }
  }
  bench::ProgressPrinter progress(matrix.runs());
  bench::RunnerOptions with_progress = runner;
  with_progress.on_progress = progress.Callback(matrix, "bench --peer");
  const bench::SideBySideResult result = bench::RunSideBySide(
      matrix,
      [&](const bench::RunSpec& spec, std::string* console) { return target.Run(spec, console); },
      std::move(peers),
      [&](const bench::PeerResult& peer, const std::string& workload, uint32_t repetition) {
        return bench::RunPeerOnce(peer, image->path(), workload, repetition, matrix,
                                  options.runs.timeout);
      },
      with_progress);
  progress.Finish();
  for (const bench::PeerResult& p : result.peers) {
    if (p.skipped && !p.path.empty()) {
      std::fprintf(stderr, "bench: %s: skipped: %s\n", p.kind.name.c_str(),
                   p.skip_reason.c_str());
    }
  }
  const uint64_t tsc_khz = bench::HostTscKhz(kvm.fd());
  if (output.format == OutputFormat::kJson) {
    nlohmann::ordered_json doc = bench::BenchToJson(result.sigvisor);
    doc["peers"] = bench::PeersToJson(result, tsc_khz);
    std::printf("%s\n", WithBuildInfo(std::move(doc)).dump(2).c_str());
  } else {
    std::printf("%s", bench::FormatPeerTable(result, tsc_khz).c_str());
  }
  std::fflush(stdout);
  bool failed = !result.sigvisor.complete();
  for (const bench::PeerResult& p : result.peers) {
    for (const bench::PeerRun& r : p.runs) failed = failed || !r.ok;
  }
  if (!result.sigvisor.complete()) {
    std::fprintf(stderr, "sigvisor: %s\n", bench::CompletenessLine(result.sigvisor).c_str());
  }
  return failed ? 1 : 0;
}

// `sigvisor help`'s line for `bench`, and what `sigvisor help bench` prints above
// the flags (BenchFlags, options.cc).
constexpr CommandHelp kBenchHelp{
    "run workloads x kernel variants x trap mechanisms, variants interleaved",
    "Runs a matrix of the bundled kernel's workloads x builds (--variants) x trap\n"
    "mechanisms (--traps) x --repetitions in one process, one fresh VM per run, the\n"
    "variants alternating (A B A B ...) so that drift touches all alike. Per cell and\n"
    "phase: exits, traps and kernel instructions per op, which must agree across\n"
    "repetitions (flagged when not), and time per op as median [min - max]. Progress\n"
    "goes to stderr; Ctrl-C stops after the current run and reports what completed.\n"
    "--shard i/n runs one slice of the matrix; `sigvisor merge` combines the slices'\n"
    "--json results. --restore restores each build's snapshot for every run instead of\n"
    "booting it; --save-snapshots DIR saves them once (and runs nothing) and --snapshots\n"
    "DIR restores those, so that the shards of one bench restore one set (docs/snapshots.md).\n"
    "Exit status: 0 complete, 1 runs failed or missing, 125 bad input.\n"
    "\nExamples:\n"
    "  sigvisor bench\n"
    "  sigvisor bench --workloads divzero --variants 'baseline;dr7=lazy' --traps off,auto\n"
    "  sigvisor bench --variants all --repetitions 10 --json > bench.json\n"
    "  sigvisor bench --shard 2/4 --json > part2.json    # then: sigvisor merge part*.json\n"
    "  sigvisor bench --save-snapshots /shared/snaps --variants 'baseline;accelerated'\n"
    "  sigvisor bench --snapshots /shared/snaps --variants 'baseline;accelerated' --shard 2/4\n"
    "  sigvisor bench --csv --svg bench.svg\n"
    "\nSide by side with QEMU (--peer): the same workloads on the same image (one\n"
    "--variants build, traps off) under `qemu-system-x86_64 -kernel` with -accel kvm\n"
    "and/or tcg, where the image boots through its Multiboot header and talks to COM1\n"
    "and isa-debug-exit. Per workload: total run time (QEMU: the whole process); per\n"
    "phase: time per op from the guest's own TSC timing line, and for sigvisor only\n"
    "exits, traps and kernel instructions per op (QEMU has no ledger). A QEMU that is\n"
    "not on PATH, or an accelerator that does not start here, is reported as skipped.\n"
    "  sigvisor bench --peer qemu-kvm,qemu-tcg --workloads divzero,lat_sig --ops 100\n"
    "  sigvisor bench --peer qemu-tcg --repetitions 3 --json > side-by-side.json",
};

// --save-snapshots DIR: each build's snapshot saved in DIR/<build name>/, the directories
// listed on stdout.
int SaveBenchSnapshots(const bench::KvmBenchTarget& target, const std::string& dir,
                       const std::string& host_kind) {
  std::fprintf(stderr, "bench: saving the builds at their quiescent point in %s\n", dir.c_str());
  absl::StatusOr<std::vector<std::string>> saved =
      target.SaveSnapshots(dir, VersionLine(), host_kind);
  if (!saved.ok()) {
    return ReportError(absl::StrFormat("--save-snapshots: %s", saved.status().message()));
  }
  std::printf(
      "sigvisor bench: saved %zu snapshot(s) (host %s); benches restore them with "
      "--snapshots %s:\n",
      saved->size(), host_kind.c_str(), dir.c_str());
  for (const std::string& snapshot : *saved) std::printf("  %s\n", snapshot.c_str());
  return 0;
}

int BenchCommand(const BenchOptions& options) {
  if (!options.args.empty()) {
    return ReportError(
        absl::StrFormat("`sigvisor bench` takes no argument '%s' (see --help)", options.args[0]));
  }
  if (absl::Status s = CheckSnapshotFlags(options); !s.ok()) return ReportError(s);
  absl::StatusOr<BenchOutput> output = OpenOutput(options.output);
  if (!output.ok()) return ReportError(output.status());
  if (absl::Status s = CheckRunLimits(options.runs.timeout, options.runs.memory_mib); !s.ok()) {
    return ReportError(s);
  }

  bench::Matrix matrix;
  if (options.workloads.empty()) {
    matrix.workloads = launch::BenchDefaultWorkloadNames();
  } else {
    absl::StatusOr<std::vector<std::string>> list = bench::ParseWorkloadList(options.workloads);
    if (!list.ok()) return ReportError(list.status());
    matrix.workloads = *std::move(list);
  }
  absl::StatusOr<std::vector<bench::VariantInfo>> variant_list =
      bench::ParseVariantList(options.variants.empty() ? kDefaultVariants : options.variants);
  if (!variant_list.ok()) return ReportError(variant_list.status());
  matrix.variants = *std::move(variant_list);
  absl::StatusOr<std::optional<uint64_t>> ops = ParseCountFlag("ops", options.ops, launch::kMaxOps);
  if (!ops.ok()) return ReportError(ops.status());
  matrix.ops = ops->value_or(kDefaultOps);
  for (const std::string& workload : matrix.workloads) {
    absl::StatusOr<std::optional<uint64_t>> warmup = launch::ParseWarmup(options.warmup, workload);
    if (!warmup.ok()) return ReportError(warmup.status());
    matrix.warmup =
        warmup->value_or(options.peer.empty() ? launch::kDefaultWarmupOps
                                              : bench::kPeerDefaultWarmupOps);
  }
  absl::StatusOr<std::optional<uint64_t>> reps =
      ParseCountFlag("repetitions", options.repetitions, 100000);
  if (!reps.ok()) return ReportError(reps.status());
  matrix.repetitions = static_cast<uint32_t>(reps->value_or(kDefaultRepetitions));
  // A Linux build: its kernel's RAM (as for `run --image`). What it cannot take is the
  // Linux board's to say (x86::LinuxBoard), asked here before its kernel is loaded and
  // refused in bench's own words.
  const bool linux_build = std::any_of(matrix.variants.begin(), matrix.variants.end(),
                                       [](const bench::VariantInfo& v) { return v.linux_kernel(); });
  matrix.memory_mib = static_cast<uint32_t>(
      launch::GuestMemoryMib(linux_build, options.runs.memory_mib, options.Given("memory")));
  // The fault injector is an interceptor other than the step tracer.
  if (linux_build && !options.runs.inject.empty() &&
      !x86::LinuxBoard::CheckInterceptors(/*trace_only=*/false).ok()) {
    return ReportError("--inject aims at the bundled kernel's code; a Linux build cannot take it");
  }
  // --snapshots DIR: each build's snapshot read now, so that a DIR without one is refused
  // before KVM is opened; the host's part of the check comes once it is.
  std::optional<bench::BenchSnapshots> snapshots;
  if (!options.snapshots.empty()) {
    absl::StatusOr<bench::BenchSnapshots> read = bench::ReadBenchSnapshots(
        options.snapshots, matrix.variants, SnapshotKindsOf(options.traps));
    if (!read.ok()) return ReportError(absl::StrFormat("--snapshots: %s", read.status().message()));
    snapshots = *std::move(read);
  }
  bench::Shard shard;
  if (options.shard == "auto") {
    absl::StatusOr<bench::ScheduledShard> scheduled =
        bench::ShardFromScheduler(bench::ProcessEnvironment());
    if (!scheduled.ok()) return ReportError(scheduled.status());
    std::fprintf(stderr, "sigvisor bench: --shard auto: slice %u/%u from %s\n",
                 scheduled->shard.index, scheduled->shard.count, scheduled->source.c_str());
    shard = scheduled->shard;
  } else if (!options.shard.empty()) {
    absl::StatusOr<bench::Shard> parsed = bench::ParseShard(options.shard);
    if (!parsed.ok()) return ReportError(parsed.status());
    shard = *parsed;
  }

  // --peer: one kernel build, traps off (QEMU cannot trap), one process (no shards).
  std::vector<bench::PeerKind> peers;
  if (!options.peer.empty()) {
    absl::StatusOr<std::vector<bench::PeerKind>> parsed = bench::ParsePeerList(options.peer);
    if (!parsed.ok()) return ReportError(parsed.status());
    peers = *std::move(parsed);
    if (options.variants.empty()) {
      absl::StatusOr<std::vector<bench::VariantInfo>> baseline = bench::ParseVariantList("baseline");
      if (!baseline.ok()) return ReportError(baseline.status());
      matrix.variants = *std::move(baseline);
    } else if (matrix.variants.size() != 1) {
      return ReportError("--peer compares one kernel build side by side: give one --variants entry");
    } else if (linux_build) {
      return ReportError("--peer compares a build of the bundled kernel; a Linux build is not one");
    } else if (!matrix.variants[0].default_machine()) {
      return ReportError(absl::StrFormat(
          "--peer boots QEMU with one vCPU: '%s' asks for another machine; drop its '@' settings",
          matrix.variants[0].name));
    }
    if (!options.traps.empty() && options.traps != TrapMechanismName(TrapMechanism::kOff)) {
      return ReportError("--peer measures with --traps off (QEMU has no trap mechanism); drop --traps");
    }
    if (!options.shard.empty()) return ReportError("--peer runs in one process: drop --shard");
    if (output->format == OutputFormat::kCsv || output->svg) {
      return ReportError("--peer prints its table as text or --json (no --csv, no --svg)");
    }
  }
  // A workload across CPUs on a variant of one vCPU: refused before any run.
  if (absl::Status s = bench::CheckWorkloadVcpus(matrix); !s.ok()) return ReportError(s);
  // Without --traps: off, and auto unless QEMU runs beside (it has no trap mechanism),
  // less what a Linux build's board refuses.
  std::vector<TrapRequest> default_traps = {TrapRequest{.mechanism = TrapMechanism::kOff}};
  if (peers.empty()) default_traps.push_back(AutoTrap());
  if (linux_build) {
    std::erase_if(default_traps, [](const TrapRequest& trap) {
      return !x86::LinuxBoard::CheckTrap(trap.mechanism).ok();
    });
  }
  // A variant of several vCPUs runs with --traps off only (the trap engine watches vCPU
  // 0; run's check refuses any other when the target loads it): off by default then.
  if (std::any_of(matrix.variants.begin(), matrix.variants.end(),
                  [](const bench::VariantInfo& v) { return v.vcpus > 1; })) {
    std::erase_if(default_traps, [](const TrapRequest& trap) {
      return trap.automatic || trap.mechanism != TrapMechanism::kOff;
    });
  }
  absl::StatusOr<BenchHost> host = OpenBenchHost(options.runs.kvm, options.traps, default_traps);
  if (!host.ok()) return ReportError(host.status());
  matrix.traps = host->traps;
  absl::StatusOr<bench::KvmBenchTarget> target = bench::KvmBenchTarget::Create(
      host->kvm, matrix, host->info.cpl0_emulated, SettingsFrom(options.runs, nullptr));
  if (!target.ok()) return ReportError(target.status());
  for (size_t v = 0; v < matrix.variants.size(); ++v) {
    if (matrix.variants[v].linux_kernel()) matrix.variants[v].text_bytes = target->text_bytes(v);
  }
  absl::StatusOr<std::vector<InjectionSpec>> injections = ParseInjectionSpecs(options.runs.inject);
  if (!injections.ok()) return ReportError(injections.status());
  target->SetInjection(*std::move(injections), options.runs.seed);
  // What the runs start from (docs/snapshots.md): a boot, or each build's snapshot, saved
  // in a scratch directory of this bench's and removed at the end (--restore) or given
  // (--snapshots DIR); --save-snapshots DIR saves them there and runs nothing.
  if (!options.save_snapshots.empty()) {
    return SaveBenchSnapshots(*target, options.save_snapshots, host->info.kind);
  }
  std::string scratch;
  absl::Cleanup remove_scratch = [&scratch] {
    if (!scratch.empty()) std::filesystem::remove_all(scratch);
  };
  if (options.restore) {
    absl::StatusOr<std::string> dir = MakeScratchDirectory("sigvisor-bench-snapshots");
    if (!dir.ok()) return ReportError(dir.status());
    scratch = *dir;
    std::fprintf(stderr, "bench: saving %zu build(s) at their quiescent point in %s\n",
                 matrix.variants.size(), scratch.c_str());
    absl::StatusOr<std::vector<std::string>> saved =
        target->SaveSnapshots(scratch, VersionLine(), host->info.kind);
    if (!saved.ok()) return ReportError(saved.status());
    absl::StatusOr<bench::BenchSnapshots> read =
        bench::ReadBenchSnapshots(scratch, matrix.variants, bench::SnapshotKindsFor(matrix.traps));
    if (!read.ok()) return ReportError(read.status());
    snapshots = *std::move(read);
  }
  if (snapshots) {
    const RestoreHost here = {
        .abi_version = SIGVISOR_ABI_VERSION, .arch = "x86_64", .host_kind = host->info.kind};
    if (absl::Status s = target->RestoreSnapshots(*std::move(snapshots), here); !s.ok()) {
      return ReportError(options.restore ? std::string(s.message())
                                         : absl::StrFormat("--snapshots: %s", s.message()));
    }
    if (!options.snapshots.empty()) {
      std::fprintf(stderr, "bench: restoring each build's snapshot from %s\n",
                   options.snapshots.c_str());
    }
    matrix.restored = true;
  }

  bench::InstallInterruptHandler();
  bench::RunnerOptions runner;
  runner.shard = shard;
  runner.host = {host->info.kind, host->info.cpl0_emulated};
  runner.stop_requested = bench::InterruptRequested;
  if (!peers.empty()) {
    return BenchSideBySide(matrix, *target, peers, *output, options, host->kvm, runner);
  }
  const bench::RunRange range = bench::ShardRange(matrix.runs(), shard);
  bench::ProgressPrinter progress(range.end - range.begin);
  runner.on_progress = progress.Callback(matrix, "bench");
  bench::BenchResult result = bench::RunMatrix(
      matrix, [&](const bench::RunSpec& spec) { return target->Run(spec); }, runner);
  progress.Finish();
  return PrintBench(result, *output);
}

}  // namespace sigvisor::cli
