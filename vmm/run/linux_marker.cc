#include "vmm/run/linux_marker.h"

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {

absl::StatusOr<uint32_t> LinuxMarkerWord(std::span<const uint8_t> data) {
  uint32_t word = 0;
  if (data.size() != sizeof(word)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d-byte write; the protocol writes 4 bytes (outl)", data.size()));
  }
  std::memcpy(&word, data.data(), sizeof(word));
  if ((word & SIGVISOR_LINUX_MARKER_MAGIC_MASK) != SIGVISOR_LINUX_MARKER_MAGIC) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%#x written, without the magic %#x", word, SIGVISOR_LINUX_MARKER_MAGIC));
  }
  return word;
}

HypercallResult LinuxMarkerMalformed(std::string why) {
  return HypercallResult::RunFailed(Outcome::kBadDeviceAccess, "linux marker: " + std::move(why));
}

HypercallResult DecodeLinuxMarker(uint32_t word, const LinuxMarkerArguments& arguments) {
  HypercallResult result;
  switch (word & ~SIGVISOR_LINUX_MARKER_MAGIC_MASK) {
    case SIGVISOR_LINUX_MARKER_PHASE_BEGIN: {
      if (arguments.flags & ~uint64_t{SIGVISOR_PHASE_CALIBRATION}) {
        return LinuxMarkerMalformed(
            absl::StrFormat("phase_begin: unknown flags %#x", arguments.flags));
      }
      const std::array<char, SIGVISOR_PHASE_NAME_MAX>& name = arguments.name;
      result.marker = PhaseMarker{
          .begin = true,
          .name = std::string(name.data(), strnlen(name.data(), name.size())),
          .ops = arguments.ops,
          .calibration = (arguments.flags & SIGVISOR_PHASE_CALIBRATION) != 0,
          .op_syscall = arguments.op_syscall_plus1
                            ? std::optional<uint64_t>(arguments.op_syscall_plus1 - 1)
                            : std::nullopt};
      result.guest_tsc = arguments.guest_tsc;
      return result;
    }
    case SIGVISOR_LINUX_MARKER_PHASE_END:
      result.marker = PhaseMarker{.begin = false};
      result.guest_tsc = arguments.guest_tsc;
      return result;
    case SIGVISOR_LINUX_MARKER_EXIT:
      result.verdict = RunVerdict::kGuestEnded;
      result.outcome = Outcome::kExited;
      result.exit_code = static_cast<int>(arguments.exit_status & 0xff);
      return result;
    default:
      return LinuxMarkerMalformed(
          absl::StrFormat("unknown command %d", word & ~SIGVISOR_LINUX_MARKER_MAGIC_MASK));
  }
}

}  // namespace sigvisor
