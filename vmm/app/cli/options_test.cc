// The flag tables and their parser: the spellings the command line accepts, the
// defaults each command's struct carries, and what a bad flag gets.
#include "vmm/app/cli/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vmm/app/cli/flag_table.h"

namespace sigvisor::cli {
namespace {

// Parses `words` into `options` through its table.
template <typename Options>
absl::Status Parse(FlagTable (*flags)(Options&), Options& options,
                   std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  return ParseFlags(flags(options), argv, options);
}

TEST(FlagTableTest, EverySpellingOfAFlag) {
  RunOptions run;
  ASSERT_TRUE(Parse(RunFlags, run,
                    {"--workload=divzero", "--ops", "4", "--max-output", "100", "--no_sandbox",
                     "-json", "--module", "a,b", "--module=c", "--inject", "sig=usr1,op=2",
                     "--quiet=false", "--noirqchip", "--vcpus", "-3"})
                  .ok());
  EXPECT_EQ(run.workload, "divzero");
  EXPECT_EQ(run.ops, "4");
  EXPECT_EQ(run.max_output, 100u);
  EXPECT_TRUE(run.no_sandbox);
  EXPECT_TRUE(run.json);
  EXPECT_EQ(run.modules, (std::vector<std::string>{"a,b", "c"}));  // one per occurrence
  EXPECT_EQ(run.inject, (std::vector<std::string>{"sig=usr1,op=2"}));
  EXPECT_FALSE(run.quiet);
  EXPECT_FALSE(run.irqchip);
  EXPECT_EQ(run.vcpus, -3);  // a value may start with '-'; the command checks the range
  EXPECT_TRUE(run.Given("max_output"));
  EXPECT_TRUE(run.Given("irqchip"));
  EXPECT_FALSE(run.Given("timeout"));

  ImageOptions image;
  ASSERT_TRUE(Parse(ImageFlags, image, {"-o", "kernel.elf", "extra", "--", "--variant"}).ok());
  EXPECT_EQ(image.o, "kernel.elf");
  EXPECT_EQ(image.args, (std::vector<std::string>{"extra", "--variant"}));
  EXPECT_EQ(image.variant, "baseline");
}

// Mend: a bare number is seconds (Abseil refused `--timeout 20` as an illegal value).
TEST(FlagTableTest, ATimeoutIsABareNumberOfSecondsOrADuration) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, absl::Duration>>{
           {"20", absl::Seconds(20)},
           {"1.5", absl::Milliseconds(1500)},
           {"500ms", absl::Milliseconds(500)},
           {"10s", absl::Seconds(10)},
           {"2m", absl::Minutes(2)},
       }) {
    RunOptions run;
    ASSERT_TRUE(Parse(RunFlags, run, {"--timeout", text}).ok()) << text;
    EXPECT_EQ(run.timeout, want) << text;
  }
  RunOptions run;
  absl::Status soon = Parse(RunFlags, run, {"--timeout=soon"});
  EXPECT_TRUE(absl::IsInvalidArgument(soon));
  EXPECT_EQ(soon.message(),
            "--timeout 'soon': not a duration (give e.g. 20 for seconds, 500ms, 10s, 2m)");
}

TEST(FlagTableTest, WhatIsRefusedAndHow) {
  RunOptions run;
  absl::Status unknown = Parse(RunFlags, run, {"--phase-x", "1"});
  EXPECT_TRUE(absl::IsNotFound(unknown));
  EXPECT_EQ(unknown.message(), "phase_x");  // the caller says whose flag it is
  EXPECT_EQ(Parse(RunFlags, run, {"--memory", "lots"}).message(),
            "--memory 'lots': not a whole number >= 0");
  EXPECT_EQ(Parse(RunFlags, run, {"--ops"}).message(), "--ops needs a value");
  EXPECT_EQ(Parse(RunFlags, run, {"--json=maybe"}).message(),
            "--json 'maybe': give true or false");
  TraceOptions trace;
  EXPECT_TRUE(absl::IsNotFound(Parse(TraceFlags, trace, {"--cores", "2"})));
}

// Each command's defaults are its own struct's, and help shows them.
TEST(FlagTableTest, DefaultsAreTheCommandsOwn) {
  TraceOptions trace;
  EXPECT_EQ(trace.workload, "divzero");
  EXPECT_EQ(trace.ops, "1");
  RunOptions run;
  EXPECT_EQ(run.workload, "");
  const std::string trace_help = FlagHelp(TraceFlags(trace));
  EXPECT_NE(trace_help.find("(default: divzero)"), std::string::npos) << trace_help;
  const std::string run_help = FlagHelp(RunFlags(run));
  EXPECT_NE(run_help.find("\n  --timeout "), std::string::npos) << run_help;
  EXPECT_NE(run_help.find("(default: 1m)"), std::string::npos) << run_help;
  EXPECT_NE(run_help.find("\n  --max_output "), std::string::npos) << run_help;
  ImageOptions image;
  EXPECT_EQ(FlagHelp(ImageFlags(image)).find("  --o "), std::string::npos);
  EXPECT_NE(FlagHelp(ImageFlags(image)).find("  -o "), std::string::npos);
}

}  // namespace
}  // namespace sigvisor::cli
