// `sigvisor image --variant V -o FILE`: writes one build of the bundled kernel out as
// an ELF file, to boot under sigvisor (`run --image FILE`), under QEMU (its Multiboot
// header: `qemu-system-x86_64 -kernel FILE`), or to read with gdb/objdump.
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/result_output.h"
#include "vmm/app/images/embedded_images.h"

namespace sigvisor::cli {

// `sigvisor help`'s line for `image`, and what `sigvisor help image` prints above
// the flags (ImageFlags, options.cc).
constexpr CommandHelp kImageHelp{
    "write a build of the bundled kernel out as an ELF file (-o FILE)",
    "Writes the bundled kernel in build --variant (see `sigvisor images`) to FILE,\n"
    "byte for byte the image `sigvisor run --variant V` boots. The file carries both\n"
    "entries: the direct 64-bit one sigvisor uses and a Multiboot v1 header with a\n"
    "32-bit entry that sets up long mode itself, so QEMU boots it too; without\n"
    "sigvisor's hypercall device the kernel talks to COM1 and isa-debug-exit. An\n"
    "existing file is replaced; a directory or an unwritable path is refused, and a write\n"
    "that fails (a full disk) leaves the old file as it was (status 125 for each).\n"
    "\nExamples:\n"
    "  sigvisor image -o kernel.elf\n"
    "  sigvisor image --variant accelerated,dr7=always -o dr7-always.elf\n"
    "  sigvisor run --image kernel.elf --workload divzero --ops 100\n"
    "  qemu-system-x86_64 -accel kvm -kernel kernel.elf -append 'kernel workload=divzero ops=100' \\\n"
    "     -display none -serial stdio -device isa-debug-exit,iobase=0xf4,iosize=4\n"
    "  sigvisor image --arch mips --variant tramp=vdso -o mips.elf   (an ELF32 MIPS image;\n"
    "     qemu-system-mipsel -M malta -cpu 74Kf -kernel mips.elf boots it too)",
};

int ImageCommand(const ImageOptions& options) {
  if (!options.args.empty()) {
    return ReportError(absl::StrFormat(
        "`sigvisor image` takes no argument '%s'; give the file with -o FILE", options.args[0]));
  }
  const std::string& path = options.o;
  if (path.empty()) {
    return ReportError("`sigvisor image` needs -o FILE, the file to write (see --help)");
  }
  const std::string& arch = options.arch;
  if (arch != "x86_64" && arch != "mips") {
    return ReportError(absl::StrFormat("--arch=%s: give x86_64 or mips", arch));
  }
  absl::StatusOr<const KernelVariant*> variant = ResolveVariant(
      options.variant, arch == "mips" ? GuestArch::kMips : GuestArch::kX86_64);
  if (!variant.ok()) return ReportError(variant.status());
  // A regular file is written under a temporary name and renamed: a failed write
  // leaves no partial image (result_output.h); /dev/full and the like, in place.
  absl::StatusOr<ResultFile> out = ResultFile::Create("-o", path, "the image");
  if (!out.ok()) return ReportError(out.status());
  const std::span<const uint8_t> bytes = (*variant)->bytes;
  if (absl::Status s = out->Write(std::string_view(reinterpret_cast<const char*>(bytes.data()),
                                                   bytes.size()));
      !s.ok()) {
    return ReportError(s);
  }
  std::printf("wrote the bundled kernel, variant %s (%s), %zu bytes, to %s\n",
              std::string((*variant)->name).c_str(), DescribeVariant(**variant).c_str(),
              bytes.size(), path.c_str());
  return 0;
}

}  // namespace sigvisor::cli
