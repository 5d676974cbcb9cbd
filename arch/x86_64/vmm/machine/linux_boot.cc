#include "arch/x86_64/vmm/machine/linux_boot.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/segments.h"
#include "arch/x86_64/vmm/machine/mp_table.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kPageSize = 4096;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kMinMemory = 2 * kMiB;

constexpr uint64_t kPresent = 1ull << 0, kWritable = 1ull << 1, kLargePage = 1ull << 7;
constexpr int kIdentityMappedGiB = 4;

constexpr uint64_t kGdtEntries = 6;  // null, code32, code64, data, the TSS's two slots

constexpr uint64_t kCr0Pe = 1ull << 0, kCr0Et = 1ull << 4, kCr0Pg = 1ull << 31;
constexpr uint64_t kCr4Pae = 1ull << 5;
constexpr uint64_t kEferLme = 1ull << 8, kEferLma = 1ull << 10;

// Boot protocol defaults for headers older than the fields (boot.rst).
constexpr uint16_t kVersionInitrdAddrMax = 0x0203, kVersionCmdlineSize = 0x0206;
constexpr uint32_t kOldInitrdAddrMax = 0x37ffffff, kOldCmdlineSize = 255;
constexpr uint16_t kOwnHeaderVersion = 0x020f;
constexpr uint32_t kOwnKernelAlignment = 0x1000000;  // Firecracker's; a hint only

// Local APIC LVT registers and delivery modes (bits 8-10).
constexpr size_t kLapicLvtLint0 = 0x350, kLapicLvtLint1 = 0x360;
constexpr uint32_t kDeliveryModeMask = 0x700, kDeliveryNmi = 0x400, kDeliveryExtInt = 0x700;

// struct hvm_start_info and its tables (Xen's arch-x86/hvm/start_info.h).
struct PvhStartInfo {
  uint32_t magic;
  uint32_t version;
  uint32_t flags;
  uint32_t nr_modules;
  uint64_t modlist_paddr;
  uint64_t cmdline_paddr;
  uint64_t rsdp_paddr;
  uint64_t memmap_paddr;  // version 1 and later
  uint32_t memmap_entries;
  uint32_t reserved;
};
static_assert(sizeof(PvhStartInfo) == 56);
struct PvhModule {
  uint64_t paddr;
  uint64_t size;
  uint64_t cmdline_paddr;
  uint64_t reserved;
};
static_assert(sizeof(PvhModule) == 32);
struct PvhMemmapEntry {
  uint64_t addr;
  uint64_t size;
  uint32_t type;
  uint32_t reserved;
};
static_assert(sizeof(PvhMemmapEntry) == 24);

static_assert(kLinuxGdtGpa + kGdtEntries * 8 <= kLinuxTssGpa);
static_assert(kLinuxTssGpa + kTssLimit + 1 <= kLinuxPvhStartInfoGpa);
static_assert(kLinuxPvhStartInfoGpa + sizeof(PvhStartInfo) <= kLinuxPvhModlistGpa);
static_assert(kLinuxPvhModlistGpa + sizeof(PvhModule) <= kLinuxPvhMemmapGpa);
static_assert(kLinuxPvhMemmapGpa + 8 * sizeof(PvhMemmapEntry) <= kLinuxBootParamsGpa);
static_assert(kLinuxBootParamsGpa + kPageSize < kLinuxBootStackTop);
static_assert(kLinuxBootStackTop < kLinuxPml4Gpa);
static_assert(kLinuxPdGpa + kIdentityMappedGiB * kPageSize <= kLinuxCmdlineGpa);
static_assert(kLinuxCmdlineEnd <= kLinuxEbdaGpa);
static_assert(kLinuxMpTableGpa + MpTableSize(kMpTableMaxVcpus) <= kLinuxHighMemoryGpa);
static_assert(kBpE820Table + kBpE820MaxEntries * kE820EntrySize <= kPageSize);

constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
constexpr uint64_t AlignDown(uint64_t v, uint64_t a) { return v & ~(a - 1); }
constexpr uint64_t MiBRoundedUp(uint64_t bytes) { return (bytes + kMiB - 1) / kMiB; }

template <typename T>
void Put(std::vector<uint8_t>& page, uint64_t offset, T value) {
  std::memcpy(page.data() + offset, &value, sizeof(T));
}
template <typename T>
T Get(const std::vector<uint8_t>& page, uint64_t offset) {
  T value;
  std::memcpy(&value, page.data() + offset, sizeof(T));
  return value;
}


// CPUID, then the entry's mode, segments and registers. Both entries share
// sigvisor's GDT, an empty IDT (until the kernel loads its own, an early fault
// triple-faults), the busy TSS in TR (type 0xb in 32-bit and 64-bit mode) and no LDT.
absl::Status SetEntryState(KvmVcpu& vcpu, std::span<const kvm_cpuid_entry2> cpuid,
                           bool long_mode, const kvm_regs& regs) {
  if (absl::Status s = vcpu.SetCpuid(cpuid); !s.ok()) return s;
  absl::StatusOr<kvm_sregs> sregs = vcpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  if (long_mode) {
    // Firecracker ORs PE and PG into the reset CR0 (0x60000010), leaving the caches
    // disabled (CD, NW) until the kernel loads its own CR0; sigvisor starts with
    // them on.
    sregs->cr0 = kCr0Pe | kCr0Et | kCr0Pg;
    sregs->cr3 = kLinuxPml4Gpa;
    sregs->cr4 = kCr4Pae;
    sregs->efer = kEferLme | kEferLma;
  } else {
    // The PVH ABI: CR0 PE and ET only, CR4 and EFER clear.
    sregs->cr0 = kCr0Pe | kCr0Et;
    sregs->cr3 = 0;
    sregs->cr4 = 0;
    sregs->efer = 0;
  }
  sregs->cs = long_mode ? FlatSegment(kLinuxSelCode64, FlatSegmentKind::kCode64)
                        : FlatSegment(kLinuxSelCode32, FlatSegmentKind::kCode32);
  sregs->ds = sregs->es = sregs->ss = sregs->fs = sregs->gs =
      FlatSegment(kLinuxSelData, FlatSegmentKind::kData);
  sregs->gdt.base = kLinuxGdtGpa;
  sregs->gdt.limit = kGdtEntries * 8 - 1;
  sregs->idt.base = 0;
  sregs->idt.limit = 0;
  sregs->tr = BusyTss(kLinuxSelTss, kLinuxTssGpa);
  sregs->ldt = {};
  sregs->ldt.unusable = 1;
  if (absl::Status s = vcpu.SetSregs(*sregs); !s.ok()) return s;
  return vcpu.SetRegs(regs);
}

// What the kernel allows: from its setup header when there is one.
struct KernelLimits {
  uint32_t cmdline_size;
  uint32_t initrd_addr_max;
};

