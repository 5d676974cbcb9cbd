// The guest images built into the sigvisor binary, so `sigvisor run` needs no file.
#ifndef SIGVISOR_VMM_IMAGES_EMBEDDED_IMAGES_H_
#define SIGVISOR_VMM_IMAGES_EMBEDDED_IMAGES_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace sigvisor {

struct EmbeddedImage {
  std::string_view name;         // what --image-name / reports call it
  std::string_view description;  // one line for --help and `sigvisor images`
  std::span<const uint8_t> bytes;
};

// Every embedded image; the first is the default.
std::span<const EmbeddedImage> EmbeddedImages();

// The image called `name`, or nullptr.
const EmbeddedImage* FindEmbeddedImage(std::string_view name);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_IMAGES_EMBEDDED_IMAGES_H_
