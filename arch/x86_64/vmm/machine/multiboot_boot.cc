#include "arch/x86_64/vmm/machine/multiboot_boot.h"

#include <array>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/segments.h"
#include "vmm/base/capped_file.h"
#include "vmm/loader/multiboot.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kPageSize = 4096;
constexpr uint16_t kSelCode = 0x08, kSelData = 0x10, kSelTss = 0x18;

constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

absl::StatusOr<MultibootModule> ReadMultibootModule(const std::string& spec) {
  const size_t eq = spec.find('=');
  const std::string path = spec.substr(0, eq);
  MultibootModule module;
  module.string = eq == std::string::npos ? path : spec.substr(eq + 1);
  if (path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--module '%s': give FILE or FILE=STRING", spec));
  }
  absl::StatusOr<std::vector<uint8_t>> bytes =
      ReadCappedFileBytes(path, file_caps::kMultibootModule, {.context = "--module: "});
  if (!bytes.ok()) return bytes.status();
  module.bytes = *std::move(bytes);
  return module;
}

absl::Status WriteMultibootState(GuestMemory& memory, const ElfImage& image,
                                 const std::string& cmdline,
                                 const std::vector<MultibootModule>& modules) {
  if (image.load_begin() < kMultibootLowEnd) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the Multiboot kernel loads at %#x, below %#x where sigvisor keeps its GDT and the "
        "Multiboot information",
        image.load_begin(), kMultibootLowEnd));
  }
  if (image.entry() > 0xffffffffull) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the Multiboot kernel's entry %#x is above 4 GiB; it is entered in 32-bit mode",
        image.entry()));
  }
  if (cmdline.size() >= kMultibootCmdlineEnd - kMultibootCmdlineGpa) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the Multiboot command line is %d bytes; sigvisor passes at most %d", cmdline.size(),
        kMultibootCmdlineEnd - kMultibootCmdlineGpa - 1));
  }
  if (modules.size() > kMultibootMaxModules) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d modules; sigvisor passes at most %d", modules.size(), kMultibootMaxModules));
  }
  // Modules go after the kernel, each page aligned (what flag bit 0 asks; always done).
  uint64_t next = AlignUp(std::max<uint64_t>(image.load_end(), 1ull << 20), kPageSize);
  uint64_t string_at = kMultibootModStringsGpa;
  for (size_t i = 0; i < modules.size(); ++i) {
    const MultibootModule& m = modules[i];
    if (!memory.Contains(next, m.bytes.size())) {
      return absl::OutOfRangeError(absl::StrFormat(
          "module %d ('%s', %d bytes) does not fit guest RAM (%d MiB) after the kernel; raise "
          "--memory",
          i, m.string, m.bytes.size(), memory.size() >> 20));
    }
    if (string_at + m.string.size() + 1 > kMultibootLowEnd) {
      return absl::InvalidArgumentError("the module strings are longer than 19 KiB in all");
    }
    if (absl::Status s = memory.Write(next, m.bytes); !s.ok()) return s;
    if (absl::Status s = memory.Write(
            string_at, {reinterpret_cast<const uint8_t*>(m.string.c_str()), m.string.size() + 1});
        !s.ok()) {
      return s;
    }
    const std::array<uint32_t, 4> entry = {static_cast<uint32_t>(next),
                                           static_cast<uint32_t>(next + m.bytes.size()),
                                           static_cast<uint32_t>(string_at), 0};
    if (absl::Status s = memory.WriteObject(kMultibootModsGpa + 16 * i, entry); !s.ok()) return s;
    next = AlignUp(next + m.bytes.size(), kPageSize);
    string_at += m.string.size() + 1;
  }

  // GDT and the busy TSS KVM wants in TR (in 32-bit mode its descriptor is one slot).
  std::array<uint64_t, 4> gdt = {};
  gdt[kSelCode >> 3] = EncodeDescriptor(FlatSegment(kSelCode, FlatSegmentKind::kCode32));
  gdt[kSelData >> 3] = EncodeDescriptor(FlatSegment(kSelData, FlatSegmentKind::kData));
  gdt[kSelTss >> 3] = EncodeDescriptor(BusyTss(kSelTss, kMultibootTssGpa));
  if (absl::Status s = memory.WriteObject(kMultibootGdtGpa, gdt); !s.ok()) return s;
  if (absl::Status s = WriteEmptyTss(memory, kMultibootTssGpa); !s.ok()) return s;

  // The memory map: conventional memory below the EBDA, then everything from 1 MiB
  // (QEMU's e820 as Multiboot kernels see it, without the reserved ranges).
  struct __attribute__((packed)) MmapEntry {
    uint32_t size;
    uint64_t base;
    uint64_t length;
    uint32_t type;
  };
  const std::array<MmapEntry, 2> mmap = {{{20, 0, 0x9fc00, 1},
                                          {20, 1ull << 20, memory.size() - (1ull << 20), 1}}};
  if (absl::Status s = memory.WriteObject(kMultibootMmapGpa, mmap); !s.ok()) return s;
  static constexpr char kLoaderName[] = "sigvisor";
  if (absl::Status s = memory.Write(kMultibootLoaderNameGpa,
                                    {reinterpret_cast<const uint8_t*>(kLoaderName),
                                     sizeof(kLoaderName)});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = memory.Write(
          kMultibootCmdlineGpa,
          {reinterpret_cast<const uint8_t*>(cmdline.c_str()), cmdline.size() + 1});
      !s.ok()) {
    return s;
  }

  std::array<uint32_t, 22> info = {};  // up to and including apm_table
  info[0] = kMbiMemory | kMbiCmdline | kMbiMods | kMbiMmap | kMbiLoaderName;
  info[1] = 639;  // mem_lower, KiB: below the EBDA, as QEMU reports it
  info[2] = static_cast<uint32_t>((memory.size() >> 10) - 1024);     // mem_upper, KiB
  info[4] = kMultibootCmdlineGpa;                                     // cmdline
  info[5] = static_cast<uint32_t>(modules.size());                   // mods_count
  info[6] = kMultibootModsGpa;                                        // mods_addr
  info[11] = sizeof(mmap);                                            // mmap_length
  info[12] = kMultibootMmapGpa;                                       // mmap_addr
  info[16] = kMultibootLoaderNameGpa;                                 // boot_loader_name
  return memory.WriteObject(kMultibootInfoGpa, info);
}

