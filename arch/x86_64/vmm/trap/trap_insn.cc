#include "arch/x86_64/vmm/trap/trap_insn.h"

namespace sigvisor::trap {

std::string_view TrapKindName(TrapKind kind) {
  switch (kind) {
    case TrapKind::kDrWrite: return "dr_write";
    case TrapKind::kDrRead: return "dr_read";
    case TrapKind::kSegmentLoad: return "segment_load";
    case TrapKind::kMsrWrite: return "msr_write";
  }
  return "?";
}

std::string_view SiteClassName(TrapOp op) {
  switch (op) {
    case TrapOp::kMovToDr: return "dr_write";
    case TrapOp::kMovFromDr: return "dr_read";
    case TrapOp::kWrmsr: return "wrmsr";
    default: return "segment_load";
  }
}

TrapKind TrapInsn::Kind(uint32_t ecx) const {
  switch (op) {
    case TrapOp::kMovToDr: return TrapKind::kDrWrite;
    case TrapOp::kMovFromDr: return TrapKind::kDrRead;
    case TrapOp::kWrmsr: return IsSegmentBaseMsr(ecx) ? TrapKind::kSegmentLoad : TrapKind::kMsrWrite;
    default: return TrapKind::kSegmentLoad;
  }
}

}  // namespace sigvisor::trap
