#include "vmm/app/bench/matrix.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/workloads.h"
#include "vmm/base/capped_file.h"
#include "vmm/base/fnv1a.h"

namespace sigvisor::bench {
namespace {

std::vector<std::string> Split(std::string_view list, std::string_view separators) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find_first_of(separators, begin);
    if (end == std::string_view::npos) end = list.size();
    if (end > begin) items.emplace_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

// A stock Linux kernel as a build: named by its file, identified by its bytes' hash.
absl::StatusOr<VariantInfo> DescribeLinuxBuild(std::string_view spec) {
  const std::string path(spec.substr(kLinuxBuildSpec.size()));
  if (path.empty()) {
    return absl::InvalidArgumentError(
        "--variants: 'linux=' needs a kernel's path (linux=/boot/vmlinuz-...)");
  }
  absl::StatusOr<std::vector<uint8_t>> bytes = ReadCappedFileBytes(
      path, file_caps::kKernelImage, {.context = absl::StrFormat("--variants: %s: ", spec)});
  if (!bytes.ok()) return bytes.status();
  VariantInfo info;
  info.name = "linux:" + std::filesystem::path(path).filename().string();
  info.settings = "stock Linux kernel " + path;
  info.image_fnv1a64 = absl::StrFormat("%#018x", Fnv1a64(*bytes));
  info.linux_image = path;
  return info;
}

// Debian's Abseil has its own string_view type.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// A spec's machine settings: "smp=on@vcpus=2@ipi=pv@lapic=vmm" -> build spec "smp=on",
// 2, "pv", "vmm".
struct MachineSpec {
  std::string build;
  int vcpus = 1;
  std::string ipi;
  std::string lapic;
};

absl::StatusOr<MachineSpec> ParseMachineSpec(std::string_view spec) {
  const size_t at = spec.find(kMachineSuffixMark);
  MachineSpec machine;
  machine.build = std::string(spec.substr(0, at));
  if (at == std::string_view::npos) return machine;
  bool vcpus_given = false;
  for (const std::string& setting : Split(spec.substr(at + 1), "@")) {
    auto refuse = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--variants: '%s': @%s %s", spec, setting, why));
    };
    // A named choice (@ipi=, @lapic=), at most once: run's own parse (its message names
    // the choices), kept under its canonical name.
    auto take_choice = [&](std::string& kept, std::string_view value, auto parse,
                           auto name) -> absl::Status {
      if (!kept.empty()) return refuse("is given twice");
      auto parsed = parse(value);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("--variants: '%s': %s", spec, parsed.status().message()));
      }
      kept = std::string(name(*parsed));
      return absl::OkStatus();
    };
    const std::string_view s = setting;
    if (s.rfind("vcpus=", 0) == 0) {
      if (vcpus_given) return refuse("is given twice");
      if (!absl::SimpleAtoi(Absl(s.substr(6)), &machine.vcpus)) {
        return refuse("is not a number of vCPUs (as run's --vcpus N)");
      }
      vcpus_given = true;
    } else if (s.rfind("ipi=", 0) == 0) {
      if (absl::Status taken =
              take_choice(machine.ipi, s.substr(4), x86::ParseIpiMethod, x86::IpiMethodName);
          !taken.ok()) {
        return taken;
      }
    } else if (s.rfind("lapic=", 0) == 0) {
      if (absl::Status taken =
              take_choice(machine.lapic, s.substr(6), x86::ParseLapic, x86::LapicName);
          !taken.ok()) {
        return taken;
      }
    } else {
      return refuse(
          "is not a machine setting (give @vcpus=N, @ipi=x2apic|xapic|pv and/or "
          "@lapic=kvm|vmm)");
    }
  }
  if (machine.build.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--variants: '%s' names no build before its '@'", spec));
  }
  return machine;
}

