#include "arch/x86_64/vmm/machine/smp_boot.h"

#include <bit>
#include <string>

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

// The guest's error: the run ends with `what`, naming the call and its caller.
HypercallResult GuestError(uint64_t nr, int caller, const std::string& what) {
  return HypercallResult::RunFailed(
      Outcome::kBadDeviceAccess,
      absl::StrFormat("hypercall %s from vCPU %d: %s", HypercallName(nr), caller, what));
}

HypercallResult HostError(uint64_t nr, int caller, const absl::Status& status) {
  return HypercallResult::RunFailed(
      Outcome::kHostError, absl::StrFormat("hypercall %s from vCPU %d: %s", HypercallName(nr),
                                           caller, status.message()));
}

}  // namespace

absl::Status SmpHypercalls::Register(HypercallTable& table) {
  if (absl::Status s =
          table.Register(SIGVISOR_HC_CPU_UP, [this](uint32_t gpa) { return CpuUp(gpa); });
      !s.ok()) {
    return s;
  }
  return table.Register(SIGVISOR_HC_SEND_IPI, [this](uint32_t gpa) { return SendIpi(gpa); });
}

HypercallResult SmpHypercalls::CpuUp(uint32_t args_gpa) {
  const int caller = machine_.CallingVcpu();
  auto fail = [&](const std::string& what) { return GuestError(SIGVISOR_HC_CPU_UP, caller, what); };
  if (caller != 0) return fail("only vCPU 0 makes it");
  absl::StatusOr<sigvisor_hc_cpu_up> args = memory_.ReadObject<sigvisor_hc_cpu_up>(args_gpa);
  if (!args.ok()) {
    return fail(
        absl::StrFormat("bad argument block at %#x: %s", args_gpa, args.status().message()));
  }
  if (args->reserved != 0) {
    return fail(absl::StrFormat("reserved word %#x; the ABI wants 0", args->reserved));
  }
  if (args->cpu < 1 || args->cpu >= static_cast<uint32_t>(vcpus_)) {
    return fail(absl::StrFormat("cpu %d: the machine has %d vCPU%s, so 1 to %d can be started",
                                args->cpu, vcpus_, vcpus_ == 1 ? "" : "s", vcpus_ - 1));
  }
  if (started_[args->cpu]) return fail(absl::StrFormat("cpu %d was started already", args->cpu));
  absl::StatusOr<kvm_sregs> sregs = machine_.CallerSregs();
  if (!sregs.ok()) return HostError(SIGVISOR_HC_CPU_UP, caller, sregs.status());
  const ApEntry entry{.sregs = *sregs, .rip = args->rip, .rsp = args->rsp, .rdi = args->arg};
  if (absl::Status s = machine_.StartAp(static_cast<int>(args->cpu), entry); !s.ok()) {
    return HostError(SIGVISOR_HC_CPU_UP, caller, s);
  }
  started_[args->cpu] = true;
  return HypercallResult{};
}

HypercallResult SmpHypercalls::SendIpi(uint32_t args_gpa) {
  const int caller = machine_.CallingVcpu();
  auto fail = [&](const std::string& what) {
    return GuestError(SIGVISOR_HC_SEND_IPI, caller, what);
  };
  absl::StatusOr<sigvisor_hc_send_ipi> args = memory_.ReadObject<sigvisor_hc_send_ipi>(args_gpa);
  if (!args.ok()) {
    return fail(
        absl::StrFormat("bad argument block at %#x: %s", args_gpa, args.status().message()));
  }
  if (args->reserved != 0) {
    return fail(absl::StrFormat("reserved word %#x; the ABI wants 0", args->reserved));
  }
  if (vcpus_ < 2) return fail("the machine has one vCPU: it sends no IPIs");
  if (args->cpu_mask == 0) return fail("an empty cpu_mask");
  const uint64_t machine_mask = (uint64_t{1} << vcpus_) - 1;  // vcpus_ <= SIGVISOR_MAX_CPUS
  if ((args->cpu_mask & ~machine_mask) != 0) {
    return fail(absl::StrFormat("cpu_mask %#x names vCPU %d; the machine has %d", args->cpu_mask,
                                std::countr_zero(args->cpu_mask & ~machine_mask), vcpus_));
  }
  if (args->vector < SIGVISOR_IPI_VECTOR_MIN || args->vector > 255) {
    return fail(absl::StrFormat("vector %#x; give %#x to 0xff (below are exceptions)", args->vector,
                                SIGVISOR_IPI_VECTOR_MIN));
  }
  for (uint64_t mask = args->cpu_mask; mask != 0; mask &= mask - 1) {
    const int cpu = std::countr_zero(mask);
    absl::StatusOr<bool> delivered = machine_.SignalIpi(cpu, args->vector);
    if (!delivered.ok()) return HostError(SIGVISOR_HC_SEND_IPI, caller, delivered.status());
    if (*delivered) {
      delivered_[cpu].fetch_add(1, std::memory_order_relaxed);
    } else {
      blocked_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return HypercallResult{};
}

uint64_t SmpHypercalls::ipis_delivered(int cpu) const {
  if (cpu < 0 || cpu >= static_cast<int>(delivered_.size())) return 0;
  return delivered_[cpu].load(std::memory_order_relaxed);
}

uint64_t SmpHypercalls::ipis_delivered() const {
  uint64_t total = 0;
  for (const std::atomic<uint64_t>& n : delivered_) total += n.load(std::memory_order_relaxed);
  return total;
}

int SmpHypercalls::aps_started() const {
  int n = 0;
  for (bool started : started_) n += started ? 1 : 0;
  return n;
}

}  // namespace sigvisor::x86
