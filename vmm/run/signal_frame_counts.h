// What the signal=pv hypercalls did over a run (arch/x86_64/vmm/signal/pv_signal.h;
// docs/pv-signals.md): frames the VMM wrote and read back, calls it left to the
// kernel and why, and, with --check-signal-frames, its comparisons with the kernel's
// own frames. Plain data, for the machine's report and the run's (JSON
// "signal_frames").
#ifndef SIGVISOR_VMM_RUN_SIGNAL_FRAME_COUNTS_H_
#define SIGVISOR_VMM_RUN_SIGNAL_FRAME_COUNTS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sigvisor {

struct SignalFrameCounts {
  uint64_t frames_written = 0;       // frames the VMM wrote
  uint64_t sigreturns_restored = 0;  // rt_sigreturns the VMM restored
  // Calls the VMM left to the kernel, by reason ("an action without SA_RESTORER").
  std::map<std::string, uint64_t> declined;
  // --check-signal-frames: comparisons made, and what differed (the first few).
  bool checking = false;
  uint64_t frames_compared = 0;
  uint64_t sigreturns_compared = 0;
  std::vector<std::string> mismatches;
  uint64_t mismatches_dropped = 0;  // past kMaxMismatches
  static constexpr size_t kMaxMismatches = 8;

  // Whether the guest made any such call (or the run checked): otherwise the
  // reports leave the block out.
  bool any() const {
    return checking || frames_written || sigreturns_restored || !declined.empty();
  }
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_SIGNAL_FRAME_COUNTS_H_
