// Which kind of KVM host the tests run on, as sigvisor decides it
// (arch/x86_64/vmm/probe): a Linux test sizes itself by it, since a Linux boot costs
// minutes where guest CPL0 is emulated (PVM) and seconds where it runs directly.
#ifndef SIGVISOR_TESTS_HOST_KIND_H_
#define SIGVISOR_TESTS_HOST_KIND_H_

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor::testing {

// Whether this host emulates guest CPL0 (PVM); false without /dev/kvm.
inline bool CpuLevelZeroEmulated() {
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  if (!kvm.ok()) return false;
  absl::StatusOr<HostInfo> host = DetectHost(*kvm);
  return host.ok() && host->cpl0_emulated;
}

}  // namespace sigvisor::testing

#endif  // SIGVISOR_TESTS_HOST_KIND_H_
