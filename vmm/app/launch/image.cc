#include "vmm/app/launch/image.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/base/capped_file.h"
#include "vmm/base/fnv1a.h"
#include "vmm/loader/linux/bzimage.h"

namespace sigvisor::launch {
namespace {

constexpr uint16_t kElfMachine386 = 3;
constexpr uint16_t kElfMachineMips = 8;
constexpr uint16_t kElfMachineX86_64 = 62;

// e_machine of an ELF file (ELF32 or ELF64, either byte order), 0 when `bytes` is
// not one: to say which --arch an image the parser refused is for.
uint16_t ElfMachine(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < 20 || bytes[0] != 0x7f || bytes[1] != 'E' || bytes[2] != 'L' ||
      bytes[3] != 'F') {
    return 0;
  }
  const bool big_endian = bytes[5] == 2;  // EI_DATA
  return big_endian ? static_cast<uint16_t>(bytes[18] << 8 | bytes[19])
                    : static_cast<uint16_t>(bytes[19] << 8 | bytes[18]);
}

// The bytes of the image file at `path`.
absl::StatusOr<std::vector<uint8_t>> ReadImageFile(const std::string& path, GuestArch arch) {
  absl::StatusOr<std::vector<uint8_t>> bytes =
      ReadCappedFileBytes(path, file_caps::kKernelImage, {.noun = "image"});
  if (absl::IsNotFound(bytes.status())) {
    // `sigvisor images` lists --variant values; one given to --image is a slip worth
    // naming.
    if (ResolveVariant(path, arch).ok()) {
      return absl::NotFoundError(absl::StrFormat(
          "--image '%s': no such file; '%s' is a build of the bundled kernel: give --variant "
          "%s (with --image kernel, the default)",
          path, path, path));
    }
    return absl::NotFoundError(absl::StrCat(
        bytes.status().message(),
        " (give the path of an ELF file, or 'kernel' for the bundled kernel, whose builds "
        "`sigvisor images` lists as --variant values)"));
  }
  return bytes;
}

absl::Status VariantNeedsBundledKernel(const std::string& image, const std::string& variant) {
  if (variant == "baseline") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "--variant '%s' selects a build of the bundled kernel; it does not apply to --image '%s'",
      variant, image));
}

// A bzImage: its setup header checked and its payload decompressed here, on the host
// (an emulated CPL0 would spend minutes in the kernel's own decompressor).
absl::StatusOr<LoadedImage> LoadBzImage(const std::string& path,
                                        std::span<const uint8_t> file) {
  absl::StatusOr<linux_boot::BzImage> bz = linux_boot::ParseBzImage(file);
  if (!bz.ok()) {
    return absl::Status(bz.status().code(),
                        absl::StrFormat("image '%s': %s", path, bz.status().message()));
  }
  absl::StatusOr<ElfImage> elf = ElfImage::Parse(std::move(bz->vmlinux));
  if (!elf.ok()) {
    return absl::Status(elf.status().code(),
                        absl::StrFormat("image '%s': its decompressed kernel: %s", path,
                                        elf.status().message()));
  }
  x86::LinuxKernel kernel;
  kernel.setup_header = std::move(bz->setup_header);
  kernel.init_size = bz->init_size;
  kernel.cmdline_size = bz->cmdline_size;
  kernel.initrd_addr_max = bz->initrd_addr_max;
  LoadedImage loaded{absl::StrFormat("%s (bzImage, %s payload)", path,
                                     linux_boot::CompressionName(bz->compression)),
                     *std::move(elf)};
  loaded.target = std::move(kernel);
  loaded.source_fnv1a64 = Fnv1a64(file);
  return loaded;
}

}  // namespace

