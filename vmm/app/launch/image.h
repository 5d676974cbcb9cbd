// --image: an embedded image's name or a file's path (ELF, Multiboot, a Linux bzImage or
// vmlinux), read and parsed, and what it boots as.
#ifndef SIGVISOR_VMM_APP_LAUNCH_IMAGE_H_
#define SIGVISOR_VMM_APP_LAUNCH_IMAGE_H_

#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "arch/mips/vmm/mips_elf.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::launch {

// What --image says for the bundled kernel (the default), whose build --variant picks.
inline constexpr char kBundledKernel[] = "kernel";

struct LoadedImage {
  std::string label;  // for reports: "kernel (embedded)" or the path
  ElfImage elf;
  // The bundled kernel's variant ("baseline", "dr7=lazy", ...) and its seed
  // settings ("dr7=always pda=gs ..."); empty for an image from a file.
  std::string variant;
  std::string variant_settings;
  // What it boots as (x86::BootTargetOf; a bzImage, whose payload `elf` is,
  // decompressed on the host, is Linux by its file). A Linux kernel's initrd and a
  // Multiboot kernel's modules are the caller's to add. The label says what it was.
  x86::BootTarget target;
  // The FNV-1a of the image as given: the file's bytes (a bzImage's, not its
  // decompressed payload's), or the embedded build's. What a snapshot header names the
  // image by, and a restore checks.
  uint64_t source_fnv1a64 = 0;

  // The Linux kernel it is, or null.
  x86::LinuxKernel* linux_kernel() { return std::get_if<x86::LinuxKernel>(&target); }
  const x86::LinuxKernel* linux_kernel() const {
    return std::get_if<x86::LinuxKernel>(&target);
  }
};

// The embedded image called `image` (for the bundled kernel: in build `variant`, a
// --variant spec), else the file at that path (then `variant` must be "baseline").
absl::StatusOr<LoadedImage> LoadImage(const std::string& image, const std::string& variant);

// A Linux kernel file for a restore that runs it from its snapshot (run --restore):
// read and hashed (source_fnv1a64), not decompressed or parsed, since the snapshot
// holds the kernel as it ran: `elf` is ElfImage::Empty(), `target` a LinuxKernel with
// nothing to load. A bzImage's payload is tens of MiB and, with xz, seconds of work:
// most of what a restore of Linux would cost besides.
absl::StatusOr<LoadedImage> LoadLinuxFileToRestore(const std::string& path);

// The same for `--arch mips`: the bundled MIPS kernel in build `variant`, or an ELF32
// MIPS file.
struct LoadedMipsImage {
  std::string label;
  mips::MipsElfImage elf;
  std::string variant;
  std::string variant_settings;
};
absl::StatusOr<LoadedMipsImage> LoadMipsImage(const std::string& image, const std::string& variant);

}  // namespace sigvisor::launch

#endif  // SIGVISOR_VMM_APP_LAUNCH_IMAGE_H_
