#include "vmm/run/watchdog.h"

#include <algorithm>
#include <chrono>

namespace sigvisor {

Watchdog::Watchdog(Backend& backend, absl::Duration timeout,
                   const std::atomic<bool>* interrupt)
    : backend_(backend), thread_([this, timeout, interrupt] { Watch(timeout, interrupt); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
}

void Watchdog::Watch(absl::Duration timeout, const std::atomic<bool>* interrupt) {
  using Clock = std::chrono::steady_clock;
  // How often the interrupt flag is looked at: a signal handler cannot wake a
  // condition variable, so the flag is polled.
  constexpr auto kInterruptPoll = std::chrono::milliseconds(20);
  std::unique_lock<std::mutex> lock(mutex_);
  // A deadline past the clock's range would overflow into the past: it is none.
  const bool has_deadline =
      timeout != absl::InfiniteDuration() &&
      absl::ToChronoNanoseconds(timeout) < Clock::time_point::max() - Clock::now();
  if (!has_deadline && interrupt == nullptr) {  // no deadline (a run held by a debugger)
    stop_requested_.wait(lock, [this] { return stopping_; });
    return;
  }
  const Clock::time_point deadline =
      has_deadline ? Clock::now() + absl::ToChronoNanoseconds(timeout) : Clock::time_point::max();
  for (;;) {
    const Clock::time_point wake =
        interrupt == nullptr ? deadline : std::min(deadline, Clock::now() + kInterruptPoll);
    if (stop_requested_.wait_until(lock, wake, [this] { return stopping_; })) return;
    if (interrupt != nullptr && interrupt->load(std::memory_order_acquire)) {
      interrupted_.store(true, std::memory_order_release);
      break;
    }
    if (has_deadline && Clock::now() >= deadline) break;
  }
  fired_.store(true, std::memory_order_release);
  // Kick until the run loop stops us: a kick can land between two KVM_RUNs.
  while (!stopping_) {
    backend_.Kick();
    stop_requested_.wait_for(lock, std::chrono::milliseconds(10), [this] { return stopping_; });
  }
}

}  // namespace sigvisor
