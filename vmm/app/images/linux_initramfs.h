// The Linux guest's initramfs, built into the sigvisor binary as its kernels are
// (guest-kit/linux: /init with the workloads and the signal self-test, and
// /dev/console), so that `sigvisor run --image <a Linux kernel>` needs no other file.
// A newc cpio archive, loaded as the kernel's initrd; docs/linux-workloads.md says
// what its init reads from the kernel command line.
#ifndef SIGVISOR_VMM_APP_IMAGES_LINUX_INITRAMFS_H_
#define SIGVISOR_VMM_APP_IMAGES_LINUX_INITRAMFS_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace sigvisor {

// How reports and errors name it.
inline constexpr std::string_view kLinuxInitramfsName = "linux-initramfs";

// The archive's bytes (read-only, in the binary).
std::span<const uint8_t> EmbeddedLinuxInitramfs();

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_APP_IMAGES_LINUX_INITRAMFS_H_
