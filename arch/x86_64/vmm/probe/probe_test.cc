#include "arch/x86_64/vmm/probe/probe.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "arch/x86_64/vmm/probe/probe_format.h"
#include "gtest/gtest.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor {
namespace {

// Facts, not times: the host is noisy (docs/host-notes.md), so nothing
// here asserts a latency.
class ProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
    if (!kvm.ok()) GTEST_SKIP() << "the probe needs /dev/kvm: " << kvm.status().message();
    kvm_.emplace(std::move(*kvm));
  }

  static const MechanismResult* Find(const ProbeReport& report, const std::string& name) {
    for (const MechanismResult& m : report.mechanisms) {
      if (m.name == name) return &m;
    }
    return nullptr;
  }

  std::optional<KvmSystem> kvm_;
};

TEST_F(ProbeTest, DetectHostAgreesWithItself) {
  absl::StatusOr<HostInfo> host = DetectHost(*kvm_);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->kind, host->cpl0_emulated ? "pvm" : "hardware");
  EXPECT_NE(host->note.find("kvm_pvm"), std::string::npos) << host->note;
}

TEST_F(ProbeTest, FactsHoldForThisKindOfHost) {
  absl::StatusOr<HostInfo> host = DetectHost(*kvm_);
  ASSERT_TRUE(host.ok()) << host.status();
  ProbeOptions options;
  options.iterations = 20;
  options.repeats = 2;
  absl::StatusOr<ProbeReport> report = RunProbe(*kvm_, options);
  ASSERT_TRUE(report.ok()) << report.status();
  SCOPED_TRACE(FormatProbeTable(*report));

  // DetectHost goes by the KVM vendor module (kvm_vendor.h); the probe measures. Here,
  // on both lanes, the two must agree, or DetectHost's fact is wrong.
  EXPECT_EQ(report->host_kind, host->kind) << host->note;
  for (const std::string& note : report->notes) {
    EXPECT_EQ(note.find("KVM vendor module"), std::string::npos) << note;
  }
  EXPECT_EQ(report->cpl0_emulated, report->host_kind == "pvm");
  ASSERT_EQ(report->mechanisms.size(), 6u);
  const char* names[] = {"io_exit",    "hlt_cpl0",           "int3_cpl0",
                         "vmm_dr7_gd", "guest_gd_self_trap", "guest_gd_self_trap_pv"};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(report->mechanisms[i].name, names[i]);
  for (const MechanismResult& m : report->mechanisms) {
    EXPECT_EQ(m.works, !std::isnan(m.round_trip_ns)) << m.name;
    EXPECT_FALSE(m.note.empty()) << m.name;
  }

  // Port I/O and hlt at CPL0 exit to the VMM on every KVM.
  EXPECT_TRUE(Find(*report, "io_exit")->works);
  EXPECT_TRUE(Find(*report, "hlt_cpl0")->works);
  // int3 at CPL0 completes a round trip either way: an emulation failure the VMM
  // skips (PVM) or the guest's own #BP (hardware).
  EXPECT_TRUE(Find(*report, "int3_cpl0")->works);

  if (report->host_kind == "pvm") {
    // docs/host-notes.md, "The execution model": every CPL0 instruction is emulated and counted.
    EXPECT_TRUE(report->cpl0_emulated);
    EXPECT_GE(report->insn_emulation_per_cpl0_insn, 0.9);
    EXPECT_LE(report->insn_emulation_per_cpl0_insn, 1.1);
    // SYSCALL does not raise privilege; INT n from CPL3 is #UD even through a DPL3 gate.
    EXPECT_FALSE(report->syscall_enters_cpl0);
    EXPECT_FALSE(report->int_n_from_cpl3);
    EXPECT_EQ(report->int_n_from_cpl3_vector, 6);
    // The guest's own DR7.GD traps at CPL0.
    EXPECT_TRUE(Find(*report, "guest_gd_self_trap")->works);
  } else {
    // Hardware VMX/SVM: CPL0 runs natively and the architecture holds.
    EXPECT_EQ(report->host_kind, "hardware");
    EXPECT_FALSE(report->cpl0_emulated);
    EXPECT_TRUE(report->syscall_enters_cpl0);
    EXPECT_TRUE(report->int_n_from_cpl3);
    EXPECT_EQ(report->int_n_from_cpl3_vector, 0x80);
  }
}

