#include "vmm/cli/image_arg.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/images/embedded_images.h"

namespace sigvisor::cli {
namespace {

constexpr uint64_t kMaxImageBytes = 256ull << 20;
constexpr char kBundledKernel[] = "kernel";

// The bytes of the image file at `path`, at most kMaxImageBytes.
absl::StatusOr<std::vector<uint8_t>> ReadImageFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrFormat(
        "cannot open image '%s': %s (give a file path or an embedded image name: see "
        "`sigvisor images`)",
        path, strerror(errno)));
  }
  std::vector<uint8_t> bytes;
  char buffer[65536];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    bytes.insert(bytes.end(), buffer, buffer + file.gcount());
    if (bytes.size() > kMaxImageBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("image '%s' is larger than %d MiB", path, kMaxImageBytes >> 20));
    }
  }
  if (file.bad()) return absl::DataLossError(absl::StrFormat("cannot read image '%s'", path));
  return bytes;
}

absl::Status VariantNeedsBundledKernel(const std::string& image, const std::string& variant) {
  if (variant == "baseline") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "--variant '%s' selects a build of the bundled kernel; it does not apply to --image '%s'",
      variant, image));
}

}  // namespace

absl::StatusOr<LoadedImage> LoadImage(const std::string& image, const std::string& variant) {
  if (image == kBundledKernel) {
    absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant);
    if (!build.ok()) return build.status();
    absl::StatusOr<ElfImage> elf = ParseKernel(**build);
    if (!elf.ok()) return elf.status();
    return LoadedImage{absl::StrFormat("%s %s (embedded)", image, (*build)->name), *std::move(elf),
                       std::string((*build)->name), DescribeVariant(**build)};
  }
  if (absl::Status s = VariantNeedsBundledKernel(image, variant); !s.ok()) return s;
  absl::StatusOr<std::vector<uint8_t>> bytes = ReadImageFile(image);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<ElfImage> elf = ElfImage::Parse(*std::move(bytes));
  if (!elf.ok()) {
    return absl::Status(elf.status().code(),
                        absl::StrFormat("image '%s': %s", image, elf.status().message()));
  }
  return LoadedImage{image, *std::move(elf)};
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
  absl::StatusOr<std::vector<uint8_t>> bytes = ReadImageFile(image);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<mips::MipsElfImage> elf = mips::MipsElfImage::Parse(*std::move(bytes));
  if (!elf.ok()) {
    return absl::Status(elf.status().code(),
                        absl::StrFormat("image '%s': %s", image, elf.status().message()));
  }
  return LoadedMipsImage{image, *std::move(elf)};
}

}  // namespace sigvisor::cli
