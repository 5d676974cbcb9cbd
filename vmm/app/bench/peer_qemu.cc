// A peer under QEMU: found on PATH, and one run of one workload as
// `qemu-system-x86_64 -kernel`, its console read for the guest's timing lines.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "vmm/app/bench/peer.h"
#include "vmm/app/bench/peer_process.h"

namespace sigvisor::bench {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The first non-empty line of `text` (QEMU's own error), without its newline.
std::string FirstLine(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!line.empty()) return std::string(line);
  }
  return "";
}

}  // namespace

PeerResult FindPeer(const PeerKind& kind) {
  PeerResult result;
  result.kind = kind;
  result.path = FindOnPath(kind.binary);
  if (result.path.empty()) {
    result.skipped = true;
    result.skip_reason =
        absl::StrFormat("%s is not on PATH (tools/setup.sh installs QEMU)", kind.binary);
  }
  return result;
}

PeerAttempt RunPeerOnce(const PeerResult& peer, const std::string& image_path,
                        const std::string& workload, uint32_t repetition, const Matrix& matrix,
                        absl::Duration timeout) {
  const PeerKind& kind = peer.kind;
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = absl::StrFormat("%s/sigvisor-%d-%s", tmp ? tmp : "/tmp", getpid(),
                                           kind.name);
  const std::string console_path = base + ".console", err_path = base + ".stderr";
  const std::vector<std::string> argv = {
      peer.path, "-accel", kind.accel, "-kernel", image_path, "-append",
      "kernel " + BundledKernelWords(workload, matrix), "-display", "none", "-serial",
      "file:" + console_path, "-monitor", "none", "-no-reboot", "-m",
      absl::StrCat(matrix.memory_mib), "-device", "isa-debug-exit,iobase=0xf4,iosize=4"};
  ::unlink(console_path.c_str());
  const Spawned spawned = Spawn(argv, "/dev/null", err_path, timeout);
  const std::string console = ReadFile(console_path);
  const std::string errors = ReadFile(err_path);
  ::unlink(console_path.c_str());
  ::unlink(err_path.c_str());
  PeerAttempt attempt;
  PeerRun& run = attempt.run;
  run.workload = workload;
  run.repetition = repetition;
  run.exit_status = spawned.status;
  run.wall_ns = spawned.wall_ns;
  run.cpu_ns = spawned.cpu_ns;
  run.phases = ParseTimingLines(console, workload);
  // isa-debug-exit: the guest's exit status 0 is QEMU's (0 << 1) | 1 = 1.
  if (!spawned.error.empty()) {
    run.diagnosis = spawned.error;
  } else if (spawned.timed_out) {
    run.diagnosis = absl::StrFormat("timed out after %s", absl::FormatDuration(timeout));
  } else if (spawned.status != 1) {
    run.diagnosis = absl::StrFormat("QEMU exited with %d (the guest's 0 gives 1)%s",
                                    spawned.status,
                                    errors.empty() ? "" : ": " + FirstLine(errors));
  } else {
    run.ok = true;  // a phase without a timing line shows as "-"
  }
  if (console.empty()) {
    // QEMU never ran the guest: the accelerator (or QEMU itself) does not work here.
    const std::string why = !spawned.error.empty() ? spawned.error
                            : spawned.timed_out   ? "no guest output before the timeout"
                                                  : FirstLine(errors);
    attempt.never_ran = absl::StrFormat("QEMU with -accel %s does not work here: %s", kind.accel,
                                        why.empty() ? "no guest output" : why);
  }
  return attempt;
}

}  // namespace sigvisor::bench
