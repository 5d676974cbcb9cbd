// The VMM's side of the pv debug-register page: what a guest counts is collected
// exactly once, by kind and site; load requests go through the DR shadow (at most one
// load, only when the effective state changes); nothing a guest writes into the page
// makes the VMM fail or miscount beyond the page's own counters.
#include "arch/x86_64/vmm/trap/pv_page.h"

#include <gtest/gtest.h>

#include <cstddef>

#include "arch/x86_64/vmm/trap/fake_trap_cpu.h"

namespace sigvisor::trap {
namespace {

constexpr uint64_t kPageGpa = 0x8000;

class PvPageTest : public ::testing::Test {
 protected:
  PvPageTest()
      : memory_(*GuestMemory::Create(1 << 20)),
        page_(*PvPage::Create(memory_, kPageGpa, cpu_.debug)),
        shadow_(cpu_.debug) {}

  sigvisor_pv_page Guest() { return *memory_.ReadObject<sigvisor_pv_page>(kPageGpa); }
  void Put(const sigvisor_pv_page& page) { ASSERT_TRUE(memory_.WriteObject(kPageGpa, page).ok()); }

  // What the kernel's pv_set_debugreg does, without its hypercall.
  void GuestWrite(int n, uint64_t value, uint64_t site) {
    sigvisor_pv_page p = Guest();
    p.dr[n] = value;
    ++p.dr_writes[n];
    CountSite(p, site, SIGVISOR_PV_SITE_DR_WRITE);
    Put(p);
  }
  static void CountSite(sigvisor_pv_page& p, uint64_t site, uint32_t kind) {
    for (sigvisor_pv_site& entry : p.sites) {
      if (entry.kind == 0) {
        entry.address = site;
        entry.kind = kind;
      }
      if (entry.address == site && entry.kind == kind) {
        ++entry.count;
        return;
      }
    }
  }
  uint64_t Load() {
    absl::StatusOr<uint64_t> loads = page_.Load(kPageGpa, shadow_, cpu_);
    EXPECT_TRUE(loads.ok()) << loads.status();
    return loads.value_or(99);
  }

