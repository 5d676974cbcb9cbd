#include "vmm/kvm/kvm.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "absl/strings/str_format.h"
#include "vmm/kvm/kvm_error.h"
#include "vmm/kvm/kvm_layouts.h"

namespace sigvisor {
namespace {

// ioctl that retries on EINTR except where the caller wants to see it.
template <typename Arg>
int Ioctl(int fd, unsigned long request, Arg arg) {
  int ret;
  do {
    ret = ::ioctl(fd, request, arg);
  } while (ret < 0 && errno == EINTR);
  return ret;
}

absl::StatusOr<std::vector<kvm_cpuid_entry2>> ReadSupportedCpuid(int kvm_fd) {
  constexpr size_t kMaxEntries = 256;
  std::vector<uint8_t> buffer(sizeof(KvmCpuid2Header) + kMaxEntries * sizeof(kvm_cpuid_entry2));
  auto* cpuid = reinterpret_cast<KvmCpuid2Header*>(buffer.data());
  cpuid->nent = kMaxEntries;
  if (Ioctl(kvm_fd, kKvmGetSupportedCpuid, cpuid) < 0) {
    return ErrnoError("KVM_GET_SUPPORTED_CPUID", errno);
  }
  std::vector<kvm_cpuid_entry2> entries(std::min<size_t>(cpuid->nent, kMaxEntries));
  std::memcpy(entries.data(), buffer.data() + sizeof(KvmCpuid2Header),
              entries.size() * sizeof(kvm_cpuid_entry2));
  return entries;
}

}  // namespace

absl::StatusOr<KvmSystem> KvmSystem::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrFormat(
          "%s does not exist: this machine has no KVM (load kvm_intel/kvm_amd, or run on a "
          "host with virtualization enabled)",
          path));
    }
    if (err == EACCES || err == EPERM) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "cannot open %s: permission denied (add yourself to the 'kvm' group or run as "
          "root)",
          path));
    }
    return ErrnoError(absl::StrFormat("open %s", path), err);
  }
  UniqueFd kvm(fd);
  int version = ::ioctl(kvm.get(), KVM_GET_API_VERSION, 0);
  if (version != KVM_API_VERSION) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s speaks KVM API %d, sigvisor needs %d", path, version,
                        KVM_API_VERSION));
  }
  int run_size = ::ioctl(kvm.get(), KVM_GET_VCPU_MMAP_SIZE, 0);
  if (run_size < static_cast<int>(sizeof(kvm_run))) {
    return ErrnoError("KVM_GET_VCPU_MMAP_SIZE", errno);
  }
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> cpuid = ReadSupportedCpuid(kvm.get());
  return KvmSystem(std::move(kvm), static_cast<size_t>(run_size), std::move(cpuid));
}

int KvmSystem::CheckExtension(int capability) const {
  int ret = ::ioctl(fd_.get(), KVM_CHECK_EXTENSION, capability);
  return ret < 0 ? 0 : ret;
}

absl::StatusOr<std::vector<uint32_t>> KvmSystem::MsrIndexList() const {
  // struct kvm_msr_list: nmsrs, then the indices. Asked with room for 1024, which is
  // several times what any KVM lists (E2BIG says how many there are otherwise).
  constexpr uint32_t kMaxMsrs = 1024;
  std::vector<uint32_t> buffer(1 + kMaxMsrs);
  buffer[0] = kMaxMsrs;
  if (Ioctl(fd_.get(), kKvmGetMsrIndexList, buffer.data()) < 0) {
    return ErrnoError("KVM_GET_MSR_INDEX_LIST", errno);
  }
  const uint32_t count = std::min(buffer[0], kMaxMsrs);
  return std::vector<uint32_t>(buffer.begin() + 1, buffer.begin() + 1 + count);
}

absl::StatusOr<KvmVm> KvmSystem::CreateVm() const {
  int fd = Ioctl(fd_.get(), KVM_CREATE_VM, 0);
  if (fd < 0) return ErrnoError("KVM_CREATE_VM", errno);
  return KvmVm(UniqueFd(fd), run_size_);
}

absl::Status KvmVm::SetMemoryRegion(uint32_t slot, uint64_t gpa, uint64_t size, void* host) {
  kvm_userspace_memory_region region = {
      .slot = slot,
      .flags = 0,
      .guest_phys_addr = gpa,
      .memory_size = size,
      .userspace_addr = reinterpret_cast<uint64_t>(host),
  };
  if (Ioctl(fd_.get(), KVM_SET_USER_MEMORY_REGION, &region) < 0) {
    return ErrnoError("KVM_SET_USER_MEMORY_REGION", errno);
  }
  return absl::OkStatus();
}