// The zero page with the setup header in place (the bzImage's, or a minimal one).
absl::StatusOr<std::vector<uint8_t>> ZeroPageWithHeader(const LinuxBootParams& params,
                                                        KernelLimits& limits) {
  std::vector<uint8_t> page(kPageSize, 0);
  const std::span<const uint8_t> header = params.setup_header;
  if (header.empty()) {
    Put<uint16_t>(page, kHdrBootFlag, kBootFlagMagic);
    Put<uint32_t>(page, kHdrHeader, kHdrSMagic);
    Put<uint16_t>(page, kHdrVersion, kOwnHeaderVersion);
    Put<uint8_t>(page, kHdrLoadflags, kLoadedHigh);
    Put<uint32_t>(page, kHdrKernelAlignment, kOwnKernelAlignment);
    Put<uint32_t>(page, kHdrCmdlineSize, params.cmdline_size);
    Put<uint32_t>(page, kHdrInitrdAddrMax, params.initrd_addr_max);
    limits = {params.cmdline_size, params.initrd_addr_max};
    return page;
  }
  if (header.size() < kHdrVersion + 2 - kBpSetupHeader) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the setup header is %d bytes; the boot protocol's is at least %d", header.size(),
        kHdrVersion + 2 - kBpSetupHeader));
  }
  std::memcpy(page.data() + kBpSetupHeader, header.data(),
              std::min<size_t>(header.size(), kHdrEnd - kBpSetupHeader));
  if (Get<uint16_t>(page, kHdrBootFlag) != kBootFlagMagic ||
      Get<uint32_t>(page, kHdrHeader) != kHdrSMagic) {
    return absl::InvalidArgumentError(
        "the setup header lacks the boot protocol's 0xAA55 boot flag and \"HdrS\" magic");
  }
  // A field the header is too short to hold counts as absent (the copy left it zero).
  const bool holds_limits = header.size() >= kHdrCmdlineSize + 4 - kBpSetupHeader;
  const uint16_t version = Get<uint16_t>(page, kHdrVersion);
  limits.initrd_addr_max = version >= kVersionInitrdAddrMax && holds_limits
                               ? Get<uint32_t>(page, kHdrInitrdAddrMax)
                               : kOldInitrdAddrMax;
  limits.cmdline_size = version >= kVersionCmdlineSize && holds_limits
                            ? Get<uint32_t>(page, kHdrCmdlineSize)
                            : kOldCmdlineSize;
  return page;
}

