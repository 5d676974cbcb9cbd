// The workload catalogue (guest-kit/abi/workloads.inc) as the VMM reads it: which init
// runs each workload, which take --warmup, which bench runs, how many vCPUs each needs. Every list
// of workload names the VMM checks or prints comes from here, so adding a row to the catalogue (and
// its function to the inits) is all a new workload needs (docs/extending.md).
#ifndef SIGVISOR_VMM_APP_LAUNCH_WORKLOADS_H_
#define SIGVISOR_VMM_APP_LAUNCH_WORKLOADS_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace sigvisor::launch {

// Which inits run a workload.
enum class Inits { kBundled, kLinux, kBoth };

// Whether bench takes a workload.
enum class InBench { kNo, kYes, kDefault };

struct Workload {
  std::string_view name;
  Inits inits;
  bool ops;     // it repeats its operation --ops times; else it runs once and --ops is refused
  bool warmup;  // it runs struct measure's warm-up ops first: --warmup applies
  InBench bench;
  int vcpus;              // the vCPUs it needs: 2 for a workload across CPUs, else 1
  std::string_view what;  // one line for help and docs
};

// Every row of the catalogue, in its order.
std::span<const Workload> Workloads();

// The catalogue's row for `name`, or null.
const Workload* FindWorkload(std::string_view name);

// The names of the workloads the bundled kernel's init runs, or the Linux init's.
std::vector<std::string> BundledKernelWorkloadNames();
std::vector<std::string> LinuxInitWorkloadNames();

// What bench takes (--workloads), and what it runs when not told.
std::vector<std::string> BenchWorkloadNames();
std::vector<std::string> BenchDefaultWorkloadNames();

// Whether `name` reads --ops (its init's ops=), as its catalogue row says; a name the
// catalogue does not have ("" for the image's default, another image's own) does.
bool WorkloadTakesOps(std::string_view name);
std::vector<std::string> WorkloadsWithoutOps();

// The vCPUs `name` needs, as its row says (1 for a name the catalogue does not have),
// and the one-line refusal of a run of a workload across CPUs on fewer.
int WorkloadVcpus(std::string_view name);
absl::Status CheckWorkloadVcpus(std::string_view name, int vcpus);

// The names of those that take --warmup.
std::vector<std::string> WarmedWorkloadNames();

}  // namespace sigvisor::launch

#endif  // SIGVISOR_VMM_APP_LAUNCH_WORKLOADS_H_