  FakeTrapCpu cpu_;
  GuestMemory memory_;
  PvPage page_;
  DrShadow shadow_;
};

TEST_F(PvPageTest, CreateLaysOutThePageWithWhatTheHardwareHolds) {
  const sigvisor_pv_page p = Guest();
  EXPECT_EQ(p.magic, SIGVISOR_PV_PAGE_MAGIC);
  EXPECT_EQ(p.abi_version, SIGVISOR_ABI_VERSION);
  EXPECT_EQ(p.dr[7], kDr7Init);
  EXPECT_EQ(p.loaded[7], kDr7Init);
  EXPECT_EQ(p.dr[6], kDr6Init);
  EXPECT_EQ(p.loaded[6], kDr6Init);
  EXPECT_EQ(p.dr_writes[7], 0u);
  EXPECT_TRUE(page_.Collect().empty());
  // Not a page, or not in RAM.
  EXPECT_FALSE(PvPage::Create(memory_, 0x8010, cpu_.debug).ok());
  EXPECT_FALSE(PvPage::Create(memory_, 0, cpu_.debug).ok());
  EXPECT_FALSE(PvPage::Create(memory_, 1 << 20, cpu_.debug).ok());
}

TEST_F(PvPageTest, CollectsEachWriteOnceByKindAndSite) {
  for (int i = 0; i < 5; ++i) GuestWrite(7, 0, 0x100123);
  GuestWrite(7, 0, 0x100456);
  EXPECT_EQ(page_.Collect(), (std::vector<PvTraps>{{"dr_write", 0x100123, 5},
                                                   {"dr_write", 0x100456, 1}}));
  EXPECT_TRUE(page_.Collect().empty());  // nothing new
  GuestWrite(7, 0, 0x100456);
  sigvisor_pv_page p = Guest();
  ++p.seg_base_writes[1];
  CountSite(p, 0x100789, SIGVISOR_PV_SITE_SEGMENT_BASE);
  Put(p);
  EXPECT_EQ(page_.Collect(), (std::vector<PvTraps>{{"dr_write", 0x100456, 1},
                                                   {"segment_load", 0x100789, 1}}));
  EXPECT_EQ(cpu_.debug_sets, 0);  // counting loads nothing
}

TEST_F(PvPageTest, WritesNoSiteAccountsForAreReportedAtAddressZero) {
  sigvisor_pv_page p = Guest();
  p.dr_writes[7] = 3;  // a kernel whose sites[] was full
  p.seg_base_writes[0] = 2;
  Put(p);
  EXPECT_EQ(page_.Collect(),
            (std::vector<PvTraps>{{"dr_write", 0, 3}, {"segment_load", 0, 2}}));
}

TEST_F(PvPageTest, WhatAGuestScribblesCountsNoMoreThanItsCounters) {
  GuestWrite(7, 0, 0x100123);
  EXPECT_EQ(page_.Collect().size(), 1u);
  sigvisor_pv_page p = Guest();
  p.dr_writes[7] = 0;                 // backwards: counts nothing
  p.sites[0].count = ~0ull;           // a huge site count: capped by the counters
  p.sites[1] = {0x100999, 77, 0, 5};  // an unknown kind: skipped
  Put(p);
  EXPECT_TRUE(page_.Collect().empty());
  p.dr_writes[7] = 2;  // two more than at the last read, but no site entry moved
  Put(p);
  EXPECT_EQ(page_.Collect(), (std::vector<PvTraps>{{"dr_write", 0, 2}}));
}

TEST_F(PvPageTest, LoadsOnlyWhenTheEffectiveStateChanges) {
  GuestWrite(7, 0x300, 1);  // LE/GE only: no breakpoint enabled
  EXPECT_EQ(Load(), 0u);
  GuestWrite(0, 0x401000, 1);  // DR0 of a disabled breakpoint
  EXPECT_EQ(Load(), 0u);
  GuestWrite(7, 0x1, 1);  // L0 on
  EXPECT_EQ(Load(), 1u);
  EXPECT_EQ(cpu_.debug.dr[0], 0x401000u);
  EXPECT_EQ(cpu_.debug.dr7, 0x401u);
  EXPECT_EQ(Guest().loaded[7], 0x401u);  // the guest sees what is loaded
  EXPECT_EQ(Guest().loaded[0], 0x401000u);
  GuestWrite(7, 0x1, 1);  // again: nothing changes
  EXPECT_EQ(Load(), 0u);
  GuestWrite(0, 0x402000, 1);  // an enabled breakpoint moved
  EXPECT_EQ(Load(), 1u);
  GuestWrite(7, 0, 1);  // off
  EXPECT_EQ(Load(), 1u);
  EXPECT_EQ(shadow_.loads(), 3u);
  EXPECT_EQ(cpu_.debug_sets, 3);
}

TEST_F(PvPageTest, Dr6ClearedAfterTheHardwareSetABitIsLoaded) {
  GuestWrite(0, 0x401000, 1);
  GuestWrite(7, 0x1, 1);
  EXPECT_EQ(Load(), 1u);
  cpu_.debug.dr6 = kDr6Init | 1;  // breakpoint 0 fired: the hardware set B0
  GuestWrite(6, 0, 1);            // the guest clears DR6
  EXPECT_EQ(Load(), 1u);
  EXPECT_EQ(cpu_.debug.dr6 & 0xf, 0u);
  EXPECT_EQ(Guest().loaded[6] & 0xf, 0u);
  // A later DR7 write does not re-apply the old DR6 value over a new #DB's bits.
  cpu_.debug.dr6 = kDr6Init | 1;
  GuestWrite(7, 0, 1);
  EXPECT_EQ(Load(), 1u);
  EXPECT_EQ(shadow_.guest().dr6 & 0xf, 0u);  // the shadow did not look: no DR6 write
}

TEST_F(PvPageTest, RefusesABadArgumentAndBitsAMoveWouldFaultOn) {
  absl::StatusOr<uint64_t> wrong = page_.Load(0x9000, shadow_, cpu_);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  GuestWrite(7, 0x100000001ull, 1);
  absl::StatusOr<uint64_t> high = page_.Load(kPageGpa, shadow_, cpu_);
  ASSERT_FALSE(high.ok());
  EXPECT_EQ(high.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(high.status().message().find("DR7"), std::string::npos);
  EXPECT_EQ(cpu_.debug_sets, 0);
}

}  // namespace
}  // namespace sigvisor::trap
