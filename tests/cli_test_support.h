// Running the sigvisor binary from a test: one place for the runfile path, the
// captured output and the temporary files.
#ifndef SIGVISOR_TESTS_CLI_TEST_SUPPORT_H_
#define SIGVISOR_TESTS_CLI_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace sigvisor::testing {

struct CommandResult {
  int status = -1;  // the exit status, -1 if the process did not exit normally
  std::string out;
  std::string err;
};

// A path in the test's private temporary directory.
inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Runs vmm/app/cli/sigvisor (or `binary`, another build of it; both from the runfiles)
// with `args` through the shell, stdin empty, stdout and stderr captured.
inline CommandResult Sigvisor(const std::string& args,
                              const std::string& binary = "vmm/app/cli/sigvisor") {
  const std::string out = TempPath("sigvisor.stdout"), err = TempPath("sigvisor.stderr");
  const std::string command = binary + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, Slurp(out), Slurp(err)};
}

// As Sigvisor, with stdout sent to `stdout_path` rather than captured (/dev/full: a
// full disk); `out` is empty.
inline CommandResult SigvisorWithStdout(const std::string& args, const std::string& stdout_path,
                                        const std::string& binary = "vmm/app/cli/sigvisor") {
  const std::string err = TempPath("sigvisor.stderr");
  const std::string command =
      binary + " " + args + " >" + stdout_path + " 2>" + err + " </dev/null";
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, "", Slurp(err)};
}

// /dev/full is there (a character device): every write to it fails with ENOSPC.
inline bool HaveDevFull() {
  struct stat st;
  return ::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode);
}

inline int Lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

// sigvisor's exit status when it fails itself: bad input, a run that could not start
// (vmm/app/cli/exit_status.h; `sigvisor help`, "exit status").
inline constexpr int kSigvisorFailed = 125;

// A bad-input case: status 125, exactly one line on stderr, containing `fragment`.
inline void ExpectOneLineError(const CommandResult& r, const std::string& fragment) {
  EXPECT_EQ(r.status, kSigvisorFailed) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("sigvisor: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

inline bool HaveKvm() { return access("/dev/kvm", R_OK | W_OK) == 0; }

// A run ended by signals: how it exited (`status`, -1 if a signal killed it), the signal
// that killed it (0 if none), its stdout and stderr, and whether `marker` showed up.
struct SignalledResult {
  CommandResult result;
  int killed_by = 0;
  bool marker_seen = false;
  pid_t pid = -1;
};

// Starts vmm/app/cli/sigvisor with `args` (no shell), stdout and stderr to files, stdin
// empty; once `marker` appears in either (the guest has started: a console line), or
// after `wait`, sends `signals` one after the other and waits for it to end.
inline SignalledResult SigvisorSignalled(const std::vector<std::string>& args,
                                         const std::string& marker, const std::vector<int>& signals,
                                         std::chrono::seconds wait = std::chrono::seconds(120)) {
  const std::string out = TempPath("signalled.stdout"), err = TempPath("signalled.stderr");
  std::ofstream(out, std::ios::trunc).close();  // nothing of an earlier run's output
  std::ofstream(err, std::ios::trunc).close();
  std::vector<char*> argv;
  std::string binary = "vmm/app/cli/sigvisor";
  argv.push_back(binary.data());
  std::vector<std::string> copies = args;
  for (std::string& arg : copies) argv.push_back(arg.data());
  argv.push_back(nullptr);
  SignalledResult r;
  const pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return r;
  }
  if (pid == 0) {
    if (!freopen("/dev/null", "r", stdin) || !freopen(out.c_str(), "w", stdout) ||
        !freopen(err.c_str(), "w", stderr)) {
      _exit(126);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  r.pid = pid;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  int status = 0;
  bool ended = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Slurp(out).find(marker) != std::string::npos ||
        Slurp(err).find(marker) != std::string::npos) {
      r.marker_seen = true;
      break;
    }
    if (waitpid(pid, &status, WNOHANG) == pid) {
      ended = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!ended) {
    for (int signal : signals) kill(pid, signal);
    waitpid(pid, &status, 0);
  }
  r.result = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
  r.killed_by = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return r;
}

// The JSON Schema docs/schema/NAME, from the test's runfiles (data: //docs/schema:schemas).
inline nlohmann::json DocsSchema(const std::string& name) {
  std::ifstream file("docs/schema/" + name);
  EXPECT_TRUE(file.good()) << "missing schema docs/schema/" << name;
  return nlohmann::json::parse(file);
}

}  // namespace sigvisor::testing

#endif  // SIGVISOR_TESTS_CLI_TEST_SUPPORT_H_
