// sigvisor's exit status: one rule for every command (docs/cli.md;
// `sigvisor help`), so that a script can tell from the status alone whether sigvisor
// failed, the guest failed, or the guest exited with N.
//
//   0-122  run, trace: the guest exited with this status (0 for every command: success)
//   1      bench, study, merge: INCOMPLETE (runs failed, were interrupted or missing)
//   123    run, trace: the guest exited with a status above 122, which cannot pass
//          through (the report and the JSON's exit_code give it; the bundled kernel's
//          128 + N means signal N killed its init)
//   124    run, trace: the guest failed: it did not exit (triple fault, panic,
//          emulation failure, timeout, interrupted, bad device access, killed by gdb,
//          ...)
//   125    sigvisor failed: bad input (one line `sigvisor: error: ...`), a run that
//          could not start (no KVM, a bad image), a host error during the run, or a
//          result that could not be written (result_output.h), over any other status
//
// The reserved codes sit just under 126 and 127 (the shell's "cannot execute" and
// "not found") and below 128 + N (the shell's "killed by signal N"), as env(1),
// timeout(1) and `docker run` place theirs, so that none of them reads as sigvisor
// itself dying of a signal. The guest's own statuses above 122 (a kernel killed by a
// signal reports 128 + N) are exactly the ones a shell would misread.
#ifndef SIGVISOR_VMM_APP_CLI_EXIT_STATUS_H_
#define SIGVISOR_VMM_APP_CLI_EXIT_STATUS_H_

#include <string>

#include "vmm/run/session.h"

namespace sigvisor::cli {

inline constexpr int kGuestStatusMax = 122;
inline constexpr int kExitIncomplete = 1;
inline constexpr int kExitGuestStatusAbove122 = 123;
inline constexpr int kExitGuestFailed = 124;
inline constexpr int kExitSigvisorFailed = 125;

// The status `sigvisor run` (and `trace`) exits with after a run that ended with
// `result`.
int RunExitStatus(const RunResult& result);

// For a guest that exited with a status above kGuestStatusMax: one line saying what
// it was and why sigvisor exits 123 ("" otherwise). `bundled_kernel`: the status
// follows the bundled kernel's convention (128 + N: killed by signal N).
std::string GuestStatusNote(const RunResult& result, bool bundled_kernel);

// The rule as `sigvisor help` prints it.
std::string ExitStatusHelp();

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_EXIT_STATUS_H_
