// `sigvisor study tramp` end to end (seed 004 on the MIPS interpreter): the document
// matches its schema, and the per-signal counts that are the seed's point are exact:
// tramp=vdso flushes no I-cache line and sends no IPI on any number of cores;
// tramp=stack flushes the trampoline's line on every core and interrupts every other
// core; with tramp=vdso every signal returns through exactly one fetch from the VMM's
// vdso page, one host page behind every core. No time is asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "vmm/report/testing/json_schema.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::Sigvisor;
using json = nlohmann::json;

json Schema() {
  std::ifstream file("docs/schema/sigvisor.study_tramp-1.schema.json");
  return json::parse(file);
}

const json* Row(const json& doc, const std::string& tramp, int cores) {
  for (const json& row : doc["rows"]) {
    if (row["tramp"] == tramp && row["cores"] == cores) return &row;
  }
  return nullptr;
}

TEST(StudyTrampTest, CountsPerSignalAreExact) {
  CommandResult r = Sigvisor("study tramp --ops 40 --repetitions 2 --cores 3 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = json::parse(r.out);
  for (const std::string& error : sigvisor::testing::ValidateJson(doc, Schema())) {
    ADD_FAILURE() << error;
  }
  EXPECT_TRUE(doc["complete"]);
  ASSERT_EQ(doc["rows"].size(), 4u);
  for (int cores : {1, 3}) {
    SCOPED_TRACE(cores);
    const json* stack = Row(doc, "stack", cores);
    const json* vdso = Row(doc, "vdso", cores);
    ASSERT_NE(stack, nullptr);
    ASSERT_NE(vdso, nullptr);
    EXPECT_TRUE((*stack)["counts_agree"]);
    EXPECT_TRUE((*vdso)["counts_agree"]);
    // On the stack: one 32-byte line holds the 8-byte trampoline, flushed on every
    // core; each other core gets one IPI and takes one interrupt for it.
    EXPECT_EQ((*stack)["per_signal"]["icache_lines_flushed"], cores);
    EXPECT_EQ((*stack)["per_signal"]["ipis_sent"], cores - 1);
    EXPECT_EQ((*stack)["per_signal"]["exceptions"], 2 + (cores - 1));  // kill + sigreturn
    // In the vdso: nothing to flush, nobody to interrupt.
    EXPECT_EQ((*vdso)["per_signal"]["icache_lines_flushed"], 0);
    EXPECT_EQ((*vdso)["per_signal"]["ipis_sent"], 0);
    EXPECT_EQ((*vdso)["per_signal"]["exceptions"], 2);
    // The trampoline comes from the VMM's page: one fetch (of one I-cache line) per
    // signal with tramp=vdso, none from the stack build; nothing ever writes it.
    EXPECT_EQ((*vdso)["per_signal"]["vdso_fetches"], 1);
    EXPECT_EQ((*stack)["per_signal"]["vdso_fetches"], 0);
    for (const json* row : {stack, vdso}) {
      EXPECT_EQ((*row)["per_signal"]["vdso_writes"], 0);
      EXPECT_EQ((*row)["vdso_page"]["address"], "0x1f300000");
      EXPECT_EQ((*row)["vdso_page"]["host_pages"], 1);  // one page, not a copy per core
      EXPECT_TRUE((*row)["vdso_page"]["intact"]);
    }
    EXPECT_LT((*vdso)["per_signal"]["instructions"], (*stack)["per_signal"]["instructions"]);
    // Whole numbers: the markers' own user code is netted out of the phase (it once
    // made 1701 instructions per signal 1701.225 at 40 signals).
    for (const json* row : {stack, vdso}) {
      for (const char* count : {"instructions", "modelled_cycles"}) {
        const double per_signal = (*row)["per_signal"][count].get<double>();
        EXPECT_EQ(per_signal, std::floor(per_signal)) << count;
      }
    }
    EXPECT_LT((*vdso)["per_signal"]["modelled_cycles"], (*stack)["per_signal"]["modelled_cycles"]);
  }
  // The vdso path does not depend on the number of cores at all.
  EXPECT_EQ((*Row(doc, "vdso", 1))["per_signal"]["instructions"],
            (*Row(doc, "vdso", 3))["per_signal"]["instructions"]);
}

TEST(StudyTrampTest, TextReportHasTheSeedsFigures) {
  CommandResult r = Sigvisor("study tramp --ops 20 --repetitions 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("14.5 us -> 7.9 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the seed's way"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vdso/sig"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vdso page fetches 0 -> 1 per signal"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("NOT the seed's way"), std::string::npos) << r.out;
}

TEST(StudyTrampTest, BadInputIsRefusedWithOneLine) {
  ExpectOneLineError(Sigvisor("study tramp dr7"), "on its own");
  ExpectOneLineError(Sigvisor("study tramp --cores 40"), "--cores");
  ExpectOneLineError(Sigvisor("study tramp --csv"), "no --csv");
  ExpectOneLineError(Sigvisor("study tramp --ops 0"), "ops");
}

}  // namespace