// Checks the memory and the kernel's range, and writes what both entries share: the
// command line, the initrd, the MP table, the GDT and TSS.
absl::StatusOr<LinuxBootPlacement> WriteShared(GuestMemory& memory, const LinuxBootParams& params,
                                               const KernelLimits& limits) {
  const uint64_t size = memory.size();
  if (size < kMinMemory || size > kLinuxMaxMemory) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "guest memory of %d MiB: sigvisor boots Linux with 2 MiB to 3 GiB (below the 32-bit "
        "MMIO hole)",
        size >> 20));
  }
  if (params.kernel_init_size == 0 || params.kernel_load_begin < kLinuxHighMemoryGpa) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the kernel's range [%#x, +%#x) must be non-empty and start at or above 1 MiB",
        params.kernel_load_begin, params.kernel_init_size));
  }
  if (!memory.Contains(params.kernel_load_begin, params.kernel_init_size)) {
    return absl::OutOfRangeError(absl::StrFormat(
        "the kernel needs guest memory up to %d MiB but there are %d MiB; raise --memory",
        MiBRoundedUp(params.kernel_load_begin + params.kernel_init_size), size >> 20));
  }
  const uint64_t cmdline_room = kLinuxCmdlineEnd - kLinuxCmdlineGpa - 1;
  if (params.cmdline.size() > std::min<uint64_t>(limits.cmdline_size, cmdline_room)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the command line is %d bytes; this kernel takes at most %d", params.cmdline.size(),
        std::min<uint64_t>(limits.cmdline_size, cmdline_room)));
  }
  if (params.cmdline.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("the command line contains a NUL byte");
  }

  LinuxBootPlacement placement;
  if (!params.initrd.empty()) {
    // As high as the kernel allows, page-aligned, above everything the kernel needs.
    const uint64_t initrd_size = params.initrd.size();
    const uint64_t top = std::min<uint64_t>(size, uint64_t{limits.initrd_addr_max} + 1);
    const uint64_t kernel_end =
        AlignUp(params.kernel_load_begin + params.kernel_init_size, kPageSize);
    if (initrd_size > top || AlignDown(top - initrd_size, kPageSize) < kernel_end) {
      if (top < size) {
        return absl::OutOfRangeError(absl::StrFormat(
            "the initrd (%d MiB) does not fit between the kernel's end (%#x) and the highest "
            "address it takes an initrd at (initrd_addr_max %#x)",
            MiBRoundedUp(initrd_size), kernel_end, limits.initrd_addr_max));
      }
      return absl::OutOfRangeError(absl::StrFormat(
          "the initrd (%d MiB) does not fit in guest memory (%d MiB) above the kernel; raise "
          "--memory",
          MiBRoundedUp(initrd_size), size >> 20));
    }
    placement.initrd_gpa = AlignDown(top - initrd_size, kPageSize);
    placement.initrd_size = initrd_size;
    if (absl::Status s = memory.Write(placement.initrd_gpa, params.initrd); !s.ok()) return s;
  }

  if (absl::Status s = memory.Fill(kLinuxCmdlineGpa, 0, kLinuxCmdlineEnd - kLinuxCmdlineGpa);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = memory.Write(kLinuxCmdlineGpa,
                                    {reinterpret_cast<const uint8_t*>(params.cmdline.data()),
                                     params.cmdline.size()});
      !s.ok()) {
    return s;
  }

  absl::StatusOr<MpTablePlacement> mp = WriteMpTable(memory, kLinuxMpTableGpa, params.vcpus);
  if (!mp.ok()) return mp.status();
  placement.mp_table_gpa = mp->gpa;
  placement.mp_table_size = mp->size;

  std::array<uint64_t, kGdtEntries> gdt = {};
  for (const kvm_segment& segment : {FlatSegment(kLinuxSelCode32, FlatSegmentKind::kCode32),
                                     FlatSegment(kLinuxSelCode64, FlatSegmentKind::kCode64),
                                     FlatSegment(kLinuxSelData, FlatSegmentKind::kData)}) {
    gdt[segment.selector >> 3] = EncodeDescriptor(segment);
  }
  // Two slots: the same GDT serves the 64-bit entry, where a TSS descriptor is 16 bytes.
  const kvm_segment tss = BusyTss(kLinuxSelTss, kLinuxTssGpa);
  gdt[kLinuxSelTss >> 3] = EncodeDescriptor(tss);
  gdt[(kLinuxSelTss >> 3) + 1] = EncodeSystemDescriptorHigh(tss);
  if (absl::Status s = memory.WriteObject(kLinuxGdtGpa, gdt); !s.ok()) return s;
  if (absl::Status s = WriteEmptyTss(memory, kLinuxTssGpa); !s.ok()) return s;
  return placement;
}

// PML4[0] -> PDPT[0..3] -> four PDs of 2 MiB pages: [0, 4 GiB) identity-mapped.
absl::Status WriteIdentityPageTables(GuestMemory& memory) {
  if (absl::Status s =
          memory.WriteObject<uint64_t>(kLinuxPml4Gpa, kLinuxPdptGpa | kPresent | kWritable);
      !s.ok()) {
    return s;
  }
  std::array<uint64_t, kIdentityMappedGiB> pdpt = {};
  for (int i = 0; i < kIdentityMappedGiB; ++i) {
    pdpt[i] = (kLinuxPdGpa + i * kPageSize) | kPresent | kWritable;
  }
  if (absl::Status s = memory.WriteObject(kLinuxPdptGpa, pdpt); !s.ok()) return s;
  std::vector<uint64_t> pd(kIdentityMappedGiB * 512);
  for (size_t i = 0; i < pd.size(); ++i) pd[i] = (i << 21) | kPresent | kWritable | kLargePage;
  return memory.Write(kLinuxPdGpa, {reinterpret_cast<const uint8_t*>(pd.data()),
                                    pd.size() * sizeof(uint64_t)});
}

}  // namespace

