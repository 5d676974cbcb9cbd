// `--image` a Linux kernel: what the CLI gives it besides the kernel. The workload
// words for the embedded init (guest-kit/linux/init.c reads them as environment
// variables, Linux's way with parameters it does not know), and the initramfs.
#ifndef SIGVISOR_VMM_APP_CLI_LINUX_GUEST_H_
#define SIGVISOR_VMM_APP_CLI_LINUX_GUEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sigvisor::cli {

// Guest RAM for a Linux kernel when --memory is not given: Debian's kernel needs
// ~80 MiB from its 16 MiB load address to the end of its init_size, and less RAM is
// less for an emulated CPL0 to initialise (its page structures, at ~1 us an
// instruction).
inline constexpr uint64_t kLinuxDefaultMemoryMib = 160;

// "sigvisor_workload=NAME sigvisor_ops=N sigvisor_warmup=W" (each when given) and
// `extra`, for the embedded init; refuses a workload it does not have, naming those it
// has, and a --warmup it cannot take (ParseWarmup).
absl::StatusOr<std::string> LinuxGuestCmdline(const std::string& workload,
                                              const std::string& ops, const std::string& warmup,
                                              const std::string& extra);

// The initramfs at `path`, or the embedded one (sigvisor's init and workloads) when
// `path` is empty.
absl::StatusOr<std::vector<uint8_t>> LinuxInitrd(const std::string& path);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_LINUX_GUEST_H_
