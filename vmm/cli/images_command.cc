#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "vmm/cli/command.h"
#include "vmm/cli/flags.h"
#include "vmm/images/embedded_images.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::cli {

int ImagesCommand(std::span<char* const>) {
  nlohmann::json images = nlohmann::json::array();
  for (const EmbeddedImage& image : EmbeddedImages()) {
    absl::StatusOr<ElfImage> elf =
        ElfImage::Parse(std::vector<uint8_t>(image.bytes.begin(), image.bytes.end()));
    if (!elf.ok()) return ReportError(elf.status());
    images.push_back({{"name", image.name},
                      {"description", image.description},
                      {"bytes", image.bytes.size()},
                      {"entry", elf->entry()},
                      {"abi_version", elf->abi_version().value_or(0)}});
    if (!absl::GetFlag(FLAGS_json)) {
      std::printf("%-10s %8zu bytes  entry %#lx  ABI %u  %.*s\n", std::string(image.name).c_str(),
                  image.bytes.size(), elf->entry(), elf->abi_version().value_or(0),
                  static_cast<int>(image.description.size()), image.description.data());
    }
  }
  if (absl::GetFlag(FLAGS_json)) std::printf("%s\n", images.dump(2).c_str());
  return 0;
}

}  // namespace sigvisor::cli