TEST_F(ProbeTest, RejectsOptionsThatCannotMeasure) {
  ProbeOptions options;
  options.iterations = 0;
  EXPECT_EQ(RunProbe(*kvm_, options).status().code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.repeats = 0;
  EXPECT_EQ(RunProbe(*kvm_, options).status().code(), absl::StatusCode::kInvalidArgument);
}

// A run that cannot finish in time ends by the watchdog; without its baseline the
// probe has nothing to measure against, so that is an error, not a hang. The
// baseline's 2^31 - 1 iterations take most of a second even on hardware (hours on
// PVM), far past the 20 ms allowed.
TEST_F(ProbeTest, BaselineThatRunsOutOfTimeIsAnError) {
  ProbeOptions options;
  options.iterations = std::numeric_limits<int>::max();
  options.run_timeout = absl::Milliseconds(20);
  absl::StatusOr<ProbeReport> report = RunProbe(*kvm_, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("watchdog"), std::string::npos) << report.status();
}

// The formatters need no KVM.
ProbeReport SampleReport() {
  ProbeReport report;
  report.host_kind = "pvm";
  report.cpl0_emulated = true;
  report.insn_emulation_per_cpl0_insn = 1.0;
  report.int_n_from_cpl3_vector = 6;
  report.vm_create_ns = 700000;
  report.iterations = 200;
  report.repeats = 3;
  report.mechanisms = {
      {"io_exit", true, 9500.0, "KVM_EXIT_IO per out"},
      {"vmm_dr7_gd", false, std::numeric_limits<double>::quiet_NaN(), "no exit"},
  };
  return report;
}

TEST(ProbeFormatTest, JsonHasStableNamesAndNullForUnknown) {
  const nlohmann::ordered_json json = ProbeReportToJson(SampleReport());
  EXPECT_EQ(json["schema"], "sigvisor.probe/1");
  EXPECT_EQ(json["host_kind"], "pvm");
  EXPECT_EQ(json["cpl0_emulated"], true);
  EXPECT_EQ(json["insn_emulation_per_cpl0_insn"], 1.0);
  EXPECT_EQ(json["syscall_enters_cpl0"], false);
  EXPECT_EQ(json["int_n_from_cpl3"], false);
  EXPECT_EQ(json["int_n_from_cpl3_vector"], 6);
  EXPECT_EQ(json["vm_create_ns"], 700000.0);
  ASSERT_EQ(json["mechanisms"].size(), 2u);
  EXPECT_EQ(json["mechanisms"][0]["name"], "io_exit");
  EXPECT_EQ(json["mechanisms"][0]["works"], true);
  EXPECT_EQ(json["mechanisms"][0]["round_trip_ns"], 9500.0);
  EXPECT_TRUE(json["mechanisms"][1]["round_trip_ns"].is_null());
}

// Schema first, the facts in the table's order, mechanisms, then the prose.
TEST(ProbeFormatTest, JsonKeysKeepTheirOrder) {
  const nlohmann::ordered_json json = ProbeReportToJson(SampleReport());
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  const std::vector<std::string> expected = {
      "schema",
      "host_kind", "cpl0_emulated", "insn_emulation_per_cpl0_insn", "syscall_enters_cpl0",
      "int_n_from_cpl3", "int_n_from_cpl3_vector", "vm_create_ns",
      "mechanisms", "iterations", "repeats",
      "host_note", "notes",
  };
  EXPECT_EQ(keys, expected);
}

TEST(ProbeFormatTest, TableShowsFactsAndMechanismsInMicroseconds) {
  const std::string table = FormatProbeTable(SampleReport());
  EXPECT_NE(table.find("pvm"), std::string::npos) << table;
  EXPECT_NE(table.find("io_exit"), std::string::npos) << table;
  EXPECT_NE(table.find("9.50"), std::string::npos) << table;
  EXPECT_NE(table.find("vmm_dr7_gd"), std::string::npos) << table;
  EXPECT_NE(table.find("no (vector 6 instead)"), std::string::npos) << table;
}

}  // namespace
}  // namespace sigvisor
