#include "arch/x86_64/vmm/machine/linux_marker_gate.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_format.h"
#include "vmm/run/linux_marker.h"

namespace sigvisor::x86 {
namespace {

// The name travels in rbx, rcx, rsi and rdi, each register's low byte first.
LinuxMarkerArguments ArgumentsOf(const kvm_regs& regs) {
  LinuxMarkerArguments arguments = {.ops = regs.r8,
                                    .flags = regs.r9,
                                    .op_syscall_plus1 = regs.r11,
                                    .guest_tsc = regs.r10,
                                    .exit_status = regs.r8};
  const uint64_t words[] = {regs.rbx, regs.rcx, regs.rsi, regs.rdi};
  static_assert(sizeof(words) == sizeof(arguments.name));
  for (size_t i = 0; i < std::size(words); ++i) {
    for (size_t b = 0; b < 8; ++b) {
      arguments.name[i * 8 + b] = static_cast<char>(words[i] >> (8 * b));
    }
  }
  return arguments;
}

}  // namespace

HypercallResult DecodeLinuxMarkerWrite(std::span<const uint8_t> data, const kvm_regs& regs) {
  absl::StatusOr<uint32_t> word = LinuxMarkerWord(data);
  if (!word.ok()) return LinuxMarkerMalformed(std::string(word.status().message()));
  // A reader that returned another moment's registers (or another vCPU's) would hand
  // the run a wrong name and count: the written word must still be in eax.
  const auto eax = static_cast<uint32_t>(regs.rax);
  if (eax != *word) {
    return LinuxMarkerMalformed(absl::StrFormat(
        "%#x written but eax holds %#x: not the writer's registers", *word, eax));
  }
  return DecodeLinuxMarker(*word, ArgumentsOf(regs));
}

HypercallResult LinuxMarkerGate::Access(uint64_t offset, bool is_write,
                                        std::span<uint8_t> data) const {
  if (!is_write) {
    std::fill(data.begin(), data.end(), 0xff);
    return HypercallResult{};
  }
  if (offset != 0) {
    return HypercallResult::RunFailed(
        Outcome::kBadDeviceAccess,
        absl::StrFormat("Linux marker port: a write at +%d; the protocol writes 4 bytes at "
                        "its first port",
                        offset));
  }
  absl::StatusOr<kvm_regs> regs = cpu_.GetRegs();
  if (!regs.ok()) {
    return HypercallResult::RunFailed(
        Outcome::kHostError,
        absl::StrFormat("Linux marker: reading the vCPU's registers: %s", regs.status().message()));
  }
  return DecodeLinuxMarkerWrite(data, *regs);
}

}  // namespace sigvisor::x86
