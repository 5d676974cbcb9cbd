// `sigvisor images`: the builds of the bundled kernel (--image kernel --variant V), for
// x86-64 and for MIPS (--arch mips). They are --variant values, not --image names:
// the bundled kernel is the one embedded image (--image kernel, the default).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/images/embedded_images.h"

namespace sigvisor::cli {

// `sigvisor help`'s line for `images`, and what `sigvisor help images` prints above
// the flags (ImagesFlags, options.cc).
constexpr CommandHelp kImagesHelp{
    "list the builds of the bundled kernel (its --variant values)",
    "Lists the builds of the bundled kernel (--image kernel, the default), x86-64 and\n"
    "MIPS, by the --variant value that picks each, with its seed settings and sizes.\n"
    "They are --variant values, not --image names: --image takes `kernel` or the path\n"
    "of an ELF file.\n"
    "\nExamples:\n"
    "  sigvisor images\n"
    "  sigvisor run --variant accelerated,dr7=always\n"
    "  sigvisor run --arch mips --variant tramp=vdso",
};

int ImagesCommand(const ImagesOptions& options) {
  if (!options.args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor images` takes no argument '%s' (see --help)",
                                       options.args[0]));
  }
  const bool json = options.json;
  nlohmann::ordered_json variants = nlohmann::ordered_json::array();
  if (!json) {
    std::printf("the bundled kernel (--image kernel, the default), by --variant:\n");
  }
  for (const KernelVariant& variant : KernelVariants()) {
    absl::StatusOr<ElfImage> elf = ParseKernel(variant);
    if (!elf.ok()) return ReportError(elf.status());
    uint64_t text_bytes = 0;
    for (const ElfSection& section : elf->executable_sections()) text_bytes += section.bytes.size();
    const std::string settings = DescribeVariant(variant);
    variants.push_back({{"name", variant.name},
                        {"arch", "x86_64"},
                        {"settings", settings},
                        {"image_bytes", variant.bytes.size()},
                        {"text_bytes", text_bytes},
                        {"abi_version", elf->abi_version().value_or(0)}});
    if (!json) {
      std::printf("  %-28s %-50s text %6lu bytes\n", std::string(variant.name).c_str(),
                  settings.c_str(), text_bytes);
    }
  }
  if (!json) std::printf("the bundled MIPS32r2 kernel (--arch mips), by --variant:\n");
  for (const KernelVariant& variant : KernelVariants(GuestArch::kMips)) {
    const std::string settings = DescribeVariant(variant);
    variants.push_back({{"name", variant.name},
                        {"arch", "mips"},
                        {"settings", settings},
                        {"image_bytes", variant.bytes.size()}});
    if (!json) {
      std::printf("  %-28s %-50s image %5lu bytes\n", std::string(variant.name).c_str(),
                  settings.c_str(), variant.bytes.size());
    }
  }
  if (json) {
    const nlohmann::ordered_json doc = {
        {"schema", "sigvisor.images/1"}, {"image", "kernel"}, {"variants", variants}};
    std::printf("%s\n", WithBuildInfo(doc).dump(2).c_str());
  }
  return 0;
}

}  // namespace sigvisor::cli
