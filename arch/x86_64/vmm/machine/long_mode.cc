#include "arch/x86_64/vmm/machine/long_mode.h"

#include <array>
#include <cstring>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/msr_index.h"
#include "arch/x86_64/vmm/cpu/segments.h"
#include "arch/x86_64/vmm/machine/boot_layout.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kPresent = 1ull << 0;
constexpr uint64_t kWritable = 1ull << 1;
constexpr uint64_t kLargePage = 1ull << 7;

constexpr uint64_t kCr0Pe = 1ull << 0, kCr0Mp = 1ull << 1, kCr0Et = 1ull << 4,
                   kCr0Ne = 1ull << 5, kCr0Wp = 1ull << 16, kCr0Am = 1ull << 18,
                   kCr0Pg = 1ull << 31;
constexpr uint64_t kCr4Pae = 1ull << 5, kCr4Osfxsr = 1ull << 9, kCr4Osxmmexcpt = 1ull << 10;
constexpr uint64_t kEferSce = 1ull << 0, kEferLme = 1ull << 8, kEferLma = 1ull << 10,
                   kEferNxe = 1ull << 11;

}  // namespace

absl::Status WriteBootTables(GuestMemory& memory) {
  const uint64_t size = memory.size();
  if (size > kMaxGuestMemory || size < kImageMinGpa) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "guest memory of %d KiB: sigvisor boots x86-64 guests with 1 MiB to 1 GiB", size >> 10));
  }
  // PML4[0] -> PDPT[0] -> PD: the first GiB. Intermediate levels allow everything;
  // the leaves say supervisor-only (U=0), so user code cannot touch kernel memory.
  absl::Status status = memory.WriteObject<uint64_t>(kPml4Gpa, kPdptGpa | kPresent | kWritable);
  if (status.ok()) status = memory.WriteObject<uint64_t>(kPdptGpa, kPdGpa | kPresent | kWritable);
  if (status.ok()) status = memory.WriteObject<uint64_t>(kPdGpa, kLowPtGpa | kPresent | kWritable);
  // The first 2 MiB in 4 KiB pages, page 0 not present: a null pointer faults.
  for (uint64_t page = 1; status.ok() && page < 512 && page * 4096 < size; ++page) {
    status = memory.WriteObject<uint64_t>(kLowPtGpa + page * 8,
                                          page * 4096 | kPresent | kWritable);
  }
  for (uint64_t i = 1; status.ok() && i * (2ull << 20) < size; ++i) {
    status = memory.WriteObject<uint64_t>(kPdGpa + i * 8,
                                          i * (2ull << 20) | kPresent | kWritable | kLargePage);
  }
  if (!status.ok()) return status;

  // The Linux x86-64 layout (sigvisor_abi.h): SYSCALL and SYSRET derive the kernel's
  // and the user's selectors from STAR by their order.
  std::array<uint64_t, 10> gdt = {};
  for (const kvm_segment& segment : {
           FlatSegment(SIGVISOR_SEL_KERNEL_CS32, FlatSegmentKind::kCode32),
           FlatSegment(SIGVISOR_SEL_KERNEL_CS, FlatSegmentKind::kCode64),
           FlatSegment(SIGVISOR_SEL_KERNEL_DS, FlatSegmentKind::kData),
           FlatSegment(SIGVISOR_SEL_USER_CS32, FlatSegmentKind::kCode32, 3),
           FlatSegment(SIGVISOR_SEL_USER_DS, FlatSegmentKind::kData, 3),
           FlatSegment(SIGVISOR_SEL_USER_CS, FlatSegmentKind::kCode64, 3),
       }) {
    gdt[segment.selector >> 3] = EncodeDescriptor(segment);
  }
  const kvm_segment tss = BusyTss(SIGVISOR_SEL_TSS, kBootTssGpa);
  gdt[SIGVISOR_SEL_TSS >> 3] = EncodeDescriptor(tss);
  gdt[(SIGVISOR_SEL_TSS >> 3) + 1] = EncodeSystemDescriptorHigh(tss);
  status = memory.WriteObject(kBootGdtGpa, gdt);
  if (!status.ok()) return status;
  return WriteEmptyTss(memory, kBootTssGpa);
}

