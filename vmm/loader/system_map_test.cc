#include "vmm/loader/system_map.h"

#include <elf.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor {
namespace {

using ::testing::HasSubstr;

// A slice of Debian 6.1's System.map, with data, absolute and per-CPU lines.
constexpr char kMap[] =
    "0000000000000000 D __per_cpu_start\n"
    "00000000000001ea A kexec_control_code_size\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81a445f0 T exc_divide_error\n"
    "ffffffff81a44660 t do_error_trap\n"
    "ffffffff81a44700 W arch_cpu_idle\n"
    "ffffffff81a44720 d some_data\n"
    "ffffffff81c00080 T entry_SYSCALL_64\n";

TEST(SystemMapTest, KeepsTextSymbolsSizedToTheNextAddress) {
  absl::StatusOr<SymbolTable> table = ParseSystemMap(kMap);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 6u);  // _stext, _text, exc_divide_error, do_error_trap, arch_cpu_idle, entry
  EXPECT_EQ(table->Symbolize(0xffffffff81a445f0), "exc_divide_error");
  EXPECT_EQ(table->Symbolize(0xffffffff81a4465f), "exc_divide_error+0x6f");
  EXPECT_EQ(table->Symbolize(0xffffffff81a44660), "do_error_trap");
  // arch_cpu_idle ends where the data symbol starts; past that is a miss.
  EXPECT_EQ(table->Symbolize(0xffffffff81a4471f), "arch_cpu_idle+0x1f");
  EXPECT_EQ(table->Symbolize(0xffffffff81a44720), "0xffffffff81a44720");
  // The last symbol has no next address: a label.
  EXPECT_EQ(table->Symbolize(0xffffffff81c00090), "entry_SYSCALL_64+0x10");
  EXPECT_EQ(table->Lookup(0xffffffff81c00080)->size, 0u);
  EXPECT_FALSE(table->Find("some_data").has_value());
  EXPECT_FALSE(table->Find("kexec_control_code_size").has_value());
}

TEST(SystemMapTest, TypeLetterGivesTheBinding) {
  absl::StatusOr<SymbolTable> table = ParseSystemMap(kMap);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Find("exc_divide_error")->binding, STB_GLOBAL);
  EXPECT_EQ(table->Find("do_error_trap")->binding, STB_LOCAL);
  EXPECT_EQ(table->Find("arch_cpu_idle")->binding, STB_WEAK);
  EXPECT_EQ(table->Find("exc_divide_error")->type, STT_FUNC);
}

TEST(SystemMapTest, AliasesShareTheirAddress) {
  absl::StatusOr<SymbolTable> table = ParseSystemMap(kMap);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Find("_stext")->size, 0xa445f0u);
  EXPECT_EQ(table->Find("_text")->size, 0xa445f0u);
}

TEST(SystemMapTest, ToleratesBlankLinesAndCrLf) {
  absl::StatusOr<SymbolTable> table =
      ParseSystemMap("\nffffffff81000000 T a\r\n\nffffffff81000010 t b\r\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Symbolize(0xffffffff81000008), "a+0x8");
}

TEST(SystemMapTest, RejectsMalformedLinesNamingTheLine) {
  for (const char* bad : {"ffffffff81000000 T\n", "xyz T name\n", "0xffffffff81000000 T name\n",
                          "ffffffff81000000 TT name\n", "ffffffff81000000 1 name\n",
                          "ffffffff81000000 T name extra\n", "\x7f" "ELF\x02\x01\x01\n"}) {
    absl::StatusOr<SymbolTable> table = ParseSystemMap(std::string("ffffffff80000000 T ok\n") + bad);
    ASSERT_FALSE(table.ok()) << bad;
    EXPECT_THAT(table.status().message(), HasSubstr("line 2 is not 'ADDRESS TYPE NAME'")) << bad;
  }
}

TEST(SystemMapTest, RejectsAMapWithoutCode) {
  // Debian's linux-image package ships this placeholder.
  absl::StatusOr<SymbolTable> table = ParseSystemMap(
      "ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n");
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("Debian's placeholder"));
  absl::StatusOr<SymbolTable> placeholder =
      ParseSystemMap("ffffffffffffffff B The_real_map_is_elsewhere\n");
  ASSERT_FALSE(placeholder.ok());
  EXPECT_THAT(placeholder.status().message(), HasSubstr("names no code"));
  EXPECT_FALSE(ParseSystemMap("").ok());
}

TEST(SystemMapTest, ReadNamesTheFile) {
  absl::StatusOr<SymbolTable> missing = ReadSystemMap("/nonexistent/System.map");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/System.map"));

  const std::string path = ::testing::TempDir() + "/System.map";
  { std::ofstream(path) << kMap; }
  absl::StatusOr<SymbolTable> table = ReadSystemMap(path);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->Symbolize(0xffffffff81a44661), "do_error_trap+0x1");
  { std::ofstream(path) << "not a map\n"; }
  absl::StatusOr<SymbolTable> bad = ReadSystemMap(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("is not a usable System.map: line 1"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sigvisor
