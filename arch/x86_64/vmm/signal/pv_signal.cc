#include "arch/x86_64/vmm/signal/pv_signal.h"

#include <cstddef>
#include <cstring>
#include <span>
#include <utility>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/page_walk.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor::x86 {
namespace {

HypercallResult BadArgs(uint64_t nr, uint32_t args_gpa, const absl::Status& s) {
  return HypercallResult::RunFailed(Outcome::kBadDeviceAccess,
                                    absl::StrFormat("hypercall %s: bad argument block at %#x: %s",
                                                    HypercallName(nr), args_gpa, s.message()));
}

// Copies `bytes` to offset `offset` of the guest range `pieces` describes.
absl::Status WriteAt(GuestMemory& memory, std::span<const GuestPiece> pieces, size_t offset,
                     std::span<const uint8_t> bytes) {
  size_t piece_start = 0;
  for (const GuestPiece& piece : pieces) {
    const size_t piece_end = piece_start + piece.length;
    if (!bytes.empty() && offset < piece_end) {
      const size_t skip = offset - piece_start;
      const size_t n = std::min(bytes.size(), piece.length - skip);
      if (absl::Status s = memory.Write(piece.gpa + skip, bytes.first(n)); !s.ok()) return s;
      bytes = bytes.subspan(n);
      offset += n;
    }
    piece_start = piece_end;
  }
  if (!bytes.empty()) return absl::OutOfRangeError("a write past the translated range");
  return absl::OkStatus();
}

// Reads the guest range `pieces` describes into `out` (as long as the pieces).
absl::Status ReadPieces(const GuestMemory& memory, std::span<const GuestPiece> pieces,
                        std::span<uint8_t> out) {
  size_t at = 0;
  for (const GuestPiece& piece : pieces) {
    if (at + piece.length > out.size()) return absl::OutOfRangeError("a read past the buffer");
    if (absl::Status s = memory.Read(piece.gpa, out.subspan(at, piece.length)); !s.ok()) return s;
    at += piece.length;
  }
  return absl::OkStatus();
}

// The first pt_regs field where `kernel` and `vmm` differ, as a report line; empty if none.
std::string FirstRegsDifference(const PtRegs& kernel, const PtRegs& vmm) {
  std::span<const std::string_view> names = PtRegsFieldNames();
  for (size_t i = 0; i < names.size(); ++i) {
    const uint64_t k = PtRegsField(kernel, i), v = PtRegsField(vmm, i);
    if (k != v)
      return absl::StrFormat("pt_regs.%s is %#x from the kernel, %#x from the VMM", names[i], k, v);
  }
  return "";
}

}  // namespace

absl::Status PvSignalFrames::Register(HypercallTable& table) {
  if (absl::Status s = table.Register(SIGVISOR_HC_SIGNAL_FRAME,
                                      [this](uint32_t gpa) { return SignalFrame(gpa); });
      !s.ok()) {
    return s;
  }
  return table.Register(SIGVISOR_HC_SIGRETURN, [this](uint32_t gpa) { return Sigreturn(gpa); });
}

HypercallResult PvSignalFrames::Answer(uint64_t nr, uint32_t args_gpa, uint64_t result_gpa,
                                       int32_t result) {
  if (absl::Status s = memory_.WriteObject<int32_t>(result_gpa, result); !s.ok()) {
    return BadArgs(nr, args_gpa, s);
  }
  HypercallResult answer;
  answer.instrument = counts_.checking;  // a checked run counts the kernel's own path
  return answer;
}

void PvSignalFrames::Declined(const absl::Status& why) {
  ++counts_.declined[std::string(why.message())];
}

void PvSignalFrames::Mismatch(std::string what) {
  if (counts_.mismatches.size() < SignalFrameCounts::kMaxMismatches) {
    counts_.mismatches.push_back(std::move(what));
  } else {
    ++counts_.mismatches_dropped;
  }
}