namespace {

// SYSCALL/SYSRET selectors per the ABI layout (kernel CS 0x10, user base 0x23).
absl::Status SetSyscallMsrs(KvmVcpu& vcpu) {
  const std::array<kvm_msr_entry, 3> msrs = {{
      {.index = kMsrStar, .reserved = 0, .data = 0x0023001000000000ull},
      {.index = kMsrLstar, .reserved = 0, .data = 0},
      {.index = kMsrSyscallMask, .reserved = 0, .data = 0x47700},
  }};
  return vcpu.SetMsrs(msrs);
}

}  // namespace

absl::Status EnterAp(KvmVcpu& vcpu, const ApEntry& entry) {
  absl::StatusOr<kvm_sregs> own = vcpu.GetSregs();
  if (!own.ok()) return own.status();
  kvm_sregs sregs = entry.sregs;
  sregs.apic_base = own->apic_base;  // its own LAPIC (no BSP bit), at its reset state
  sregs.cr8 = own->cr8;
  sregs.cr2 = 0;
  std::memcpy(sregs.interrupt_bitmap, own->interrupt_bitmap, sizeof(sregs.interrupt_bitmap));
  if (absl::Status s = vcpu.SetSregs(sregs); !s.ok()) return s;
  if (absl::Status s = SetSyscallMsrs(vcpu); !s.ok()) return s;
  kvm_regs regs = {};
  regs.rip = entry.rip;
  regs.rsp = entry.rsp;
  regs.rdi = entry.rdi;
  regs.rflags = 0x2;
  if (absl::Status s = vcpu.SetRegs(regs); !s.ok()) return s;
  kvm_mp_state runnable = {};
  runnable.mp_state = KVM_MP_STATE_RUNNABLE;
  return vcpu.SetMpState(runnable);
}

absl::Status SetUpVcpu(KvmVcpu& vcpu, uint64_t entry, uint64_t boot_info_gpa,
                       std::span<const kvm_cpuid_entry2> cpuid) {
  if (absl::Status s = vcpu.SetCpuid(cpuid); !s.ok()) return s;

  absl::StatusOr<kvm_sregs> sregs = vcpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  sregs->cr0 = kCr0Pe | kCr0Mp | kCr0Et | kCr0Ne | kCr0Wp | kCr0Am | kCr0Pg;
  sregs->cr3 = kPml4Gpa;
  sregs->cr4 = kCr4Pae | kCr4Osfxsr | kCr4Osxmmexcpt;
  sregs->efer = kEferSce | kEferLme | kEferLma | kEferNxe;
  sregs->cs = FlatSegment(SIGVISOR_SEL_KERNEL_CS, FlatSegmentKind::kCode64);
  sregs->ds = sregs->es = sregs->ss = FlatSegment(SIGVISOR_SEL_KERNEL_DS, FlatSegmentKind::kData);
  sregs->fs = sregs->gs = FlatSegment(0, FlatSegmentKind::kData);
  sregs->fs.present = sregs->gs.present = 0;
  sregs->fs.unusable = sregs->gs.unusable = 1;
  sregs->gdt.base = kBootGdtGpa;
  sregs->gdt.limit = 10 * 8 - 1;
  sregs->idt.base = 0;
  sregs->idt.limit = 0;  // until the kernel installs its own: an early fault triple-faults
  sregs->tr = BusyTss(SIGVISOR_SEL_TSS, kBootTssGpa);
  sregs->ldt = {};
  sregs->ldt.unusable = 1;
  if (absl::Status s = vcpu.SetSregs(*sregs); !s.ok()) return s;

  if (absl::Status s = SetSyscallMsrs(vcpu); !s.ok()) return s;

  kvm_regs regs = {};
  regs.rip = entry;
  regs.rdi = boot_info_gpa;
  regs.rflags = 0x2;
  return vcpu.SetRegs(regs);
}

}  // namespace sigvisor::x86
