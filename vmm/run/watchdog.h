// The watchdog: a guest that never exits (an endless loop at CPL0, `vmcall` on a
// PVM host) must not hang the VMM. After the deadline, the watchdog thread kicks the
// backend until the run loop notices, and the run ends with a timeout report. Given an
// interrupt flag (set by `sigvisor run`'s SIGINT/SIGTERM handler), it also looks at
// the flag every few milliseconds and, once it is set, kicks the same way: the run
// ends with an interrupted report.
#ifndef SIGVISOR_VMM_RUN_WATCHDOG_H_
#define SIGVISOR_VMM_RUN_WATCHDOG_H_

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/time/time.h"
#include "vmm/run/backend.h"

namespace sigvisor {

class Watchdog {
 public:
  // Starts watching `backend`; it fires after `timeout` (never if it is infinite), or
  // once `*interrupt` is set (never if it is null).
  Watchdog(Backend& backend, absl::Duration timeout,
           const std::atomic<bool>* interrupt = nullptr);
  // Stops the thread (joins it).
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  bool fired() const { return fired_.load(std::memory_order_acquire); }
  // It fired because the interrupt flag was set, not at the deadline.
  bool interrupted() const { return fired() && interrupted_.load(std::memory_order_acquire); }

 private:
  void Watch(absl::Duration timeout, const std::atomic<bool>* interrupt);

  Backend& backend_;
  std::atomic<bool> fired_{false};
  std::atomic<bool> interrupted_{false};
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_WATCHDOG_H_