void PvSignalFrames::CompareRegs(uint64_t regs_gpa, const PtRegs& expected,
                                 const std::string& what) {
  absl::StatusOr<PtRegs> regs = memory_.ReadObject<PtRegs>(regs_gpa);
  if (!regs.ok()) {
    Mismatch(absl::StrFormat("%s: pt_regs cannot be read back", what));
  } else if (std::string diff = FirstRegsDifference(*regs, expected); !diff.empty()) {
    Mismatch(absl::StrFormat("%s: %s", what, diff));
  }
}

HypercallResult PvSignalFrames::SignalFrame(uint32_t args_gpa) {
  absl::StatusOr<sigvisor_hc_signal_frame> args =
      memory_.ReadObject<sigvisor_hc_signal_frame>(args_gpa);
  if (!args.ok()) return BadArgs(SIGVISOR_HC_SIGNAL_FRAME, args_gpa, args.status());
  if (args->phase == SIGVISOR_SIGNAL_PV_BUILT) return FrameBuilt(args->kernel_result);
  return FrameAsked(args_gpa, *args);
}

HypercallResult PvSignalFrames::FrameAsked(uint32_t args_gpa,
                                           const sigvisor_hc_signal_frame& args) {
  const uint64_t result_gpa = args_gpa + offsetof(sigvisor_hc_signal_frame, result);
  auto decline = [&](const absl::Status& why) {
    Declined(why);
    return Answer(SIGVISOR_HC_SIGNAL_FRAME, args_gpa, result_gpa, SIGVISOR_SIGNAL_PV_DECLINED);
  };
  absl::StatusOr<PtRegs> user = memory_.ReadObject<PtRegs>(args.regs_gpa);
  if (!user.ok()) return decline(absl::FailedPreconditionError("registers outside guest RAM"));
  if (args.info_bytes > kSiginfoBytes) {
    return decline(absl::FailedPreconditionError("a siginfo longer than the frame's"));
  }
  absl::StatusOr<std::span<const uint8_t>> info =
      std::as_const(memory_).Span(args.info_gpa, args.info_bytes);
  if (!info.ok()) return decline(absl::FailedPreconditionError("a siginfo outside guest RAM"));
  const SignalFrameRequest request = {.signo = args.signo,
                                      .handler = args.handler,
                                      .restorer = args.restorer,
                                      .action_flags = args.action_flags,
                                      .saved_mask = args.saved_mask,
                                      .fault_address = args.fault_address,
                                      .info = *info};
  absl::StatusOr<SignalFramePlan> plan = PlanSignalFrame(request, *user);
  if (!plan.ok()) return decline(plan.status());

  if (counts_.checking) {
    // The same decision as when writing (the walk's A/D bits are set as the kernel's
    // own stores will set them), then the frame as it is now, to tell afterwards what
    // the kernel wrote and what it left.
    PendingFrame pending{.plan = *std::move(plan),
                         .regs_gpa = args.regs_gpa,
                         .page_table_gpa = args.page_table_gpa,
                         .before = std::vector<uint8_t>(sizeof(LinuxRtSigframe))};
    absl::StatusOr<std::vector<GuestPiece>> writable =
        TranslateUserRange(memory_, args.page_table_gpa, pending.plan.address, pending.plan.extent,
                           UserAccess::kWrite);
    absl::StatusOr<std::vector<GuestPiece>> pieces =
        TranslateRange(memory_, args.page_table_gpa, pending.plan.address, sizeof(LinuxRtSigframe));
    if (!writable.ok() || !pieces.ok() || !ReadPieces(memory_, *pieces, pending.before).ok()) {
      return decline(
          absl::FailedPreconditionError("a frame not mapped present, user and writable"));
    }
    pending_frame_ = std::move(pending);
    return Answer(SIGVISOR_HC_SIGNAL_FRAME, args_gpa, result_gpa, SIGVISOR_SIGNAL_PV_CHECK);
  }
  if (absl::Status s = WriteFrame(*plan, args.page_table_gpa); !s.ok()) return decline(s);
  if (absl::Status s = memory_.WriteObject<PtRegs>(args.regs_gpa, plan->regs); !s.ok()) {
    return BadArgs(SIGVISOR_HC_SIGNAL_FRAME, args_gpa, s);  // it was read a moment ago
  }
  ++counts_.frames_written;
  return Answer(SIGVISOR_HC_SIGNAL_FRAME, args_gpa, result_gpa, SIGVISOR_SIGNAL_PV_DONE);
}

