// The signal-frame object (arch/x86_64/guest/signal.c) of each kernel variant, as
// the build measured it: `size` (text, data, bss), gcc's -fstack-usage per function
// and each function's size. Made at build time by guest_object_stats
// (guest-kit/build/object_stats.bzl) with the kernel's own compile command, and
// built into the binary, so `sigvisor study cerr` needs no compiler.
#ifndef SIGVISOR_VMM_APP_STUDY_OBJECT_STATS_H_
#define SIGVISOR_VMM_APP_STUDY_OBJECT_STATS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sigvisor::study {

struct StackUsage {
  std::string function;
  uint64_t bytes = 0;
  std::string qualifier;  // "static", "dynamic", "dynamic,bounded"
};

struct ObjectFunction {
  std::string name;
  uint64_t bytes = 0;
};

struct ObjectStats {
  std::string variant;  // canonical variant name
  std::string file;     // "signal.o"
  uint64_t text = 0, data = 0, bss = 0;
  std::vector<StackUsage> stack;
  std::vector<ObjectFunction> functions;  // defined functions (nm t/T)

  uint64_t dec() const { return text + data + bss; }
  const StackUsage* FindStack(std::string_view function) const;
};

// The signal object of a built variant (canonical name), or nullptr.
const ObjectStats* SignalObjectStats(std::string_view variant);
const std::vector<ObjectStats>& AllSignalObjectStats();

}  // namespace sigvisor::study

#endif  // SIGVISOR_VMM_APP_STUDY_OBJECT_STATS_H_
