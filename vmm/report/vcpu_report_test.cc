// A phase on several vCPUs in the run's text and JSON reports: a column and an entry
// per vCPU, from fake counters (no KVM).
// The reports first: <signal.h>, which gtest includes, defines si_addr as a macro,
// the name of an InjectionRecord field (so not in .clang-format's order).
// clang-format off
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"
// clang-format on

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "vmm/report/testing/json_schema.h"

namespace sigvisor {
namespace {

// A hardware-KVM run of 10 cross-CPU round trips on 2 vCPUs: each op, vCPU 0 sends
// one IPI and receives one, as does vCPU 1; vCPU 1 halted after 8 of its 10.
RunRecord TwoVcpuRun() {
  RunRecord record;
  record.image = "kernel smp=on (embedded)";
  record.host = {"hardware", false};
  record.result.outcome = Outcome::kExited;
  record.result.exit_code = 0;
  PhaseResult phase;
  phase.name = "xcpu_wake";
  phase.ops = 10;
  phase.kvm_stats = {
      {"exits", 40}, {"irq_injections", 10}, {"halt_exits", 10}, {"halt_wakeup", 10}};
  phase.other_vcpus.push_back(
      VcpuSample{1, {{"io", 2}}, {{"exits", 30}, {"irq_injections", 10}, {"halt_exits", 8}}});
  phase.exits_total = 0;
  phase.guest_ipis = {{.sent = 10, .received = 10}, {.sent = 10, .received = 10}};
  LatencyHistogram io;  // vCPU 0's exits between the markers: the BEGIN marker's
  io.count = 1;
  io.sum_ns = 9000;
  io.buckets[LatencyBucket(9000)] = 1;
  phase.exit_latency["io"] = io;
  record.result.phases.push_back(phase);
  record.ipi = "pv";
  record.ipis_delivered_by_vmm = 20;
  VcpuRun ap{.vcpu = 1, .kvm_stats = {{"exits", 31}}, .ipis_delivered_by_vmm = 10};
  ap.ledger.Record(ExitKey{.kind = ExitKind::kIo,
                           .detail = ExitKey::Detail::kAccess,
                           .is_write = true,
                           .value = 0x50d},
                   40'000);
  ap.ledger.NameAccesses([](const ExitKey&) { return std::string("hypercall send_ipi"); });
  record.result.other_vcpus.push_back(std::move(ap));
  return record;
}

nlohmann::json Json(const RunRecord& record) {
  nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(record).dump());
  // The CLI adds the binary's name (vmm/app/cli); the report alone has none.
  doc["sigvisor"] = {{"version", "1.0.0"}, {"commit", "unknown"}, {"tree_modified", nullptr}};
  return doc;
}

TEST(VcpuReportTest, JsonHasAnEntryPerVcpuWithItsPerOpFigures) {
  const nlohmann::json phase = Json(TwoVcpuRun())["phases"][0];
  ASSERT_EQ(phase["vcpus"].size(), 2u);
  const nlohmann::json& bsp = phase["vcpus"][0];
  EXPECT_EQ(bsp["vcpu"], 0);
  EXPECT_EQ(bsp["per_op"]["interrupts"], 1.0);
  EXPECT_EQ(bsp["per_op"]["halts"], 1.0);
  EXPECT_EQ(bsp["per_op"]["kvm_exits"], 4.0);
  EXPECT_EQ(bsp["exits"]["total"], 0);
  const nlohmann::json& ap = phase["vcpus"][1];
  EXPECT_EQ(ap["vcpu"], 1);
  EXPECT_EQ(ap["exits"]["total"], 2);
  EXPECT_EQ(ap["exits"]["by_reason"]["io"], 2);
  EXPECT_EQ(ap["per_op"]["exits"], 0.2);
  EXPECT_EQ(ap["per_op"]["interrupts"], 1.0);
  EXPECT_EQ(ap["per_op"]["halts"], 0.8);
  EXPECT_TRUE(ap["per_op"]["halt_wakeups"].is_null());  // KVM did not say
  // The kernel's own IPI count, beside KVM's injections.
  EXPECT_EQ(ap["guest_ipis"]["sent"], 10);
  EXPECT_EQ(ap["guest_ipis"]["received"], 10);
  EXPECT_EQ(ap["per_op"]["ipis_sent"], 1.0);
  EXPECT_EQ(bsp["per_op"]["ipis_received"], 1.0);
}

// A guest that does not count its IPIs (Multiboot, Linux) has no such figures.
TEST(VcpuReportTest, AGuestWithoutItsOwnIpiCountHasNone) {
  RunRecord record = TwoVcpuRun();
  record.result.phases[0].guest_ipis.clear();
  const nlohmann::json ap = Json(record)["phases"][0]["vcpus"][1];
  EXPECT_FALSE(ap.contains("guest_ipis"));
  EXPECT_FALSE(ap["per_op"].contains("ipis_sent"));
  EXPECT_EQ(FormatRunReport(record).find("guest's count"), std::string::npos);
}

TEST(VcpuReportTest, ExitLatencyIsAHistogramInBoth) {
  const RunRecord record = TwoVcpuRun();
  const nlohmann::json io = Json(record)["phases"][0]["exit_latency"]["io"];
  EXPECT_EQ(io["count"], 1);
  EXPECT_EQ(io["mean_ns"], 9000);
  ASSERT_EQ(io["buckets"].size(), 1u);
  EXPECT_EQ(io["buckets"][0]["low_ns"], 8192);
  EXPECT_EQ(io["buckets"][0]["high_ns"], 16384);
  EXPECT_EQ(io["buckets"][0]["count"], 1);
  const std::string text = FormatRunReport(record);
  EXPECT_NE(text.find("    io                                1       9.0  8.2us-16.4us:1\n"),
            std::string::npos)
      << text;
}

TEST(VcpuReportTest, TheRunHasEachOtherVcpusExitsInBoth) {
  const RunRecord record = TwoVcpuRun();
  const nlohmann::json doc = Json(record);
  EXPECT_EQ(doc["ipi"], "pv");
  EXPECT_EQ(doc["ipis_delivered_by_vmm"], 20);
  ASSERT_EQ(doc["other_vcpus"].size(), 1u);
  const nlohmann::json& ap = doc["other_vcpus"][0];
  EXPECT_EQ(ap["vcpu"], 1);
  EXPECT_EQ(ap["exits"]["total"], 1);
  EXPECT_EQ(ap["exits"]["by_detail"][0]["detail"], "port 0x50d out (hypercall send_ipi)");
  EXPECT_EQ(ap["ipis_delivered_by_vmm"], 10);
  const std::string text = FormatRunReport(record);
  EXPECT_NE(text.find("  vCPUs: 2, IPIs by pv (20 delivered by the VMM)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nvCPU 1 exits            count      mean us       max us\n"),
            std::string::npos)
      << text;
}

TEST(VcpuReportTest, OneVcpuHasNoEntries) {
  RunRecord record = TwoVcpuRun();
  record.result.phases[0].other_vcpus.clear();
  record.result.other_vcpus.clear();
  EXPECT_FALSE(Json(record)["phases"][0].contains("vcpus"));
  EXPECT_FALSE(Json(record).contains("other_vcpus"));
  EXPECT_EQ(FormatRunReport(record).find("by vCPU"), std::string::npos);
}

TEST(VcpuReportTest, JsonIsValidAgainstTheRunSchema) {
  std::ifstream file("docs/schema/sigvisor.run-2.schema.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json schema = nlohmann::json::parse(file);
  for (const std::string& error : testing::ValidateJson(Json(TwoVcpuRun()), schema)) {
    ADD_FAILURE() << error;
  }
  nlohmann::json bad = Json(TwoVcpuRun());  // not vacuous: a vCPU without its number
  bad["phases"][0]["vcpus"][1].erase("vcpu");
  EXPECT_FALSE(testing::ValidateJson(bad, schema).empty());
}

TEST(VcpuReportTest, TextHasAColumnPerVcpu) {
  const std::string text = FormatRunReport(TwoVcpuRun());
  for (const char* line : {
           "  per op, by vCPU                    vcpu0     vcpu1\n",
           "    exits                             0.00      0.20\n",
           "    kvm_exits                         4.00      3.00\n",
           "    interrupts (irq_injections)       1.00      1.00\n",
           "    halts (halt_exits)                1.00      0.80\n",
           "    halt_wakeup                       1.00         -\n",  // KVM did not say
           "    IPIs sent, guest's count          1.00      1.00\n",
           "    IPIs received, guest's count      1.00      1.00\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

}  // namespace
}  // namespace sigvisor
