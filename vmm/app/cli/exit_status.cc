#include "vmm/app/cli/exit_status.h"

#include <string.h>

#include "absl/strings/str_format.h"

namespace sigvisor::cli {

int RunExitStatus(const RunResult& result) {
  switch (result.outcome) {
    case Outcome::kExited:
      return result.exit_code >= 0 && result.exit_code <= kGuestStatusMax
                 ? result.exit_code
                 : kExitGuestStatusAbove122;
    case Outcome::kSaved:  // the guest reached its quiescent point and was saved
      return 0;
    case Outcome::kHostError:  // an ioctl failed: sigvisor's failure, not the guest's
      return kExitSigvisorFailed;
    default:
      return kExitGuestFailed;
  }
}

std::string GuestStatusNote(const RunResult& result, bool bundled_kernel) {
  if (result.outcome != Outcome::kExited || RunExitStatus(result) != kExitGuestStatusAbove122) {
    return "";
  }
  std::string meaning;
  const int signal = result.exit_code - 128;
  if (bundled_kernel && signal >= 1 && signal <= 64) {
    const char* name = sigabbrev_np(signal);
    meaning = absl::StrFormat(" (128 + %d: signal %d%s killed its init)", signal, signal,
                              name ? absl::StrFormat(", SIG%s,", name) : "");
  }
  return absl::StrFormat(
      "sigvisor: the guest exited with status %d%s; sigvisor exits with %d, its code for a "
      "guest status above %d (see `sigvisor help`, \"exit status\")",
      result.exit_code, meaning, kExitGuestStatusAbove122, kGuestStatusMax);
}

std::string ExitStatusHelp() {
  return absl::StrFormat(
      "exit status (every command):\n"
      "  0-%d  run, trace: the guest exited with this status (0: success, for every command)\n"
      "  %-5d  bench, study, merge: INCOMPLETE (runs failed, were interrupted or are missing)\n"
      "  %-5d  run, trace: the guest exited with a status above %d (the report and the JSON's\n"
      "         exit_code give it; the bundled kernel's 128 + N: signal N killed its init)\n"
      "  %-5d  run, trace: the guest failed: it did not exit (triple fault, panic, emulation\n"
      "         failure, timeout, interrupted by Ctrl-C, bad device access, killed by gdb,\n"
      "         reset the machine); one line on stderr\n"
      "  %-5d  sigvisor failed: bad input, a run that could not start, a host error, or a\n"
      "         result that could not be written (stdout, --svg, -o: a full disk), whatever\n"
      "         the status would have been; one line `sigvisor: error: ...` on stderr\n",
      kGuestStatusMax, kExitIncomplete, kExitGuestStatusAbove122, kGuestStatusMax,
      kExitGuestFailed, kExitSigvisorFailed);
}

}  // namespace sigvisor::cli
