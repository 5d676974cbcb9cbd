// Where a command's result goes (stdout; a file named by --svg FILE or -o FILE), written
// so that a write that fails is never silent (issue 30: `run --json > /dev/full` exited
// 0). Every command that prints or writes a result goes through here: stdout is
// flushed and closed, its status checked, once at the end (FinishStdout, from main),
// and a result file is written whole and closed, checked (ResultFile). A failed
// write is one line `sigvisor: error: ...: <errno text>` naming what was not written,
// and the exit status kExitResultLost.
#ifndef SIGVISOR_VMM_APP_CLI_RESULT_OUTPUT_H_
#define SIGVISOR_VMM_APP_CLI_RESULT_OUTPUT_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/app/cli/exit_status.h"

namespace sigvisor::cli {

// A result that could not be written is gone: sigvisor failed (125, exit_status.h),
// whatever status the command would have exited with otherwise (docs/cli.md).
inline constexpr int kExitResultLost = kExitSigvisorFailed;

// Makes stdout a stream that remembers why a write to it failed (glibc drops the
// errno of a write that failed mid-output), with the buffering it had. Called once,
// first thing in main; FinishStdout works without it, less precisely.
void WatchStdout();

// Flushes and closes stdout and checks that every write to it went through. If one
// did not, prints "sigvisor: error: stdout: <what> was not written: <reason>" (e.g.
// "No space left on device") and returns
// kExitResultLost; otherwise returns `status`. Called once, at the end of main.
int FinishStdout(std::string_view what, int status);

// The same for any stream (tests hand it a stream of their own): "" when every write
// to `stream` went through and it flushed and closed, else the reason (strerror).
// Closes `stream` either way.
std::string CloseChecked(FILE* stream);

// A file a result is written to, created when the flag is read (so that a bad path
// fails before anything runs) and written whole at the end (Write). A regular file
// (or none yet) is written under a temporary name (PATH.partial) and renamed over
// PATH once it is complete: a failed write leaves no partial result and the old file
// as it was. Anything else (/dev/full, /dev/stdout, a FIFO) is written in place.
class ResultFile {
 public:
  // `flag` and `what` name it in errors: "--svg 'x.svg': the chart was not written:
  // No space left on device".
  // A directory, or a path that cannot be created, is refused (with the flag's name).
  static absl::StatusOr<ResultFile> Create(std::string_view flag, std::string path,
                                           std::string what);

  ResultFile(ResultFile&& other) noexcept;
  ResultFile& operator=(ResultFile&&) = delete;
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;
  // Removes the temporary file if Write never completed.
  ~ResultFile();

  // Writes `bytes`, flushes and closes the file (and renames it into place). Once.
  // The error names the flag, the path and what was not written.
  absl::Status Write(std::string_view bytes);

  const std::string& path() const { return path_; }

 private:
  ResultFile(std::string flag, std::string path, std::string what)
      : flag_(std::move(flag)), path_(std::move(path)), what_(std::move(what)) {}
  void Discard();

  std::string flag_, path_, what_;
  std::string temporary_;  // "" when written in place
  FILE* stream_ = nullptr;
};

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_RESULT_OUTPUT_H_
