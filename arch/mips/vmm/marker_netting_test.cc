// NetMarkerUserCode: what the phase's task ran in user mode beyond ops times one
// operation (measured between its first and last entry into the per-op system call)
// and beyond the calibration's markers moves to the marker overhead; anything that
// would make that inexact leaves the phase as it was, with a reason.
#include "arch/mips/vmm/marker_netting.h"

#include "gtest/gtest.h"

namespace sigvisor::mips {
namespace {

// `ops` operations of 1967 instructions (30 of them the task's in user mode) and 2
// exceptions each, counted with 11 instructions of the markers' user code beyond the
// calibration's 4, which the tracker already took away with the rest of it.
PhaseResult Phase(uint64_t ops) {
  PhaseResult phase;
  phase.name = "divzero";
  phase.ops = ops;
  phase.kvm_stats = {{"instructions", 1967 * ops + 11},
                     {"modelled_cycles", 2007 * ops + 11},
                     {"exceptions", 2 * ops}};
  phase.marker_overhead = PhaseDeltas{};
  phase.marker_overhead->kvm_stats = {{"instructions", 226}, {"exceptions", 2}};
  return phase;
}

OperationMarks Marks(uint64_t ops) {
  return {.phase = "divzero", .ops = ops, .op_syscall = 61, .entries = ops,
          .first = 7, .last = 7 + 30 * (ops - 1), .phase_user = 30 * ops + 11 + 4,
          .calibration_user = 4};
}

TEST(MarkerNettingTest, TheMarkersUserCodeMovesToTheOverhead) {
  for (uint64_t ops : {2, 10, 20, 40}) {
    PhaseResult phase = Phase(ops);
    EXPECT_EQ(NetMarkerUserCode(Marks(ops), phase), std::nullopt);
    EXPECT_EQ(phase.kvm_stats.at("instructions"), 1967 * ops);
    EXPECT_EQ(phase.kvm_stats.at("modelled_cycles"), 2007 * ops);
    EXPECT_EQ(phase.kvm_stats.at("exceptions"), 2 * ops);  // the calibration's business
    EXPECT_EQ(phase.marker_overhead->kvm_stats.at("instructions"), 226u + 11u);
    EXPECT_EQ(phase.marker_overhead->kvm_stats.at("modelled_cycles"), 11u);
    EXPECT_EQ(phase.marker_overhead->kvm_stats.at("exceptions"), 2u);
  }
}

// On several cores the task's core and the totals lose the markers' code; the other
// cores ran none of it.
TEST(MarkerNettingTest, OnSeveralCoresOnlyTheTasksCoreRanTheMarkers) {
  PhaseResult phase = Phase(10);
  phase.kvm_stats["instructions"] += 121 * 10;
  phase.kvm_stats["core1.instructions"] = 121 * 10;
  phase.kvm_stats["core2.instructions"] = 1967 * 10 + 11;
  OperationMarks marks = Marks(10);
  marks.core = 2;
  marks.cores = 3;
  EXPECT_EQ(NetMarkerUserCode(marks, phase), std::nullopt);
  EXPECT_EQ(phase.kvm_stats.at("core2.instructions"), 1967u * 10);
  EXPECT_EQ(phase.kvm_stats.at("instructions"), (1967u + 121) * 10);
  EXPECT_EQ(phase.kvm_stats.at("core1.instructions"), 121u * 10);
  EXPECT_EQ(phase.marker_overhead->kvm_stats.at("core2.instructions"), 11u);
}

TEST(MarkerNettingTest, WhatCannotBeExactIsLeftAndSaid) {
  struct Case {
    const char* why;
    uint64_t ops;
    OperationMarks marks;
  };
  OperationMarks no_syscall = Marks(10);
  no_syscall.op_syscall.reset();
  OperationMarks no_calibration = Marks(10);
  no_calibration.calibration_user.reset();
  OperationMarks extra_entry = Marks(10);
  extra_entry.entries = 11;
  OperationMarks uneven = Marks(10);
  uneven.last += 1;
  OperationMarks moved = Marks(10);
  moved.one_core = false;
  for (const Case& c : {Case{"no per-op system call", 10, no_syscall},
                        Case{"it takes two", 1, Marks(1)},
                        Case{"no calibration phase", 10, no_calibration},
                        Case{"11 entries into system call 61 for 10 ops", 10, extra_entry},
                        Case{"not the same each time (271 instructions", 10, uneven},
                        Case{"moved between cores", 10, moved}}) {
    SCOPED_TRACE(c.why);
    PhaseResult phase = Phase(c.ops);
    const PhaseResult before = phase;
    std::optional<std::string> why = NetMarkerUserCode(c.marks, phase);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("phase 'divzero'"), std::string::npos) << *why;
    EXPECT_NE(why->find(c.why), std::string::npos) << *why;
    EXPECT_EQ(phase.kvm_stats, before.kvm_stats);
    EXPECT_EQ(phase.marker_overhead->kvm_stats, before.marker_overhead->kvm_stats);
  }
}

}  // namespace
}  // namespace sigvisor::mips