std::vector<E820Entry> LinuxMemoryMap(uint64_t memory_size) {
  return {
      {.addr = 0, .size = kLinuxEbdaGpa, .type = kE820Ram},
      {.addr = kLinuxEbdaGpa, .size = kLinuxVgaHoleGpa - kLinuxEbdaGpa, .type = kE820Reserved},
      {.addr = kLinuxMpTableGpa,
       .size = kLinuxHighMemoryGpa - kLinuxMpTableGpa,
       .type = kE820Reserved},
      {.addr = kLinuxHighMemoryGpa,
       .size = memory_size - kLinuxHighMemoryGpa,
       .type = kE820Ram},
  };
}

absl::StatusOr<LinuxBootPlacement> WriteLinuxBootParams(GuestMemory& memory,
                                                        const LinuxBootParams& params) {
  KernelLimits limits;
  absl::StatusOr<std::vector<uint8_t>> page = ZeroPageWithHeader(params, limits);
  if (!page.ok()) return page.status();
  absl::StatusOr<LinuxBootPlacement> placement = WriteShared(memory, params, limits);
  if (!placement.ok()) return placement.status();
  if (absl::Status s = WriteIdentityPageTables(memory); !s.ok()) return s;

  std::vector<uint8_t>& zp = *page;
  Put<uint8_t>(zp, kHdrTypeOfLoader, kLoaderTypeUndefined);
  // LOADED_HIGH: the protected-mode kernel is at 1 MiB or above. The rest of the
  // flags the loader may write concern code that does not run on the 64-bit entry:
  // CAN_USE_HEAP and heap_end_ptr describe the real-mode setup code's heap,
  // KEEP_SEGMENTS is obsolete, and KASLR_FLAG is the decompressor's report that it
  // randomized the kernel, which nothing did here.
  const uint8_t loadflags = Get<uint8_t>(zp, kHdrLoadflags);
  Put<uint8_t>(zp, kHdrLoadflags,
               (loadflags | kLoadedHigh) & ~(kCanUseHeap | kKeepSegments | kKaslrFlag));
  Put<uint16_t>(zp, kHdrHeapEndPtr, 0);
  Put<uint32_t>(zp, kHdrCmdLinePtr, static_cast<uint32_t>(kLinuxCmdlineGpa));
  Put<uint32_t>(zp, kBpExtCmdLinePtr, static_cast<uint32_t>(kLinuxCmdlineGpa >> 32));
  Put<uint32_t>(zp, kHdrRamdiskImage, static_cast<uint32_t>(placement->initrd_gpa));
  Put<uint32_t>(zp, kBpExtRamdiskImage, static_cast<uint32_t>(placement->initrd_gpa >> 32));
  Put<uint32_t>(zp, kHdrRamdiskSize, static_cast<uint32_t>(placement->initrd_size));
  Put<uint32_t>(zp, kBpExtRamdiskSize, static_cast<uint32_t>(placement->initrd_size >> 32));
  Put<uint32_t>(zp, kHdrHardwareSubarch, 0);  // X86_SUBARCH_PC
  Put<uint64_t>(zp, kHdrSetupData, 0);        // no setup_data list

  const std::vector<E820Entry> map = LinuxMemoryMap(memory.size());
  Put<uint8_t>(zp, kBpE820Entries, static_cast<uint8_t>(map.size()));
  for (size_t i = 0; i < map.size(); ++i) {
    const uint64_t at = kBpE820Table + i * kE820EntrySize;
    Put<uint64_t>(zp, at, map[i].addr);
    Put<uint64_t>(zp, at + 8, map[i].size);
    Put<uint32_t>(zp, at + 16, map[i].type);
  }
  if (absl::Status s = memory.Write(kLinuxBootParamsGpa, zp); !s.ok()) return s;
  return placement;
}

