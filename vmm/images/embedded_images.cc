#include "vmm/images/embedded_images.h"

#include <array>

// Defined by the embedded_image() rules in BUILD.bazel (objcopy'd image files).
extern "C" const uint8_t sigvisor_image_kernel_start[];
extern "C" const uint8_t sigvisor_image_kernel_end[];

namespace sigvisor {
namespace {

std::span<const uint8_t> Between(const uint8_t* start, const uint8_t* end) {
  return {start, static_cast<size_t>(end - start)};
}

}  // namespace

std::span<const EmbeddedImage> EmbeddedImages() {
  static const std::array<EmbeddedImage, 1> kImages = {{
      {"kernel", "the sigvisor guest kernel with its built-in workloads",
       Between(sigvisor_image_kernel_start, sigvisor_image_kernel_end)},
  }};
  return kImages;
}

const EmbeddedImage* FindEmbeddedImage(std::string_view name) {
  for (const EmbeddedImage& image : EmbeddedImages()) {
    if (image.name == name) return &image;
  }
  return nullptr;
}

}  // namespace sigvisor
