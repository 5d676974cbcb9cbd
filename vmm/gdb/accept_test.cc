#include "vmm/gdb/accept.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace sigvisor::gdb {
namespace {

// A socket listening on a free loopback port; `port` is set to it.
int Listen(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

using Clock = std::chrono::steady_clock;

// Issue 30: `run --gdb PORT --timeout 2s` with no gdb waited forever.
TEST(AcceptClientTest, NoClientEndsAtTheTimeout) {
  int port = 0;
  const int listening = Listen(&port);
  std::atomic<bool> interrupt{false};
  const Clock::time_point start = Clock::now();
  absl::StatusOr<int> fd = AcceptClient(listening, absl::Milliseconds(200), &interrupt);
  const auto waited = Clock::now() - start;
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kDeadlineExceeded) << fd.status();
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  EXPECT_LT(waited, std::chrono::seconds(5));
  // Without an interrupt flag the deadline bounds the wait all the same.
  fd = AcceptClient(listening, absl::Milliseconds(50), nullptr);
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kDeadlineExceeded) << fd.status();
  ::close(listening);
}

TEST(AcceptClientTest, TheInterruptFlagEndsTheWait) {
  int port = 0;
  const int listening = Listen(&port);
  std::atomic<bool> interrupt{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    interrupt.store(true);
  });
  const Clock::time_point start = Clock::now();
  absl::StatusOr<int> fd = AcceptClient(listening, absl::InfiniteDuration(), &interrupt);
  setter.join();
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kAborted) << fd.status();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  // A flag already set: no wait at all, even for a client that is there.
  const int client = Connect(port);
  fd = AcceptClient(listening, absl::InfiniteDuration(), &interrupt);
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kAborted) << fd.status();
  ::close(client);
  ::close(listening);
}

TEST(AcceptClientTest, AClientIsAcceptedBeforeTheDeadline) {
  int port = 0;
  const int listening = Listen(&port);
  std::atomic<bool> interrupt{false};
  int client = -1;
  std::thread connector([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    client = Connect(port);
  });
  absl::StatusOr<int> fd = AcceptClient(listening, absl::Seconds(30), &interrupt);
  connector.join();
  ASSERT_TRUE(fd.ok()) << fd.status();
  // The accepted socket is the client's other end.
  ASSERT_EQ(::write(client, "+", 1), 1);
  char c = 0;
  EXPECT_EQ(::read(*fd, &c, 1), 1);
  EXPECT_EQ(c, '+');
  ::close(*fd);
  ::close(client);
  ::close(listening);
}

TEST(AcceptClientTest, ABadSocketIsAnErrorNotAWait) {
  // A descriptor that is not open: poll() reports it (POLLNVAL), accept then fails.
  int port = 0;
  const int closed = Listen(&port);
  ::close(closed);
  absl::StatusOr<int> fd = AcceptClient(closed, absl::Seconds(5), nullptr);
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kUnavailable) << fd.status();
}

}  // namespace
}  // namespace sigvisor::gdb
