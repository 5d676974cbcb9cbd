// --image: an embedded image's name or an ELF file's path, read and parsed.
#ifndef SIGVISOR_VMM_CLI_IMAGE_ARG_H_
#define SIGVISOR_VMM_CLI_IMAGE_ARG_H_

#include <string>

#include "absl/status/statusor.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::cli {

struct LoadedImage {
  std::string label;  // for reports: "kernel (embedded)" or the path
  ElfImage elf;
};

// The embedded image called `image`, else the file at that path.
absl::StatusOr<LoadedImage> LoadImage(const std::string& image);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_CLI_IMAGE_ARG_H_
