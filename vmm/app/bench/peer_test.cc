// The peer bench's parsing: --peer lists and the guest's timing lines.
#include "vmm/app/bench/peer.h"

#include "gtest/gtest.h"

namespace sigvisor::bench {
namespace {

TEST(PeerTest, ParsesPeerLists) {
  absl::StatusOr<std::vector<PeerKind>> both = ParsePeerList("qemu-kvm, qemu-tcg");
  ASSERT_TRUE(both.ok()) << both.status();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0].accel, "kvm");
  EXPECT_EQ((*both)[1].accel, "tcg");
  EXPECT_EQ((*both)[1].binary, "qemu-system-x86_64");
  EXPECT_FALSE(ParsePeerList("qemu-kvm,qemu-kvm").ok());
  EXPECT_FALSE(ParsePeerList("bochs").ok());
  EXPECT_FALSE(ParsePeerList(",").ok());
}

TEST(PeerTest, ParsesTheGuestsTimingLines) {
  const std::string console =
      "sigvisor kernel: booting\n"
      "divzero: 100 signal, 1529728 tsc cycles per signal\n"
      "lat_sig sig_inst: 7 install, 332813 tsc cycles per install\n"
      "lat_sig sig_hndl: 7 signal, 1478 tsc cycles per signal\n"
      "sigpingpong: 3 round trip, 3898870 tsc cycles per round trip\n"
      "pipe_rw: garbage, x tsc cycles per iteration\n"
      "note: nothing to see\n";
  std::map<std::string, PeerPhase> lat = ParseTimingLines(console, "lat_sig");
  ASSERT_EQ(lat.count("lat_sig/sig_inst"), 1u);
  EXPECT_EQ(lat["lat_sig/sig_inst"].ops, 7u);
  EXPECT_EQ(lat["lat_sig/sig_inst"].tsc_cycles_per_op, 332813u);
  EXPECT_EQ(lat["lat_sig/sig_hndl"].tsc_cycles_per_op, 1478u);
  std::map<std::string, PeerPhase> ping = ParseTimingLines(console, "sigpingpong");
  EXPECT_EQ(ping["sigpingpong/sigpingpong"].ops, 3u);  // a two-word unit
  EXPECT_EQ(ping["sigpingpong/sigpingpong"].tsc_cycles_per_op, 3898870u);
  // One-word names are phases of whatever workload ran; malformed lines are skipped.
  EXPECT_EQ(ping.count("sigpingpong/divzero"), 1u);
  EXPECT_EQ(ParseTimingLines(console, "pipe_rw").count("pipe_rw/pipe_rw"), 0u);
  EXPECT_EQ(ParseTimingLines("", "divzero").size(), 0u);
}

}  // namespace
}  // namespace sigvisor::bench
