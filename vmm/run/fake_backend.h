// A scripted backend for testing the run loop without /dev/kvm: it plays a list of
// exits, then either stops producing them or blocks until kicked (a hung guest).
#ifndef SIGVISOR_VMM_RUN_FAKE_BACKEND_H_
#define SIGVISOR_VMM_RUN_FAKE_BACKEND_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "vmm/run/backend.h"

namespace sigvisor {

class FakeBackend : public Backend {
 public:
  // One scripted exit; port I/O writes carry their bytes.
  struct Step {
    ExitKind kind = ExitKind::kIo;
    uint64_t address = 0;
    bool is_write = true;
    std::vector<uint8_t> bytes;  // size * count bytes
    uint32_t size = 1;
    uint32_t count = 1;
    uint64_t raw_detail = 0;
    StatsSnapshot stats_after;  // what ReadStats returns once this exit happened
  };

  explicit FakeBackend(std::vector<Step> steps) : steps_(steps.begin(), steps.end()) {}

  // After the script, Run() blocks until Kick() (a guest that never exits).
  absl::StatusOr<VmExit> Run() override {
    if (!steps_.empty()) {
      current_ = std::move(steps_.front());
      steps_.pop_front();
      if (!current_.stats_after.empty()) stats_ = current_.stats_after;
      VmExit exit;
      exit.kind = current_.kind;
      exit.address = current_.address;
      exit.is_write = current_.is_write;
      exit.size = current_.size;
      exit.count = current_.count;
      exit.raw_detail = current_.raw_detail;
      exit.data = current_.bytes;
      return exit;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    kicked_.wait(lock, [this] { return kicks_ > 0; });
    VmExit exit;
    exit.kind = ExitKind::kInterrupted;
    return exit;
  }

  void Kick() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++kicks_;
    kicked_.notify_all();
  }

  absl::StatusOr<StatsSnapshot> ReadStats() override { return stats_; }
  absl::StatusOr<CpuLocation> Locate() override {
    CpuLocation where;
    where.pc = 0x100042;
    return where;
  }

 private:
  std::deque<Step> steps_;
  Step current_;
  StatsSnapshot stats_;
  std::mutex mutex_;
  std::condition_variable kicked_;
  int kicks_ = 0;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_FAKE_BACKEND_H_