absl::Status PvSignalFrames::WriteFrame(const SignalFramePlan& plan, uint64_t page_table_gpa) {
  // Every page the kernel would write, checked as its own stores would be, before
  // the first byte is written: a frame is written whole or not at all.
  absl::StatusOr<std::vector<GuestPiece>> pieces =
      TranslateUserRange(memory_, page_table_gpa, plan.address, plan.extent, UserAccess::kWrite);
  if (!pieces.ok()) {
    return absl::FailedPreconditionError("a frame not mapped present, user and writable");
  }
  const auto* image = reinterpret_cast<const uint8_t*>(&plan.frame);
  for (const FrameRange& range : plan.written) {
    if (absl::Status s =
            WriteAt(memory_, *pieces, range.offset, {image + range.offset, range.length});
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

HypercallResult PvSignalFrames::FrameBuilt(int32_t kernel_result) {
  HypercallResult answer;
  answer.instrument = true;
  if (!pending_frame_) {
    Mismatch("the kernel reported a frame it built with no check pending");
    return answer;
  }
  const PendingFrame pending = *std::move(pending_frame_);
  pending_frame_.reset();
  ++counts_.frames_compared;
  const int signo = static_cast<int>(pending.plan.regs.rdi);
  if (kernel_result != 0) {
    Mismatch(
        absl::StrFormat("signal %d: the kernel's setup_rt_frame failed (%d) where the VMM "
                        "writes the frame at %#x",
                        signo, kernel_result, pending.plan.address));
    return answer;
  }
  std::vector<uint8_t> after(sizeof(LinuxRtSigframe));
  absl::StatusOr<std::vector<GuestPiece>> pieces =
      TranslateRange(memory_, pending.page_table_gpa, pending.plan.address, after.size());
  if (!pieces.ok() || !ReadPieces(memory_, *pieces, after).ok()) {
    Mismatch(absl::StrFormat("signal %d: the frame at %#x cannot be read back", signo,
                             pending.plan.address));
    return answer;
  }
  const auto* vmm = reinterpret_cast<const uint8_t*>(&pending.plan.frame);
  std::vector<bool> written(after.size(), false);
  for (const FrameRange& range : pending.plan.written) {
    for (size_t i = range.offset; i < range.offset + range.length; ++i) written[i] = true;
  }
  for (size_t i = 0; i < after.size(); ++i) {
    const uint8_t expected = written[i] ? vmm[i] : pending.before[i];
    if (after[i] != expected) {
      Mismatch(absl::StrFormat(
          "signal %d: frame at %#x, byte %s: %#04x from the kernel, %#04x from the VMM%s", signo,
          pending.plan.address, FrameFieldName(i), after[i], expected,
          written[i] ? "" : " (a byte the VMM leaves as it was)"));
      return answer;
    }
  }
  CompareRegs(pending.regs_gpa, pending.plan.regs, absl::StrFormat("signal %d", signo));
  return answer;
}

HypercallResult PvSignalFrames::Sigreturn(uint32_t args_gpa) {
  absl::StatusOr<sigvisor_hc_sigreturn> args = memory_.ReadObject<sigvisor_hc_sigreturn>(args_gpa);
  if (!args.ok()) return BadArgs(SIGVISOR_HC_SIGRETURN, args_gpa, args.status());
  if (args->phase == SIGVISOR_SIGNAL_PV_BUILT) {
    return SigreturnBuilt(args->mask, args->kernel_result);
  }
  return SigreturnAsked(args_gpa, *args);
}

HypercallResult PvSignalFrames::SigreturnAsked(uint32_t args_gpa,
                                               const sigvisor_hc_sigreturn& args) {
  const uint64_t result_gpa = args_gpa + offsetof(sigvisor_hc_sigreturn, result);
  auto decline = [&](const absl::Status& why) {
    Declined(why);
    return Answer(SIGVISOR_HC_SIGRETURN, args_gpa, result_gpa, SIGVISOR_SIGNAL_PV_DECLINED);
  };
  absl::StatusOr<PtRegs> at_entry = memory_.ReadObject<PtRegs>(args.regs_gpa);
  if (!at_entry.ok()) return decline(absl::FailedPreconditionError("registers outside guest RAM"));
  absl::StatusOr<uint64_t> frame = SigreturnFrameAddress(*at_entry);
  if (!frame.ok()) return decline(frame.status());
  // The part of the frame the kernel reads, checked as its own loads would be.
  absl::StatusOr<std::vector<GuestPiece>> pieces =
      TranslateUserRange(memory_, args.page_table_gpa, *frame + kSigreturnReadOffset,
                         kSigreturnReadEnd - kSigreturnReadOffset, UserAccess::kRead);
  if (!pieces.ok()) {
    return decline(absl::FailedPreconditionError("a frame not mapped present and user"));
  }
  LinuxRtSigframe image{};
  auto* bytes = reinterpret_cast<uint8_t*>(&image);
  if (absl::Status s =
          ReadPieces(memory_, *pieces,
                     {bytes + kSigreturnReadOffset, kSigreturnReadEnd - kSigreturnReadOffset});
      !s.ok()) {
    return decline(absl::FailedPreconditionError("a frame not mapped present and user"));
  }
  const SigreturnPlan plan = PlanSigreturn(*at_entry, image.uc);
  if (counts_.checking) {
    pending_sigreturn_ = PendingSigreturn{.plan = plan, .regs_gpa = args.regs_gpa};
    return Answer(SIGVISOR_HC_SIGRETURN, args_gpa, result_gpa, SIGVISOR_SIGNAL_PV_CHECK);
  }
  if (absl::Status s = memory_.WriteObject<PtRegs>(args.regs_gpa, plan.regs); !s.ok()) {
    return BadArgs(SIGVISOR_HC_SIGRETURN, args_gpa, s);
  }
  if (absl::Status s = memory_.WriteObject<uint64_t>(
          args_gpa + offsetof(sigvisor_hc_sigreturn, mask), plan.mask);
      !s.ok()) {
    return BadArgs(SIGVISOR_HC_SIGRETURN, args_gpa, s);
  }
  ++counts_.sigreturns_restored;
  return Answer(SIGVISOR_HC_SIGRETURN, args_gpa, result_gpa, SIGVISOR_SIGNAL_PV_DONE);
}

HypercallResult PvSignalFrames::SigreturnBuilt(uint64_t mask, int32_t kernel_result) {
  HypercallResult answer;
  answer.instrument = true;
  if (!pending_sigreturn_) {
    Mismatch("the kernel reported a sigreturn it made with no check pending");
    return answer;
  }
  const PendingSigreturn pending = *std::move(pending_sigreturn_);
  pending_sigreturn_.reset();
  ++counts_.sigreturns_compared;
  if (kernel_result != 0) {
    Mismatch(
        absl::StrFormat("rt_sigreturn: the kernel found a bad frame (%d) where the VMM "
                        "restores it",
                        kernel_result));
    return answer;
  }
  if (mask != pending.plan.mask) {
    Mismatch(absl::StrFormat("rt_sigreturn: the mask is %#x from the kernel, %#x from the VMM",
                             mask, pending.plan.mask));
    return answer;
  }
  CompareRegs(pending.regs_gpa, pending.plan.regs, "rt_sigreturn");
  return answer;
}

}  // namespace sigvisor::x86
