#include "arch/x86_64/vmm/machine/linux_marker_gate.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/page_walk.h"
#include "guest-kit/abi/sigvisor_abi.h"
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

absl::Status AnswerLinuxOrders(GuestMemory& memory, const LinuxOrdersRequest& request,
                               std::string_view orders) {
  if (orders.size() >= SIGVISOR_LINUX_ORDERS_MAX) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the orders are %d bytes; the protocol carries at most %d", orders.size(),
                        SIGVISOR_LINUX_ORDERS_MAX - 1));
  }
  const uint64_t usable = std::min<uint64_t>(request.buffer_len, SIGVISOR_LINUX_ORDERS_MAX);
  if (orders.size() + 1 > usable) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the orders (%d bytes and a NUL) do not fit init's %d-byte buffer at %#x",
                        orders.size(), request.buffer_len, request.buffer_gva));
  }
  const size_t length = orders.size() + 1;
  absl::StatusOr<std::vector<GuestPiece>> pieces =
      TranslateUserRange(memory, request.cr3, request.buffer_gva, length, UserAccess::kWrite);
  if (!pieces.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("init's buffer at %#x (%d bytes) is not mapped writable for it: %s",
                        request.buffer_gva, length, pieces.status().message()));
  }
  std::string bytes(orders);
  bytes.push_back('\0');
  size_t done = 0;
  for (const GuestPiece& piece : *pieces) {
    absl::StatusOr<std::span<uint8_t>> span = memory.Span(piece.gpa, piece.length);
    if (!span.ok()) return span.status();
    std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(done), piece.length, span->begin());
    done += piece.length;
  }
  return absl::OkStatus();
}

HypercallResult LinuxMarkerGate::Orders(const kvm_regs& regs) const {
  absl::StatusOr<kvm_sregs> sregs = cpu_.GetSregs();
  if (!sregs.ok()) {
    return HypercallResult::RunFailed(
        Outcome::kHostError,
        absl::StrFormat("Linux marker: reading the vCPU's sregs: %s", sregs.status().message()));
  }
  if (regs.r10 & ~uint64_t{SIGVISOR_LINUX_ORDERS_FPU_HELD}) {
    return LinuxMarkerMalformed(absl::StrFormat("orders: unknown flags %#x in r10 (known: %#x)",
                                                regs.r10, SIGVISOR_LINUX_ORDERS_FPU_HELD));
  }
  request_ = LinuxOrdersRequest{.buffer_gva = regs.r8,
                                .buffer_len = regs.r9,
                                .cr3 = sregs->cr3,
                                .fpu_held = (regs.r10 & SIGVISOR_LINUX_ORDERS_FPU_HELD) != 0};
  HypercallResult answered;
  if (hook_) {
    answered = hook_();
    if (answered.verdict != RunVerdict::kContinue) return answered;
  }
  if (absl::Status s = AnswerLinuxOrders(cpu_.memory(), *request_, orders_); !s.ok()) {
    return LinuxMarkerMalformed(absl::StrFormat("orders: %s", s.message()));
  }
  return answered;
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
  if (absl::StatusOr<uint32_t> word = LinuxMarkerWord(data);
      word.ok() && *word == (SIGVISOR_LINUX_MARKER_MAGIC | SIGVISOR_LINUX_MARKER_ORDERS) &&
      static_cast<uint32_t>(regs->rax) == *word) {
    return Orders(*regs);
  }
  return DecodeLinuxMarkerWrite(data, *regs);
}

}  // namespace sigvisor::x86