absl::StatusOr<LoadedImage> LoadImage(const std::string& image, const std::string& variant) {
  if (image == kBundledKernel) {
    absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant);
    if (!build.ok()) return build.status();
    absl::StatusOr<ElfImage> elf = ParseKernel(**build);
    if (!elf.ok()) return elf.status();
    LoadedImage loaded{absl::StrFormat("%s %s (embedded)", image, (*build)->name),
                       *std::move(elf), std::string((*build)->name), DescribeVariant(**build)};
    loaded.target = x86::BootTargetOf(loaded.elf);
    loaded.source_fnv1a64 = Fnv1a64(loaded.elf.bytes());
    return loaded;
  }
  if (absl::Status s = VariantNeedsBundledKernel(image, variant); !s.ok()) return s;
  absl::StatusOr<std::vector<uint8_t>> bytes = ReadImageFile(image, GuestArch::kX86_64);
  if (!bytes.ok()) return bytes.status();
  if (linux_boot::LooksLikeBzImage(*bytes)) return LoadBzImage(image, *bytes);
  const bool mips = ElfMachine(*bytes) == kElfMachineMips;
  absl::StatusOr<ElfImage> elf = ElfImage::Parse(*std::move(bytes));
  if (!elf.ok()) {
    return absl::Status(elf.status().code(),
                        absl::StrFormat("image '%s': %s%s", image, elf.status().message(),
                                        mips ? "; it is a MIPS image: `sigvisor run --arch mips` "
                                               "boots it"
                                             : ""));
  }
  LoadedImage loaded{image, *std::move(elf)};
  loaded.target = x86::BootTargetOf(loaded.elf);
  loaded.source_fnv1a64 = Fnv1a64(loaded.elf.bytes());
  // A vmlinux that carries Linux's PVH entry note boots as Linux through that entry.
  if (loaded.linux_kernel()) loaded.label = absl::StrCat(image, " (vmlinux, PVH entry)");
  return loaded;
}

absl::StatusOr<LoadedImage> LoadLinuxFileToRestore(const std::string& path) {
  absl::StatusOr<std::vector<uint8_t>> bytes = ReadImageFile(path, GuestArch::kX86_64);
  if (!bytes.ok()) return bytes.status();
  // What the restore skipped: a bzImage's decompression, a vmlinux's ELF parse.
  const bool bzimage = linux_boot::LooksLikeBzImage(*bytes);
  LoadedImage loaded{
      absl::StrFormat("%s (%s, restored: hashed, not %s)", path, bzimage ? "bzImage" : "vmlinux",
                      bzimage ? "decompressed" : "parsed"),
      ElfImage::Empty()};
  loaded.target = x86::LinuxKernel{};
  loaded.source_fnv1a64 = Fnv1a64(*bytes);
  return loaded;
}

absl::StatusOr<LoadedMipsImage> LoadMipsImage(const std::string& image,
                                              const std::string& variant) {
  if (image == kBundledKernel) {
    absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant, GuestArch::kMips);
    if (!build.ok()) return build.status();
    absl::StatusOr<mips::MipsElfImage> elf = mips::MipsElfImage::Parse(
        std::vector<uint8_t>((*build)->bytes.begin(), (*build)->bytes.end()));
    if (!elf.ok()) return elf.status();
    return LoadedMipsImage{absl::StrFormat("%s %s (embedded, mips)", image, (*build)->name),
                           *std::move(elf), std::string((*build)->name),
                           DescribeVariant(**build)};
  }
  if (absl::Status s = VariantNeedsBundledKernel(image, variant); !s.ok()) return s;
  absl::StatusOr<std::vector<uint8_t>> bytes = ReadImageFile(image, GuestArch::kMips);
  if (!bytes.ok()) return bytes.status();
  const uint16_t machine = ElfMachine(*bytes);
  const bool x86 = machine == kElfMachineX86_64 || machine == kElfMachine386;
  absl::StatusOr<mips::MipsElfImage> elf = mips::MipsElfImage::Parse(*std::move(bytes));
  if (!elf.ok()) {
    return absl::Status(
        elf.status().code(),
        absl::StrFormat("image '%s': %s%s", image, elf.status().message(),
                        x86 ? "; it is an x86 image: drop --arch mips" : ""));
  }
  return LoadedMipsImage{image, *std::move(elf)};
}

}  // namespace sigvisor::launch
