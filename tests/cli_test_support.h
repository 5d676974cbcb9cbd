// Running the sigvisor binary from a test: one place for the runfile path, the
// captured output and the temporary files.
#ifndef SIGVISOR_TESTS_CLI_TEST_SUPPORT_H_
#define SIGVISOR_TESTS_CLI_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace sigvisor::testing

#endif  // SIGVISOR_TESTS_CLI_TEST_SUPPORT_H_
