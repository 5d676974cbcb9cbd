#include "vmm/run/guest_protocol.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

// The exit code a run reports when the guest did not choose one (a panic).
constexpr int kFailureExitCode = 1;

// A fixed-size name field from the guest: up to the first NUL, at most N bytes.
template <size_t N>
std::string BoundedName(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

HypercallResult BadArgs(uint64_t nr, uint32_t args_gpa, const absl::Status& s) {
  return HypercallResult::RunFailed(
      Outcome::kBadDeviceAccess,
      absl::StrFormat("hypercall %s: bad argument block at %#x: %s", HypercallName(nr), args_gpa,
                      s.message()));
}

// The first `cpus` CPUs' counts of an SMP kernel's marker (the VMM checked `cpus`
// against SIGVISOR_MAX_CPUS when it made the machine; capped here all the same).
GuestIpiCounts IpiCountsOf(const sigvisor_ipi_counts& counts, int cpus) {
  GuestIpiCounts ipis(std::min<size_t>(cpus, SIGVISOR_MAX_CPUS));
  for (size_t cpu = 0; cpu < ipis.size(); ++cpu) {
    ipis[cpu] = {.sent = counts.sent[cpu], .received = counts.received[cpu]};
  }
  return ipis;
}

// A marker's own argument block and, from an SMP kernel (cpus > 0), the IPI counts
// that follow it.
template <typename Block, typename SmpBlock>
absl::StatusOr<std::pair<Block, GuestIpiCounts>> ReadMarker(const GuestMemory& memory, uint32_t gpa,
                                                            int cpus) {
  if (cpus == 0) {
    absl::StatusOr<Block> block = memory.ReadObject<Block>(gpa);
    if (!block.ok()) return block.status();
    return std::pair(*block, GuestIpiCounts());
  }
  absl::StatusOr<SmpBlock> block = memory.ReadObject<SmpBlock>(gpa);
  if (!block.ok()) return block.status();
  return std::pair(block->phase, IpiCountsOf(block->ipis, cpus));
}

HypercallResult Marker(PhaseMarker marker, uint64_t guest_tsc) {
  HypercallResult result;
  result.marker = std::move(marker);
  result.guest_tsc = guest_tsc;
  return result;
}

}  // namespace

absl::Status GuestProtocol::Register(HypercallTable& table) {
  const std::pair<uint64_t, HypercallResult (GuestProtocol::*)(uint32_t)> calls[] = {
      {SIGVISOR_HC_CONSOLE_WRITE, &GuestProtocol::ConsoleWrite},
      {SIGVISOR_HC_EXIT, &GuestProtocol::Exit},
      {SIGVISOR_HC_PHASE_BEGIN, &GuestProtocol::PhaseBegin},
      {SIGVISOR_HC_PHASE_END, &GuestProtocol::PhaseEnd},
      {SIGVISOR_HC_TIME_REPORT, &GuestProtocol::TimeReport},
      {SIGVISOR_HC_PANIC, &GuestProtocol::Panic},
      {SIGVISOR_HC_ORDERS, &GuestProtocol::Orders},
  };
  for (const auto& [nr, handler] : calls) {
    if (absl::Status s = table.Register(
            nr, [this, handler = handler](uint32_t gpa) { return (this->*handler)(gpa); });
        !s.ok()) {
      return s;
    }
  }
  if (table.registered(SIGVISOR_HC_EVENT)) return absl::OkStatus();
  return table.Register(SIGVISOR_HC_EVENT, [this](uint32_t gpa) { return Event(gpa); });
}