// What `run` would refuse of a bundled build on that machine, by run's own check
// (--trap off here: each trap mechanism is checked when the KVM target loads the build).
absl::Status CheckBundledMachine(std::string_view spec, const VariantInfo& info) {
  if (info.default_machine()) return absl::OkStatus();
  absl::StatusOr<const KernelVariant*> build = ResolveVariant(info.build_name());
  if (!build.ok()) return build.status();
  absl::StatusOr<ElfImage> elf = ParseKernel(**build);
  if (!elf.ok()) return elf.status();
  x86::MachineConfig config;
  config.target = x86::BootTargetOf(*elf);
  config.vcpus = info.vcpus;
  if (!info.ipi.empty()) config.ipi = *x86::ParseIpiMethod(info.ipi);
  if (!info.lapic.empty()) config.lapic = *x86::ParseLapic(info.lapic);
  if (absl::Status s = x86::CheckMachineConfig(*elf, config); !s.ok()) {
    return absl::Status(s.code(), absl::StrFormat("--variants: '%s': %s", spec, s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string VariantInfo::MachineSuffix(int vcpus, std::string_view ipi, std::string_view lapic) {
  std::string suffix;
  if (vcpus != 1) absl::StrAppendFormat(&suffix, "%cvcpus=%d", kMachineSuffixMark, vcpus);
  if (!ipi.empty()) absl::StrAppendFormat(&suffix, "%cipi=%s", kMachineSuffixMark, ipi);
  if (!lapic.empty()) absl::StrAppendFormat(&suffix, "%clapic=%s", kMachineSuffixMark, lapic);
  return suffix;
}

absl::Status CheckWorkloadVcpus(const Matrix& matrix) {
  for (const std::string& workload : matrix.workloads) {
    const int needs = launch::WorkloadVcpus(workload);
    for (const VariantInfo& variant : matrix.variants) {
      if (variant.vcpus >= needs) continue;
      return absl::InvalidArgumentError(absl::StrFormat(
          "--workloads: %s runs across CPUs and needs @vcpus=%d on every variant; '%s' has %d "
          "(give e.g. --variants 'smp=on@vcpus=%d')",
          workload, needs, variant.name, variant.vcpus, needs));
    }
  }
  return absl::OkStatus();
}

std::vector<RunSpec> Schedule(const Matrix& matrix) {
  std::vector<RunSpec> runs;
  runs.reserve(matrix.runs());
  for (uint32_t rep = 0; rep < matrix.repetitions; ++rep) {
    for (size_t w = 0; w < matrix.workloads.size(); ++w) {
      for (size_t t = 0; t < matrix.traps.size(); ++t) {
        for (size_t v = 0; v < matrix.variants.size(); ++v) {
          runs.push_back({runs.size(), w, v, t, rep});
        }
      }
    }
  }
  return runs;
}

std::string BundledKernelWords(const std::string& workload, const Matrix& matrix) {
  // The matrix's workloads are the bundled kernel's (ParseWorkloadList) and its counts
  // were checked when it was made, so the words always form.
  absl::StatusOr<std::string> words = launch::GuestWords(
      launch::KernelDialect::kBundled, workload, absl::StrCat(matrix.ops),
      launch::WarmupValue(matrix.warmup, workload), "");
  return words.ok() ? *std::move(words) : std::string();
}

std::vector<std::string> SplitList(std::string_view list) { return Split(list, ", \t\n"); }

absl::StatusOr<std::vector<std::string>> ParseWorkloadList(std::string_view list) {
  std::vector<std::string> names = SplitList(list);
  const std::vector<std::string> known = launch::BenchWorkloadNames();
  if (names.size() == 1 && names[0] == "all") {
    // Those of one vCPU: a workload across CPUs is named (its variants need @vcpus=2).
    std::vector<std::string> all;
    for (const std::string& name : known) {
      if (launch::WorkloadVcpus(name) == 1) all.push_back(name);
    }
    return all;
  }
  if (names.empty()) return absl::InvalidArgumentError("--workloads is empty");
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(known.begin(), known.end(), names[i]) == known.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--workloads: '%s' is not a workload to bench (give some of: %s, or all)", names[i],
          absl::StrJoin(known, ", ")));
    }
    if (std::find(names.begin(), names.begin() + i, names[i]) != names.begin() + i) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--workloads: '%s' is listed twice", names[i]));
    }
  }
  return names;
}

absl::StatusOr<VariantInfo> DescribeBuiltVariant(std::string_view spec) {
  absl::StatusOr<const KernelVariant*> build = ResolveVariant(spec);
  if (!build.ok()) return build.status();
  absl::StatusOr<ElfImage> elf = ParseKernel(**build);
  if (!elf.ok()) return elf.status();
  VariantInfo info;
  info.name = std::string((*build)->name);
  info.settings = DescribeVariant(**build);
  for (const ElfSection& section : elf->executable_sections()) info.text_bytes += section.bytes.size();
  info.image_fnv1a64 = absl::StrFormat("%#018x", Fnv1a64((*build)->bytes));
  return info;
}

absl::StatusOr<std::vector<VariantInfo>> ParseVariantList(std::string_view list) {
  std::vector<std::string> specs = Split(list, "; \t\n");
  if (specs.size() == 1 && specs[0] == "all") {
    specs.clear();
    // The seed builds: a pv build is what --traps pv boots in place of its seed build.
    for (const KernelVariant& variant : KernelVariants()) {
      if (IsSeedBuild(variant)) specs.emplace_back(variant.name);
    }
  }
  if (specs.empty()) return absl::InvalidArgumentError("--variants is empty");
  std::vector<VariantInfo> variants;
  for (const std::string& spec : specs) {
    absl::StatusOr<MachineSpec> machine = ParseMachineSpec(spec);
    if (!machine.ok()) return machine.status();
    absl::StatusOr<VariantInfo> info = machine->build.rfind(kLinuxBuildSpec, 0) == 0
                                           ? DescribeLinuxBuild(machine->build)
                                           : DescribeBuiltVariant(machine->build);
    if (info.ok()) {
      info->vcpus = machine->vcpus;
      info->ipi = machine->ipi;
      info->lapic = machine->lapic;
      info->name += VariantInfo::MachineSuffix(info->vcpus, info->ipi, info->lapic);
      if (!info->linux_kernel()) {
        if (absl::Status s = CheckBundledMachine(spec, *info); !s.ok()) return s;
      }
    }
    if (!info.ok()) {
      // ResolveVariant's message starts with "--variant '<spec>'"; say which flag.
      std::string message(info.status().message());
      if (message.rfind("--variant ", 0) == 0) message = "--variants: " + message.substr(10);
      return absl::Status(info.status().code(), message);
    }
    for (const VariantInfo& seen : variants) {
      if (seen.name == info->name) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "--variants: '%s' is the build '%s', which is listed already", spec, seen.name));
      }
    }
    variants.push_back(*std::move(info));
  }
  return variants;
}

absl::StatusOr<Shard> ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  Shard shard;
  if (slash == std::string_view::npos ||
      !absl::SimpleAtoi(Absl(text.substr(0, slash)), &shard.index) ||
      !absl::SimpleAtoi(Absl(text.substr(slash + 1)), &shard.count) || shard.count == 0 ||
      shard.index == 0 || shard.index > shard.count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--shard '%s': give i/n with 1 <= i <= n (e.g. 2/4, the second of four slices)", text));
  }
  return shard;
}

RunRange ShardRange(size_t runs, Shard shard) {
  const size_t i = shard.index - 1, n = shard.count;
  return {runs * i / n, runs * (i + 1) / n};
}

}  // namespace sigvisor::bench
