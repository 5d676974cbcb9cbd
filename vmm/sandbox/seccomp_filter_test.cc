#include "vmm/sandbox/seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

TEST(SeccompFilter, ForbiddenSyscallIsRefusedOnTheSandboxedThreadOnly) {
  int open_result = 0, open_errno = 0, write_result = 0;
  absl::Status installed;
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  std::thread confined([&] {
    installed = InstallRunLoopSandbox(SandboxPolicy{});
    if (!installed.ok()) return;
    open_result = open("/proc/self/status", O_RDONLY);  // openat: not on the list
    open_errno = errno;
    write_result = static_cast<int>(write(pipe_fds[1], "x", 1));  // allowed
  });
  confined.join();
  ASSERT_TRUE(installed.ok()) << installed;
  EXPECT_EQ(open_result, -1);
  EXPECT_EQ(open_errno, EPERM);
  EXPECT_EQ(write_result, 1);
  // The rest of the process is not confined.
  int fd = open("/proc/self/status", O_RDONLY);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(SeccompFilter, ThreadsCreatedInsideInheritIt) {
  int open_errno = 0;
  std::thread confined([&] {
    ASSERT_TRUE(InstallRunLoopSandbox(SandboxPolicy{}).ok());
    std::thread child([&] {
      if (open("/proc/self/status", O_RDONLY) < 0) open_errno = errno;
    });
    child.join();
  });
  confined.join();
  EXPECT_EQ(open_errno, EPERM);
}

TEST(SeccompFilter, GdbPolicyAddsSocketCalls) {
  const size_t base = SandboxAllowlist(SandboxPolicy{}).size();
  const size_t gdb = SandboxAllowlist(SandboxPolicy{.allow_gdb_sockets = true}).size();
  EXPECT_GT(gdb, base);
  EXPECT_EQ(SandboxDescription(false, {}), "off");
}

}  // namespace
}  // namespace sigvisor