absl::Status SetUpMultibootVcpu(KvmVcpu& vcpu, uint64_t entry,
                                std::span<const kvm_cpuid_entry2> cpuid) {
  if (absl::Status s = vcpu.SetCpuid(cpuid); !s.ok()) return s;
  absl::StatusOr<kvm_sregs> sregs = vcpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  sregs->cr0 = 0x11;  // PE | ET: protected mode, paging off
  sregs->cr3 = 0;
  sregs->cr4 = 0;
  sregs->efer = 0;
  sregs->cs = FlatSegment(kSelCode, FlatSegmentKind::kCode32);
  sregs->ds = sregs->es = sregs->fs = sregs->gs = sregs->ss =
      FlatSegment(kSelData, FlatSegmentKind::kData);
  sregs->gdt.base = kMultibootGdtGpa;
  sregs->gdt.limit = 4 * 8 - 1;
  sregs->idt.base = 0;
  sregs->idt.limit = 0;
  sregs->tr = BusyTss(kSelTss, kMultibootTssGpa);
  sregs->ldt = {};
  sregs->ldt.unusable = 1;
  if (absl::Status s = vcpu.SetSregs(*sregs); !s.ok()) return s;
  kvm_regs regs = {};
  regs.rip = entry;
  regs.rax = kMultibootBootloaderMagic;
  regs.rbx = kMultibootInfoGpa;
  regs.rflags = 0x2;
  return vcpu.SetRegs(regs);
}

}  // namespace sigvisor::x86
