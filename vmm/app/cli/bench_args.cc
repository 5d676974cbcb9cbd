#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "vmm/app/bench/matrix.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/run_setup.h"

namespace sigvisor::cli {

absl::StatusOr<BenchOutput> OpenOutput(const OutputOptions& options) {
  BenchOutput output;
  if (options.json && options.csv) {
    return absl::InvalidArgumentError("--json and --csv both print on stdout: give one");
  }
  output.format = options.json  ? OutputFormat::kJson
                  : options.csv ? OutputFormat::kCsv
                                : OutputFormat::kText;
  output.svg_path = options.svg;
  if (!output.svg_path.empty()) {
    absl::StatusOr<ResultFile> svg = ResultFile::Create("--svg", output.svg_path, "the chart");
    if (!svg.ok()) return svg.status();
    output.svg = std::make_unique<ResultFile>(*std::move(svg));
  }
  return output;
}

bool WriteSvg(BenchOutput& output, const std::string& svg) {
  if (!output.svg) return true;
  if (absl::Status s = output.svg->Write(svg); !s.ok()) {
    ReportError(s);
    return false;
  }
  return true;
}

absl::StatusOr<std::optional<uint64_t>> ParseCountFlag(const char* name, const std::string& value,
                                                       uint64_t max) {
  return launch::ParseCount(absl::StrFormat("--%s", name), value, max);
}

absl::Status CheckRunLimits(absl::Duration timeout, uint32_t memory_mib) {
  if (timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--timeout must be positive");
  }
  if (memory_mib < 2 || memory_mib > 1024 || memory_mib % 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--memory %d: give MiB from 2 to 1024, a multiple of 2", memory_mib));
  }
  return absl::OkStatus();
}

absl::StatusOr<BenchHost> OpenBenchHost(const std::string& kvm_path,
                                        const std::string& traps_flag,
                                        const std::vector<TrapRequest>& defaults) {
  const std::vector<std::string> names = bench::SplitList(traps_flag);
  if (!traps_flag.empty() && names.empty()) return absl::InvalidArgumentError("--traps is empty");
  // Names first, so a typo is reported before KVM is touched.
  std::vector<TrapRequest> wanted;
  for (const std::string& name : names) {
    std::optional<TrapRequest> request = ParseTrapRequest(name);
    if (!request) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--traps: '%s' is not a trap mechanism (give off, auto, patch, hw-gd or pv)", name));
    }
    wanted.push_back(*request);
  }
  if (wanted.empty()) wanted = defaults;
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open(kvm_path);
  if (!kvm.ok()) return kvm.status();
  absl::StatusOr<HostInfo> info = DetectHost(*kvm);
  if (!info.ok()) return info.status();
  BenchHost host{*std::move(kvm), *std::move(info), {}};
  for (const TrapRequest& request : wanted) {
    absl::StatusOr<TrapChoice> choice = ChooseTrap(request, host.kvm, host.info);
    if (!choice.ok()) {
      return absl::Status(choice.status().code(), "--traps: " + std::string(choice.status().message()));
    }
    auto seen = std::find(host.traps.begin(), host.traps.end(), choice->mechanism);
    if (seen != host.traps.end()) {
      const TrapRequest& earlier = wanted[static_cast<size_t>(seen - host.traps.begin())];
      return absl::InvalidArgumentError(
          earlier.name() == request.name()
              ? absl::StrFormat("--traps: %s is listed twice", request.name())
              : absl::StrFormat("--traps: %s and %s are both %s here", earlier.name(),
                                request.name(), TrapMechanismName(choice->mechanism)));
    }
    host.traps.push_back(choice->mechanism);
  }
  return host;
}

absl::Status CheckSnapshotFlags(const BenchOptions& options) {
  std::vector<std::string> modes;
  if (options.restore) modes.push_back("--restore");  // a switch: --norestore is none
  if (options.Given("snapshots")) modes.push_back("--snapshots");
  if (options.Given("save_snapshots")) modes.push_back("--save-snapshots");
  if (modes.empty()) return absl::OkStatus();
  if (modes.size() > 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s and %s: give one (--restore: snapshots of the bench's own, removed at the end; "
        "--snapshots DIR: those saved in DIR; --save-snapshots DIR: save them, run nothing)",
        modes[0], modes[1]));
  }
  const std::string& mode = modes[0];
  if (options.Given("save_snapshots")) {
    // It runs no workload and prints no result: these would be ignored.
    constexpr std::string_view kNoUse[] = {"workloads", "ops",    "warmup", "repetitions",
                                           "shard",     "json",   "csv",    "svg",
                                           "peer",      "inject", "seed"};
    if (std::string flag = FirstGiven(options, kNoUse); !flag.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s with --save-snapshots: it only saves the builds' snapshots (--variants, "
          "--traps) and runs nothing; give %s to the benches that restore them (--snapshots "
          "DIR)",
          flag, flag));
    }
    if (options.save_snapshots.empty()) {
      return absl::InvalidArgumentError("--save-snapshots: give the directory to save them in");
    }
    return absl::OkStatus();
  }
  if (options.Given("snapshots") && options.snapshots.empty()) {
    return absl::InvalidArgumentError("--snapshots: give the directory they were saved in");
  }
  if (!options.peer.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s with --peer: QEMU boots its guest; drop one", mode));
  }
  if (!options.runs.inject.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s with --inject: fault injection reads the boot protocol, which a restored guest has "
        "passed; boot instead",
        mode));
  }
  return absl::OkStatus();
}

bench::SnapshotKinds SnapshotKindsOf(const std::string& traps_flag) {
  const std::vector<std::string> names = bench::SplitList(traps_flag);
  bench::SnapshotKinds kinds;
  kinds.plain = names.empty();
  for (const std::string& name : names) {
    (name == TrapMechanismName(TrapMechanism::kPv) ? kinds.pv : kinds.plain) = true;
  }
  return kinds;
}

}  // namespace sigvisor::cli