absl::Status KvmVm::SetTssAddr(uint64_t gpa) {
  if (Ioctl(fd_.get(), KVM_SET_TSS_ADDR, static_cast<unsigned long>(gpa)) < 0) {
    return ErrnoError("KVM_SET_TSS_ADDR", errno);
  }
  return absl::OkStatus();
}

absl::Status KvmVm::CreateIrqchip() {
  if (Ioctl(fd_.get(), KVM_CREATE_IRQCHIP, 0) < 0) return ErrnoError("KVM_CREATE_IRQCHIP", errno);
  return absl::OkStatus();
}

absl::Status KvmVm::CreatePit() {
  kvm_pit_config config = {};
  if (Ioctl(fd_.get(), KVM_CREATE_PIT2, &config) < 0) return ErrnoError("KVM_CREATE_PIT2", errno);
  return absl::OkStatus();
}

absl::Status KvmVm::SetIrqLine(uint32_t irq, bool level) {
  kvm_irq_level line = {};
  line.irq = irq;
  line.level = level ? 1 : 0;
  if (Ioctl(fd_.get(), KVM_IRQ_LINE, &line) < 0) return ErrnoError("KVM_IRQ_LINE", errno);
  return absl::OkStatus();
}

absl::StatusOr<bool> KvmVm::SignalMsi(uint64_t address, uint32_t data) {
  kvm_msi msi = {};
  msi.address_lo = static_cast<uint32_t>(address);
  msi.address_hi = static_cast<uint32_t>(address >> 32);
  msi.data = data;
  const int ret = Ioctl(fd_.get(), KVM_SIGNAL_MSI, &msi);
  if (ret < 0) return ErrnoError("KVM_SIGNAL_MSI", errno);
  return ret > 0;
}

absl::StatusOr<kvm_irqchip> KvmVm::GetIrqchip(uint32_t chip_id) const {
  kvm_irqchip chip = {};
  chip.chip_id = chip_id;
  if (Ioctl(fd_.get(), KVM_GET_IRQCHIP, &chip) < 0) return ErrnoError("KVM_GET_IRQCHIP", errno);
  return chip;
}

absl::Status KvmVm::SetIrqchip(const kvm_irqchip& chip) {
  kvm_irqchip copy = chip;  // the ioctl's argument is not const
  if (Ioctl(fd_.get(), KVM_SET_IRQCHIP, &copy) < 0) return ErrnoError("KVM_SET_IRQCHIP", errno);
  return absl::OkStatus();
}

absl::StatusOr<kvm_pit_state2> KvmVm::GetPit() const {
  kvm_pit_state2 state = {};
  if (Ioctl(fd_.get(), KVM_GET_PIT2, &state) < 0) return ErrnoError("KVM_GET_PIT2", errno);
  return state;
}

absl::Status KvmVm::SetPit(const kvm_pit_state2& state) {
  kvm_pit_state2 copy = state;
  if (Ioctl(fd_.get(), KVM_SET_PIT2, &copy) < 0) return ErrnoError("KVM_SET_PIT2", errno);
  return absl::OkStatus();
}

absl::StatusOr<kvm_clock_data> KvmVm::GetClock() const {
  kvm_clock_data clock = {};
  if (Ioctl(fd_.get(), KVM_GET_CLOCK, &clock) < 0) return ErrnoError("KVM_GET_CLOCK", errno);
  return clock;
}

absl::Status KvmVm::SetClock(const kvm_clock_data& clock) {
  kvm_clock_data copy = {};
  copy.clock = clock.clock;
  if (Ioctl(fd_.get(), KVM_SET_CLOCK, &copy) < 0) return ErrnoError("KVM_SET_CLOCK", errno);
  return absl::OkStatus();
}

