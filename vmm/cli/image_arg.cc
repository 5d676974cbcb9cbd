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
  if (variant != "baseline") {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--variant '%s' selects a build of the bundled kernel; it does not apply to --image "
        "'%s'",
        variant, image));
  }
  std::ifstream file(image, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrFormat(
        "cannot open image '%s': %s (give a file path or an embedded image name: see "
        "`sigvisor images`)",
        image, strerror(errno)));
  }
  std::vector<uint8_t> bytes;
  char buffer[65536];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    bytes.insert(bytes.end(), buffer, buffer + file.gcount());
    if (bytes.size() > kMaxImageBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("image '%s' is larger than %d MiB", image, kMaxImageBytes >> 20));
    }
  }
  if (file.bad()) return absl::DataLossError(absl::StrFormat("cannot read image '%s'", image));
  absl::StatusOr<ElfImage> elf = ElfImage::Parse(std::move(bytes));
  if (!elf.ok()) {
    return absl::Status(elf.status().code(),
                        absl::StrFormat("image '%s': %s", image, elf.status().message()));
  }
  return LoadedImage{image, *std::move(elf)};
}

}  // namespace sigvisor::cli
