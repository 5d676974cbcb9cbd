// Soak: boots and tears down many VMs in sequence, then several at once, and checks
// that nothing leaks (open file descriptors and resident memory return to their
// starting level) and that every run of the same guest makes exactly the same exits.
// Counts: SIGVISOR_SOAK_VMS (sequential, default 500) and SIGVISOR_SOAK_PARALLEL
// (threads, default 4) x SIGVISOR_SOAK_PER_THREAD (default 25).
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "tests/kvm_test_support.h"
#include "vmm/base/clock.h"

namespace sigvisor {
namespace {

// Under ASan freed memory sits in the quarantine (up to 256 MiB), so RSS grows by
// design; LeakSanitizer checks for leaks there instead.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssIsMeaningful = false;
#else
constexpr bool kRssIsMeaningful = true;
#endif
#else
constexpr bool kRssIsMeaningful = true;
#endif

using ::sigvisor::testing::BundledKernel;

int EnvCount(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && std::atoi(value) > 0 ? std::atoi(value) : fallback;
}

int OpenFds() {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - 1;  // the directory's own descriptor
}

long RssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// What must be identical across runs: exits by detail (reason + port and call), per
// phase exit counts and the outcome.
using Fingerprint = std::map<std::string, uint64_t>;

Fingerprint Boot(const KvmSystem& kvm, const ElfImage& kernel) {
  x86::MachineConfig config;
  config.cmdline = "workload=console ops=8";
  config.session.timeout = absl::Seconds(60);
  config.session.sandbox = SandboxPolicy{};
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, kernel, config);
  Fingerprint print;
  if (!report.ok()) {
    ADD_FAILURE() << report.status();
    return print;
  }
  const RunResult& r = report->result;
  print["outcome:" + std::string(OutcomeName(r.outcome))] = static_cast<uint64_t>(r.exit_code);
  for (const auto& [key, stats] : r.ledger.by_detail()) {
    print["exit:" + key.first + ":" + key.second] = stats.count;
  }
  for (const PhaseResult& phase : r.phases) {
    print["phase:" + phase.name + ":exits"] = phase.exits_total;
  }
  return print;
}

TEST(SoakTest, ManyVmsInSequenceThenInParallelLeakNothing) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const ElfImage kernel = BundledKernel();
  const int sequential = EnvCount("SIGVISOR_SOAK_VMS", 500);
  const int threads = EnvCount("SIGVISOR_SOAK_PARALLEL", 4);
  const int per_thread = EnvCount("SIGVISOR_SOAK_PER_THREAD", 25);

  // One warm-up run: the first VM in a process sets up caches (allocator arenas,
  // CPUID table, the kick handler) that stay for the process's life.
  const Fingerprint expected = Boot(*kvm, kernel);
  ASSERT_FALSE(expected.empty());
  ASSERT_TRUE(expected.count("outcome:exited")) << "warm-up run failed";
  const int fds_before = OpenFds();
  const long rss_before = RssKib();

  const uint64_t start = MonotonicNs();
  int differing = 0;
  for (int i = 0; i < sequential; ++i) {
    if (Boot(*kvm, kernel) != expected) ++differing;
  }
  const uint64_t sequential_ns = MonotonicNs() - start;
  const int fds_after_sequential = OpenFds();
  const long rss_after_sequential = RssKib();

  std::mutex mutex;
  int differing_parallel = 0;
  const uint64_t parallel_start = MonotonicNs();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        if (Boot(*kvm, kernel) != expected) {
          std::lock_guard<std::mutex> lock(mutex);
          ++differing_parallel;
        }
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  const uint64_t parallel_ns = MonotonicNs() - parallel_start;
  const int fds_after = OpenFds();
  const long rss_after = RssKib();

  std::printf(
      "soak: %d VMs in sequence: %.2f ms per VM; %d x %d in parallel: %.2f ms per VM (wall)\n"
      "soak: open fds %d before, %d after the sequence, %d after the parallel runs\n"
      "soak: RSS %ld KiB before, %ld KiB after the sequence, %ld KiB after the parallel runs\n",
      sequential, sequential_ns / 1e6 / sequential, threads, per_thread,
      parallel_ns / 1e6 / (threads * per_thread), fds_before, fds_after_sequential, fds_after,
      rss_before, rss_after_sequential, rss_after);
  EXPECT_EQ(differing, 0) << "runs whose exit counts differ from the first";
  EXPECT_EQ(differing_parallel, 0) << "parallel runs whose exit counts differ from the first";
  EXPECT_EQ(fds_after_sequential, fds_before);
  EXPECT_EQ(fds_after, fds_before);
  // Resident memory: back to the starting level, give or take allocator slack (the
  // parallel phase adds per-thread arenas). A leak of one guest's RAM (32 MiB) or of
  // a few KiB per VM over hundreds of VMs shows up well past this.
  if (kRssIsMeaningful) {
    EXPECT_LE(rss_after_sequential, rss_before + 4 * 1024);
    EXPECT_LE(rss_after, rss_before + 16 * 1024);
  }
}

}  // namespace
}  // namespace sigvisor
