#include "vmm/app/launch/run_settings.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace sigvisor::launch {
namespace {

// What `stream` holds from its start.
std::string Contents(FILE* stream) {
  std::fflush(stream);
  std::rewind(stream);
  std::string text;
  for (int c; (c = std::fgetc(stream)) != EOF;) text += static_cast<char>(c);
  return text;
}

// A guest whose last console line has no newline: sigvisor's next line starts on a
// line of its own, and a guest that ended its line gets no empty one.
TEST(ConsoleEchoTest, EndLineEndsOnlyALineTheGuestLeftOpen) {
  FILE* stream = std::tmpfile();
  ASSERT_NE(stream, nullptr);
  {
    ConsoleEcho echo(stream);
    echo.EndLine();  // nothing written: nothing to end
    echo.Write("Dummy Hello World!");
    echo.EndLine();
    echo.EndLine();  // once only
    echo.Write("two\nlines\n");
    echo.Write("");
    echo.EndLine();
  }
  EXPECT_EQ(Contents(stream), "Dummy Hello World!\ntwo\nlines\n");
  std::fclose(stream);
}

TEST(MachineConfigTest, EveryMachineGetsTheSameSettings) {
  FILE* stream = std::tmpfile();
  ASSERT_NE(stream, nullptr);
  ConsoleEcho echo(stream);
  const RunSettings run{.memory_mib = 64,
                        .timeout = absl::Seconds(5),
                        .max_output_bytes = 100,
                        .gdb_sockets = true,
                        .console = &echo};
  x86::MachineConfig x86 = MachineConfigFor(
      run, {.cmdline = "workload=hello", .trap = TrapMechanism::kPatch, .check_clocks = true});
  mips::MipsMachineConfig mips = MipsMachineConfigFor(run, "workload=hello", 4);
  EXPECT_EQ(x86.memory_bytes, uint64_t{64} << 20);
  EXPECT_EQ(mips.memory_bytes, uint64_t{64} << 20);
  EXPECT_EQ(x86.cmdline, "workload=hello");
  EXPECT_EQ(x86.trap, TrapMechanism::kPatch);
  EXPECT_TRUE(x86.check_clocks);
  EXPECT_EQ(mips.cores, 4);
  for (const SessionOptions* session : {&x86.session, &mips.session}) {
    EXPECT_EQ(session->timeout, absl::Seconds(5));
    EXPECT_EQ(session->max_output_bytes, 100u);
    ASSERT_TRUE(session->sandbox.has_value());
    EXPECT_TRUE(session->sandbox->allow_gdb_sockets);
    ASSERT_TRUE(session->console_sink);
    session->console_sink("x");
  }
  EXPECT_EQ(Contents(stream), "xx");
  std::fclose(stream);

  const x86::MachineConfig bare = MachineConfigFor({.sandbox = false}, {});
  EXPECT_FALSE(bare.session.sandbox.has_value());
  EXPECT_FALSE(bare.session.console_sink);
  EXPECT_EQ(bare.memory_bytes, uint64_t{32} << 20);
}

TEST(MachineConfigTest, AnInjectorOnlyWithSpecs) {
  std::vector<InjectionRecord> records;
  x86::MachineConfig config = MachineConfigFor({}, {});
  AddFaultInjector(config, {}, 1, &records);
  EXPECT_FALSE(config.injection_events);
  EXPECT_TRUE(config.interceptors.empty());
  absl::StatusOr<InjectionSpec> spec = ParseInjectionSpec("exc=de,op=3");
  ASSERT_TRUE(spec.ok()) << spec.status();
  AddFaultInjector(config, {*spec}, 1, &records);
  EXPECT_TRUE(config.injection_events);
  EXPECT_EQ(config.interceptors.size(), 1u);
}

}  // namespace
}  // namespace sigvisor::launch
