// The guest images built into the sigvisor binary, so `sigvisor run` needs no file:
// the bundled kernel in each of its variants (guest-kit/build/variants.bzl), for
// x86-64 (KVM) and for MIPS32r2 (the interpreter, `--arch mips`), which --image kernel
// (the default) and --variant select.
#ifndef SIGVISOR_VMM_APP_IMAGES_EMBEDDED_IMAGES_H_
#define SIGVISOR_VMM_APP_IMAGES_EMBEDDED_IMAGES_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor {

// The two builds of the bundled kernel: each has its own seed switches and variants.
enum class GuestArch { kX86_64, kMips };

// One of the seed changes a kernel variant may have, or a setting that is no seed's
// change (x86-64's debugreg=native|pv: how the kernel reaches its debug registers).
struct SeedSwitch {
  std::string_view key;        // "dr7"
  std::string_view old_value;  // "always": the 2004-era behaviour (a setting: its default)
  std::string_view new_value;  // "lazy": the change Linux made (a setting: the other value)
  std::string_view seed;       // "000" (docs/seeds.md); "" for a setting
  std::string_view config;     // "CONFIG_DR7_LAZY" in guest-kit/kernel/config.h

  // `accelerated` takes every seed's new value, never a setting's.
  bool is_seed() const { return !seed.empty(); }
};

// The seed switches of an arch's kernel, then its settings, in the order
// KernelVariant::values uses (x86-64: dr7 pda uaccess dequeue debugreg; MIPS: uaccess
// dequeue tramp).
std::span<const SeedSwitch> SeedSwitches(GuestArch arch = GuestArch::kX86_64);

// A built kernel image.
struct KernelVariant {
  std::string_view name;               // canonical: "baseline", "dr7=lazy", ...
  std::vector<std::string_view> values;  // one per SeedSwitches(arch) entry
  std::span<const uint8_t> bytes;      // the ELF image (ELF64 x86-64 or ELF32 MIPS)
  GuestArch arch = GuestArch::kX86_64;
};

// Every built variant of an arch's kernel; the first is the baseline (the default).
std::span<const KernelVariant> KernelVariants(GuestArch arch = GuestArch::kX86_64);

// Resolves a --variant spec: "baseline" or "accelerated", optionally followed by
// key=value overrides ("accelerated,dr7=always", "dr7=lazy,debugreg=pv"), or
// overrides alone (on top of the baseline: "dr7=lazy"). Unknown keys or values, and combinations that are not built,
// are refused with the list of what is.
absl::StatusOr<const KernelVariant*> ResolveVariant(std::string_view spec,
                                                    GuestArch arch = GuestArch::kX86_64);

// Whether `variant` is one of the seed builds: every setting at its default (x86-64:
// not a debugreg=pv build, which --trap=pv boots in place of its seed build).
bool IsSeedBuild(const KernelVariant& variant);

// "dr7=always pda=gs ..." for reports.
std::string DescribeVariant(const KernelVariant& variant);

// The variant's image, parsed (a copy the ElfImage owns).
absl::StatusOr<ElfImage> ParseKernel(const KernelVariant& variant);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_APP_IMAGES_EMBEDDED_IMAGES_H_