absl::Status KvmVm::EnableCap(uint32_t capability, uint64_t arg0) {
  kvm_enable_cap cap = {};
  cap.cap = capability;
  cap.args[0] = arg0;
  if (Ioctl(fd_.get(), KVM_ENABLE_CAP, &cap) < 0) {
    return ErrnoError(absl::StrFormat("KVM_ENABLE_CAP(%u)", capability), errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<KvmVcpu> KvmVm::CreateVcpu(int id) {
  int fd = Ioctl(fd_.get(), KVM_CREATE_VCPU, id);
  if (fd < 0) return ErrnoError("KVM_CREATE_VCPU", errno);
  UniqueFd vcpu(fd);
  void* run = ::mmap(nullptr, run_size_, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu.get(), 0);
  if (run == MAP_FAILED) return ErrnoError("mmap of the vCPU run page", errno);
  return KvmVcpu(std::move(vcpu), UniqueMapping(run, run_size_));
}

absl::Status KvmVcpu::Run() {
  if (::ioctl(fd_.get(), KVM_RUN, 0) < 0) {
    // EAGAIN: an AP that waited in KVM_RUN for INIT/SIPI (mp_state UNINITIALIZED) was
    // woken; like an interrupted run, the next KVM_RUN enters the guest.
    if (errno == EINTR || errno == EAGAIN) {
      run()->exit_reason = KVM_EXIT_INTR;
      return absl::OkStatus();
    }
    return ErrnoError("KVM_RUN", errno);
  }
  return absl::OkStatus();
}

#define SIGVISOR_VCPU_GET(Type, Name, Request)                      \
  absl::StatusOr<Type> KvmVcpu::Name() const {                      \
    Type value = {};                                                \
    if (Ioctl(fd_.get(), Request, &value) < 0) {                    \
      return ErrnoError(#Request, errno);                           \
    }                                                               \
    return value;                                                   \
  }
#define SIGVISOR_VCPU_SET(Type, Name, Request)                      \
  absl::Status KvmVcpu::Name(const Type& value) {                   \
    if (Ioctl(fd_.get(), Request, &value) < 0) {                    \
      return ErrnoError(#Request, errno);                           \
    }                                                               \
    return absl::OkStatus();                                        \
  }

SIGVISOR_VCPU_GET(kvm_regs, GetRegs, KVM_GET_REGS)
SIGVISOR_VCPU_SET(kvm_regs, SetRegs, KVM_SET_REGS)
SIGVISOR_VCPU_GET(kvm_sregs, GetSregs, KVM_GET_SREGS)
SIGVISOR_VCPU_SET(kvm_sregs, SetSregs, KVM_SET_SREGS)
SIGVISOR_VCPU_GET(kvm_debugregs, GetDebugRegs, KVM_GET_DEBUGREGS)
SIGVISOR_VCPU_SET(kvm_debugregs, SetDebugRegs, KVM_SET_DEBUGREGS)
SIGVISOR_VCPU_SET(kvm_guest_debug, SetGuestDebug, KVM_SET_GUEST_DEBUG)
SIGVISOR_VCPU_GET(kvm_vcpu_events, GetEvents, KVM_GET_VCPU_EVENTS)
SIGVISOR_VCPU_SET(kvm_vcpu_events, SetEvents, KVM_SET_VCPU_EVENTS)
SIGVISOR_VCPU_GET(kvm_mp_state, GetMpState, KVM_GET_MP_STATE)
SIGVISOR_VCPU_SET(kvm_mp_state, SetMpState, KVM_SET_MP_STATE)
SIGVISOR_VCPU_GET(kvm_xcrs, GetXcrs, KVM_GET_XCRS)
SIGVISOR_VCPU_SET(kvm_xcrs, SetXcrs, KVM_SET_XCRS)
SIGVISOR_VCPU_GET(kvm_fpu, GetFpu, KVM_GET_FPU)
SIGVISOR_VCPU_GET(kvm_lapic_state, GetLapic, KVM_GET_LAPIC)
SIGVISOR_VCPU_SET(kvm_lapic_state, SetLapic, KVM_SET_LAPIC)

absl::Status KvmVcpu::Interrupt(uint32_t vector) {
  kvm_interrupt irq = {};
  irq.irq = vector;
  if (Ioctl(fd_.get(), KVM_INTERRUPT, &irq) < 0) return ErrnoError("KVM_INTERRUPT", errno);
  return absl::OkStatus();
}

#undef SIGVISOR_VCPU_GET
#undef SIGVISOR_VCPU_SET

absl::Status KvmVcpu::SetCpuid(std::span<const kvm_cpuid_entry2> entries) {
  std::vector<uint8_t> buffer(sizeof(KvmCpuid2Header) + entries.size_bytes());
  auto* cpuid = reinterpret_cast<KvmCpuid2Header*>(buffer.data());
  cpuid->nent = static_cast<uint32_t>(entries.size());
  std::memcpy(buffer.data() + sizeof(KvmCpuid2Header), entries.data(), entries.size_bytes());
  if (Ioctl(fd_.get(), kKvmSetCpuid2, cpuid) < 0) return ErrnoError("KVM_SET_CPUID2", errno);
  return absl::OkStatus();
}

absl::Status KvmVcpu::SetMsrs(std::span<const kvm_msr_entry> msrs, size_t* done) {
  std::vector<uint8_t> buffer(sizeof(KvmMsrsHeader) + msrs.size_bytes());
  auto* header = reinterpret_cast<KvmMsrsHeader*>(buffer.data());
  header->nmsrs = static_cast<uint32_t>(msrs.size());
  std::memcpy(buffer.data() + sizeof(KvmMsrsHeader), msrs.data(), msrs.size_bytes());
  int set = Ioctl(fd_.get(), kKvmSetMsrs, header);
  if (done != nullptr) *done = set < 0 ? msrs.size() : static_cast<size_t>(set);
  if (set < 0) return ErrnoError("KVM_SET_MSRS", errno);
  if (static_cast<size_t>(set) != msrs.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KVM_SET_MSRS: the host refused MSR %#x (set %d of %d)", msrs[set].index, set,
        msrs.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> KvmVcpu::GetMsr(uint32_t index) const {
  // struct kvm_msrs in its C layout (kvm_layouts.h): the header, then one entry.
  struct {
    KvmMsrsHeader header;
    kvm_msr_entry entry;
  } msrs = {};
  static_assert(offsetof(decltype(msrs), entry) == sizeof(KvmMsrsHeader));
  msrs.header.nmsrs = 1;
  msrs.entry.index = index;
  int got = Ioctl(fd_.get(), kKvmGetMsrs, &msrs);
  if (got < 0) return ErrnoError("KVM_GET_MSRS", errno);
  if (got != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("KVM_GET_MSRS: the host does not give MSR %#x", index));
  }
  return msrs.entry.data;
}

absl::StatusOr<std::vector<kvm_msr_entry>> KvmVcpu::GetMsrs(std::span<const uint32_t> indices,
                                                            std::vector<uint32_t>* refused) const {
  std::vector<kvm_msr_entry> got;
  std::vector<uint8_t> buffer;
  while (!indices.empty()) {
    buffer.assign(sizeof(KvmMsrsHeader) + indices.size() * sizeof(kvm_msr_entry), 0);
    auto* header = reinterpret_cast<KvmMsrsHeader*>(buffer.data());
    header->nmsrs = static_cast<uint32_t>(indices.size());
    auto* entries = reinterpret_cast<kvm_msr_entry*>(buffer.data() + sizeof(KvmMsrsHeader));
    for (size_t i = 0; i < indices.size(); ++i) entries[i].index = indices[i];
    const int n = Ioctl(fd_.get(), kKvmGetMsrs, header);
    if (n < 0) return ErrnoError("KVM_GET_MSRS", errno);
    const size_t read = std::min<size_t>(static_cast<size_t>(n), indices.size());
    got.insert(got.end(), entries, entries + read);
    if (read == indices.size()) break;
    if (refused != nullptr) refused->push_back(indices[read]);
    indices = indices.subspan(read + 1);
  }
  return got;
}

// By hand rather than by the macros: their errors would name kKvmGetXsave.
absl::StatusOr<KvmXsave> KvmVcpu::GetXsave() const {
  KvmXsave xsave = {};
  if (Ioctl(fd_.get(), kKvmGetXsave, &xsave) < 0) return ErrnoError("KVM_GET_XSAVE", errno);
  return xsave;
}

absl::Status KvmVcpu::SetXsave(const KvmXsave& xsave) {
  if (Ioctl(fd_.get(), kKvmSetXsave, &xsave) < 0) return ErrnoError("KVM_SET_XSAVE", errno);
  return absl::OkStatus();
}

absl::Status KvmVcpu::CompletePendingIo() {
  run()->immediate_exit = 1;
  const int ret = ::ioctl(fd_.get(), KVM_RUN, 0);
  const int err = errno;
  run()->immediate_exit = 0;
  if (ret == 0 || err == EINTR) return absl::OkStatus();  // EINTR: what immediate_exit returns
  return ErrnoError("KVM_RUN (immediate exit, to complete pending I/O)", err);
}

absl::StatusOr<uint64_t> KvmVcpu::TscKhz() const {
  int khz = Ioctl(fd_.get(), KVM_GET_TSC_KHZ, 0);
  if (khz < 0) return ErrnoError("KVM_GET_TSC_KHZ", errno);
  return static_cast<uint64_t>(khz);
}

absl::StatusOr<StatsFd> KvmVcpu::OpenStats() const {
  int fd = Ioctl(fd_.get(), KVM_GET_STATS_FD, 0);
  if (fd < 0) return ErrnoError("KVM_GET_STATS_FD", errno);
  return StatsFd::Open(UniqueFd(fd));
}

}  // namespace sigvisor
