// --image: an embedded image's name or an ELF file's path, read and parsed.
#ifndef SIGVISOR_VMM_APP_CLI_IMAGE_ARG_H_
#define SIGVISOR_VMM_APP_CLI_IMAGE_ARG_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "arch/mips/vmm/mips_elf.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::cli {

struct LoadedImage {
  std::string label;  // for reports: "kernel (embedded)" or the path
  ElfImage elf;
  // The bundled kernel's variant ("baseline", "dr7=lazy", ...) and its seed
  // settings ("dr7=always pda=gs ..."); empty for an image from a file.
  std::string variant;
  std::string variant_settings;
  // A stock Linux kernel (a bzImage, whose payload `elf` is, decompressed on the host;
  // or a vmlinux with a PVH note): what its boot protocol needs besides the vmlinux.
  // Its initrd is the caller's to add. The label says which it was.
  std::optional<x86::LinuxKernel> linux_kernel;
};

// The embedded image called `image` (for the bundled kernel: in build `variant`, a
// --variant spec), else the file at that path (then `variant` must be "baseline").
absl::StatusOr<LoadedImage> LoadImage(const std::string& image, const std::string& variant);

// The same for `--arch mips`: the bundled MIPS kernel in build `variant`, or an ELF32
// MIPS file.
struct LoadedMipsImage {
  std::string label;
  mips::MipsElfImage elf;
  std::string variant;
  std::string variant_settings;
};
absl::StatusOr<LoadedMipsImage> LoadMipsImage(const std::string& image, const std::string& variant);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_IMAGE_ARG_H_
