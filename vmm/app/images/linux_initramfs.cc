#include "vmm/app/images/linux_initramfs.h"

// Defined by the embedded_image() rule linux_initramfs_image in BUILD.bazel.
extern "C" const uint8_t sigvisor_linux_initramfs_start[];
extern "C" const uint8_t sigvisor_linux_initramfs_end[];

namespace sigvisor {

std::span<const uint8_t> EmbeddedLinuxInitramfs() {
  return {sigvisor_linux_initramfs_start,
          static_cast<size_t>(sigvisor_linux_initramfs_end - sigvisor_linux_initramfs_start)};
}

}  // namespace sigvisor
