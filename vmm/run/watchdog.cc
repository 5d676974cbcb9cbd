#include "vmm/run/watchdog.h"

#include <chrono>

namespace sigvisor {

Watchdog::Watchdog(Backend& backend, absl::Duration timeout)
    : backend_(backend), thread_([this, timeout] { Watch(timeout); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
}

void Watchdog::Watch(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == absl::InfiniteDuration()) {  // no deadline (a run held by a debugger)
    stop_requested_.wait(lock, [this] { return stopping_; });
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  if (stop_requested_.wait_until(lock, deadline, [this] { return stopping_; })) return;
  fired_.store(true, std::memory_order_release);
  // Kick until the run loop stops us: a kick can land between two KVM_RUNs.
  while (!stopping_) {
    backend_.Kick();
    stop_requested_.wait_for(lock, std::chrono::milliseconds(10), [this] { return stopping_; });
  }
}

}  // namespace sigvisor