absl::StatusOr<LinuxBootPlacement> WritePvhStartInfo(GuestMemory& memory,
                                                     const LinuxBootParams& params) {
  absl::StatusOr<LinuxBootPlacement> placement =
      WriteShared(memory, params, {params.cmdline_size, params.initrd_addr_max});
  if (!placement.ok()) return placement.status();

  const std::vector<E820Entry> map = LinuxMemoryMap(memory.size());
  std::vector<PvhMemmapEntry> memmap;
  for (const E820Entry& e : map) {
    memmap.push_back({.addr = e.addr, .size = e.size, .type = e.type, .reserved = 0});
  }
  if (absl::Status s = memory.Write(kLinuxPvhMemmapGpa,
                                    {reinterpret_cast<const uint8_t*>(memmap.data()),
                                     memmap.size() * sizeof(PvhMemmapEntry)});
      !s.ok()) {
    return s;
  }
  const bool has_initrd = placement->initrd_size != 0;
  const PvhModule initrd = {.paddr = placement->initrd_gpa,
                            .size = placement->initrd_size,
                            .cmdline_paddr = 0,
                            .reserved = 0};
  if (absl::Status s = memory.WriteObject(kLinuxPvhModlistGpa, initrd); !s.ok()) return s;
  const PvhStartInfo info = {
      .magic = kPvhStartMagic,
      .version = 1,
      .flags = 0,
      .nr_modules = has_initrd ? 1u : 0u,
      .modlist_paddr = has_initrd ? kLinuxPvhModlistGpa : 0,
      .cmdline_paddr = kLinuxCmdlineGpa,
      .rsdp_paddr = 0,  // no ACPI: Linux finds the MP table
      .memmap_paddr = kLinuxPvhMemmapGpa,
      .memmap_entries = static_cast<uint32_t>(memmap.size()),
      .reserved = 0,
  };
  if (absl::Status s = memory.WriteObject(kLinuxPvhStartInfoGpa, info); !s.ok()) return s;
  return placement;
}

absl::StatusOr<uint64_t> LinuxEntryGpa(uint64_t entry, std::span<const ElfSegment> segments) {
  for (const ElfSegment& s : segments) {
    if ((s.flags & PF_X) != 0 && entry >= s.paddr && entry - s.paddr < s.memsz) return entry;
  }
  for (const ElfSegment& s : segments) {
    if ((s.flags & PF_X) != 0 && entry >= s.vaddr && entry - s.vaddr < s.memsz) {
      return s.paddr + (entry - s.vaddr);
    }
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "the kernel's entry %#x is in no executable PT_LOAD segment, physical or virtual", entry));
}

absl::Status SetUpLinux64Vcpu(KvmVcpu& vcpu, uint64_t entry_gpa,
                              std::span<const kvm_cpuid_entry2> cpuid) {
  kvm_regs regs = {};
  regs.rip = entry_gpa;
  regs.rsi = kLinuxBootParamsGpa;
  regs.rsp = regs.rbp = kLinuxBootStackTop;
  regs.rflags = 0x2;  // IF clear
  return SetEntryState(vcpu, cpuid, /*long_mode=*/true, regs);
}

absl::Status SetUpPvhVcpu(KvmVcpu& vcpu, uint32_t entry, std::span<const kvm_cpuid_entry2> cpuid) {
  kvm_regs regs = {};
  regs.rip = entry;
  regs.rbx = kLinuxPvhStartInfoGpa;
  regs.rflags = 0x2;  // IF clear
  return SetEntryState(vcpu, cpuid, /*long_mode=*/false, regs);
}

void SetVirtualWireLints(kvm_lapic_state& lapic) {
  for (const auto& [offset, mode] :
       {std::pair{kLapicLvtLint0, kDeliveryExtInt}, std::pair{kLapicLvtLint1, kDeliveryNmi}}) {
    uint32_t lvt;
    std::memcpy(&lvt, lapic.regs + offset, sizeof(lvt));
    lvt = (lvt & ~kDeliveryModeMask) | mode;
    std::memcpy(lapic.regs + offset, &lvt, sizeof(lvt));
  }
}

}  // namespace sigvisor::x86
