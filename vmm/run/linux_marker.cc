#include "vmm/run/linux_marker.h"

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

HypercallResult Malformed(std::string why) {
  return HypercallResult::Fail(Outcome::kBadDeviceAccess, "linux marker: " + std::move(why));
}

// The phase name from rbx, rcx, rsi, rdi: each register's bytes low first (x86-64
// memory order), up to the first NUL, at most SIGVISOR_PHASE_NAME_MAX bytes.
std::string PhaseName(const LinuxMarkerRegisters& registers) {
  const uint64_t words[] = {registers.rbx, registers.rcx, registers.rsi, registers.rdi};
  static_assert(sizeof(words) == SIGVISOR_PHASE_NAME_MAX);
  char bytes[SIGVISOR_PHASE_NAME_MAX];
  for (size_t i = 0; i < std::size(words); ++i) {
    for (size_t b = 0; b < 8; ++b) bytes[i * 8 + b] = static_cast<char>(words[i] >> (8 * b));
  }
  return std::string(bytes, strnlen(bytes, sizeof(bytes)));
}

}  // namespace

HypercallResult DecodeLinuxMarker(std::span<const uint8_t> data,
                                  const LinuxMarkerRegisters& registers) {
  uint32_t word = 0;
  if (data.size() != sizeof(word)) {
    return Malformed(
        absl::StrFormat("%d-byte write; the protocol writes 4 bytes (outl)", data.size()));
  }
  std::memcpy(&word, data.data(), sizeof(word));
  if ((word & SIGVISOR_LINUX_MARKER_MAGIC_MASK) != SIGVISOR_LINUX_MARKER_MAGIC) {
    return Malformed(
        absl::StrFormat("%#x written, without the magic %#x", word, SIGVISOR_LINUX_MARKER_MAGIC));
  }
  // The registers must be the writer's: a reader that returned another moment's (or
  // another vCPU's) would hand the run a wrong name and count.
  if (static_cast<uint32_t>(registers.rax) != word) {
    return Malformed(absl::StrFormat("%#x written but eax holds %#x: not the writer's registers",
                                     word, static_cast<uint32_t>(registers.rax)));
  }
  HypercallResult result;
  switch (word & ~SIGVISOR_LINUX_MARKER_MAGIC_MASK) {
    case SIGVISOR_LINUX_MARKER_PHASE_BEGIN: {
      if (registers.r9 & ~uint64_t{SIGVISOR_PHASE_CALIBRATION}) {
        return Malformed(absl::StrFormat("phase_begin: unknown flags %#x", registers.r9));
      }
      result.marker = PhaseMarker{
          .begin = true,
          .name = PhaseName(registers),
          .ops = registers.r8,
          .calibration = (registers.r9 & SIGVISOR_PHASE_CALIBRATION) != 0,
          .op_syscall = registers.r11 ? std::optional<uint64_t>(registers.r11 - 1) : std::nullopt};
      result.guest_tsc = registers.r10;
      return result;
    }
    case SIGVISOR_LINUX_MARKER_PHASE_END:
      result.marker = PhaseMarker{.begin = false};
      result.guest_tsc = registers.r10;
      return result;
    case SIGVISOR_LINUX_MARKER_EXIT:
      result.kind = HypercallResult::Kind::kEnd;
      result.outcome = Outcome::kExited;
      result.exit_code = static_cast<int>(registers.r8 & 0xff);
      return result;
    default:
      return Malformed(
          absl::StrFormat("unknown command %d", word & ~SIGVISOR_LINUX_MARKER_MAGIC_MASK));
  }
}

}  // namespace sigvisor
