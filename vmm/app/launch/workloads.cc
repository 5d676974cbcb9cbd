#include "vmm/app/launch/workloads.h"

#include <functional>
#include <iterator>

#include "absl/strings/str_format.h"

namespace sigvisor::launch {
namespace {

constexpr Inits kBUNDLED = Inits::kBundled;
constexpr Inits kLINUX = Inits::kLinux;
constexpr Inits kBOTH = Inits::kBoth;
constexpr InBench kBench0 = InBench::kNo;
constexpr InBench kBench1 = InBench::kYes;
constexpr InBench kBench2 = InBench::kDefault;

constexpr Workload kWorkloads[] = {
#define SIGVISOR_WORKLOAD(name, inits, ops, warmup, bench, cpus, what) \
  {#name, k##inits, ops != 0, warmup != 0, kBench##bench, cpus, what},
#include "guest-kit/abi/workloads.inc"
#undef SIGVISOR_WORKLOAD
};

std::vector<std::string> NamesWhere(const std::function<bool(const Workload&)>& keep) {
  std::vector<std::string> names;
  for (const Workload& w : kWorkloads) {
    if (keep(w)) names.emplace_back(w.name);
  }
  return names;
}

}  // namespace

std::span<const Workload> Workloads() { return kWorkloads; }

const Workload* FindWorkload(std::string_view name) {
  for (const Workload& w : kWorkloads) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

std::vector<std::string> BundledKernelWorkloadNames() {
  return NamesWhere([](const Workload& w) { return w.inits != Inits::kLinux; });
}

std::vector<std::string> LinuxInitWorkloadNames() {
  return NamesWhere([](const Workload& w) { return w.inits != Inits::kBundled; });
}

std::vector<std::string> BenchWorkloadNames() {
  return NamesWhere([](const Workload& w) { return w.bench != InBench::kNo; });
}

std::vector<std::string> BenchDefaultWorkloadNames() {
  return NamesWhere([](const Workload& w) { return w.bench == InBench::kDefault; });
}

bool WorkloadTakesOps(std::string_view name) {
  const Workload* workload = FindWorkload(name);
  return workload == nullptr || workload->ops;
}

std::vector<std::string> WorkloadsWithoutOps() {
  return NamesWhere([](const Workload& w) { return !w.ops; });
}

int WorkloadVcpus(std::string_view name) {
  const Workload* workload = FindWorkload(name);
  return workload == nullptr ? 1 : workload->vcpus;
}

absl::Status CheckWorkloadVcpus(std::string_view name, int vcpus) {
  // Only a workload across CPUs is refused here: a machine's vCPUs out of range are
  // --vcpus's own error, reported where it is checked.
  const int needs = WorkloadVcpus(name);
  if (needs <= 1 || vcpus >= needs) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "--workload %s runs across CPUs: it needs %d vCPUs, and this machine has %d (`run "
      "--vcpus %d` gives it them)",
      name, needs, vcpus, needs));
}

std::vector<std::string> WarmedWorkloadNames() {
  return NamesWhere([](const Workload& w) { return w.warmup; });
}

}  // namespace sigvisor::launch
