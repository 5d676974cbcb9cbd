// The host's clocks as the side-by-side bench reads them: a run's wall and CPU time,
// and the TSC rate that turns the guest's cycles into time.
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "vmm/app/bench/peer.h"
#include "vmm/base/clock.h"

namespace sigvisor::bench {

RunCost ProcessCostNow() {
  timespec cpu;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  return {MonotonicNs(), uint64_t(cpu.tv_sec) * 1000000000ull + uint64_t(cpu.tv_nsec)};
}

uint64_t HostTscKhz(int kvm_fd) {
  if (kvm_fd < 0) return 0;
  const int vm = ::ioctl(kvm_fd, KVM_CREATE_VM, 0);
  if (vm < 0) return 0;
  const int vcpu = ::ioctl(vm, KVM_CREATE_VCPU, 0);
  int khz = vcpu < 0 ? -1 : ::ioctl(vcpu, KVM_GET_TSC_KHZ, 0);
  if (vcpu >= 0) ::close(vcpu);
  ::close(vm);
  return khz > 0 ? static_cast<uint64_t>(khz) : 0;
}

}  // namespace sigvisor::bench
