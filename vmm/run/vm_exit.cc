#include "vmm/run/vm_exit.h"

namespace sigvisor {

std::string_view ExitKindName(ExitKind kind) {
  switch (kind) {
    case ExitKind::kIo: return "io";
    case ExitKind::kMmio: return "mmio";
    case ExitKind::kHalt: return "hlt";
    case ExitKind::kMsr:
      return "msr";
    case ExitKind::kShutdown: return "shutdown";
    case ExitKind::kInternalError: return "internal_error";
    case ExitKind::kFailEntry: return "fail_entry";
    case ExitKind::kDebug: return "debug";
    case ExitKind::kInterrupted: return "interrupted";
    case ExitKind::kSystemEvent: return "system_event";
    case ExitKind::kIrqWindowOpen: return "irq_window_open";
    case ExitKind::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace sigvisor