HypercallResult GuestProtocol::ConsoleWrite(uint32_t args_gpa) {
  auto args = memory_.ReadObject<sigvisor_hc_console_write>(args_gpa);
  if (!args.ok()) return BadArgs(SIGVISOR_HC_CONSOLE_WRITE, args_gpa, args.status());
  const uint64_t len = std::min<uint64_t>(args->len, SIGVISOR_CONSOLE_MAX_WRITE);
  auto bytes = memory_.Span(args->data_gpa, len);
  if (!bytes.ok()) return BadArgs(SIGVISOR_HC_CONSOLE_WRITE, args_gpa, bytes.status());
  console_(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  return HypercallResult{};
}

HypercallResult GuestProtocol::Exit(uint32_t args_gpa) {
  auto args = memory_.ReadObject<sigvisor_hc_exit>(args_gpa);
  if (!args.ok()) return BadArgs(SIGVISOR_HC_EXIT, args_gpa, args.status());
  HypercallResult end;
  end.verdict = RunVerdict::kGuestEnded;
  end.outcome = Outcome::kExited;
  end.exit_code = static_cast<int>(args->status & 0xff);
  return end;
}

HypercallResult GuestProtocol::PhaseBegin(uint32_t args_gpa) {
  auto read = ReadMarker<sigvisor_hc_phase_begin, sigvisor_hc_phase_begin_smp>(memory_, args_gpa,
                                                                               marker_ipi_cpus_);
  if (!read.ok()) return BadArgs(SIGVISOR_HC_PHASE_BEGIN, args_gpa, read.status());
  auto& [args, ipis] = *read;
  if (args.flags & ~uint32_t{SIGVISOR_PHASE_CALIBRATION}) {
    return HypercallResult::RunFailed(
        Outcome::kBadDeviceAccess,
        absl::StrFormat("hypercall phase_begin: unknown flags %#x", args.flags));
  }
  return Marker(PhaseMarker{.begin = true,
                            .name = BoundedName(args.name),
                            .ops = args.ops,
                            .calibration = (args.flags & SIGVISOR_PHASE_CALIBRATION) != 0,
                            .op_syscall = args.op_syscall_plus1
                                              ? std::optional<uint64_t>(args.op_syscall_plus1 - 1)
                                              : std::nullopt,
                            .guest_ipis = std::move(ipis)},
                args.tsc);
}

HypercallResult GuestProtocol::PhaseEnd(uint32_t args_gpa) {
  auto read = ReadMarker<sigvisor_hc_phase_end, sigvisor_hc_phase_end_smp>(memory_, args_gpa,
                                                                           marker_ipi_cpus_);
  if (!read.ok()) return BadArgs(SIGVISOR_HC_PHASE_END, args_gpa, read.status());
  auto& [args, ipis] = *read;
  return Marker(PhaseMarker{.begin = false, .guest_ipis = std::move(ipis)}, args.tsc);
}

HypercallResult GuestProtocol::TimeReport(uint32_t args_gpa) {
  auto args = memory_.ReadObject<sigvisor_hc_time_report>(args_gpa);
  if (!args.ok()) return BadArgs(SIGVISOR_HC_TIME_REPORT, args_gpa, args.status());
  HypercallResult report;
  report.warning = absl::StrFormat("guest time report '%s': %d cycles over %d",
                                   BoundedName(args->name), args->tsc_cycles, args->count);
  return report;
}

HypercallResult GuestProtocol::Panic(uint32_t args_gpa) {
  auto args = memory_.ReadObject<sigvisor_hc_panic>(args_gpa);
  if (!args.ok()) return BadArgs(SIGVISOR_HC_PANIC, args_gpa, args.status());
  constexpr uint64_t kMaxPanicMessage = 512;
  auto text =
      memory_.Span(args->message_gpa, std::min<uint64_t>(args->message_len, kMaxPanicMessage));
  HypercallResult end;
  end.verdict = RunVerdict::kGuestEnded;
  end.outcome = Outcome::kPanicked;
  end.exit_code = kFailureExitCode;
  end.diagnosis = "guest kernel panic: " +
                  (text.ok() ? std::string(reinterpret_cast<const char*>(text->data()), text->size())
                             : std::string("(message not readable)"));
  if (args->vector != ~0ull) end.diagnosis += absl::StrFormat(" (vector %d)", args->vector);
  if (args->rip != 0) end.guest_pc = args->rip;
  return end;
}

HypercallResult GuestProtocol::Event(uint32_t args_gpa) {
  auto args = memory_.ReadObject<sigvisor_hc_event>(args_gpa);
  if (!args.ok()) return BadArgs(SIGVISOR_HC_EVENT, args_gpa, args.status());
  return HypercallResult{};
}

absl::Status GuestProtocol::AnswerOrders(uint32_t args_gpa) {
  auto args = memory_.ReadObject<sigvisor_hc_orders>(args_gpa);
  if (!args.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bad argument block at %#x: %s", args_gpa, args.status().message()));
  }
  if (args->buf_len == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the request at %#x has an empty buffer (buf_len 0)", args_gpa));
  }
  // The most the VMM writes: the ABI's command line, NUL included, and the guest's buffer.
  const uint64_t usable = std::min<uint64_t>(args->buf_len, SIGVISOR_CMDLINE_MAX);
  auto buffer = memory_.Span(args->buf_gpa, usable);
  if (!buffer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the request at %#x names a buffer outside guest RAM (%d bytes at %#x)",
                        args_gpa, usable, args->buf_gpa));
  }
  // Refused, not truncated: a truncated command line would change the workload unseen.
  if (orders_.size() >= SIGVISOR_CMDLINE_MAX) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the orders are %d bytes; the ABI carries at most %d", orders_.size(),
                        SIGVISOR_CMDLINE_MAX - 1));
  }
  if (orders_.size() + 1 > usable) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the orders (%d bytes and a NUL) do not fit the guest's %d-byte buffer at %#x",
        orders_.size(), usable, args->buf_gpa));
  }
  std::copy(orders_.begin(), orders_.end(), buffer->begin());
  (*buffer)[orders_.size()] = '\0';
  const uint32_t len = static_cast<uint32_t>(orders_.size());
  return memory_.WriteObject(args_gpa + offsetof(sigvisor_hc_orders, len), len);
}

HypercallResult GuestProtocol::Orders(uint32_t args_gpa) {
  HypercallResult answered;
  if (quiescent_hook_) {
    answered = quiescent_hook_(args_gpa);
    if (answered.verdict != RunVerdict::kContinue) return answered;
    answered.instrument = false;  // the guest's own call, whoever looked at it
  }
  if (absl::Status s = AnswerOrders(args_gpa); !s.ok()) {
    return HypercallResult::RunFailed(Outcome::kBadDeviceAccess,
                                      absl::StrCat("hypercall orders: ", s.message()));
  }
  return answered;
}

}  // namespace sigvisor
