#include "vmm/loader/symbol_table.h"

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor {
namespace {

using ::testing::HasSubstr;

Symbol Func(std::string name, uint64_t addr, uint64_t size, uint8_t binding = STB_GLOBAL) {
  return {.name = std::move(name), .addr = addr, .size = size, .type = STT_FUNC, .binding = binding};
}
Symbol Label(std::string name, uint64_t addr) {
  return {.name = std::move(name), .addr = addr, .size = 0, .type = STT_NOTYPE};
}
Symbol Object(std::string name, uint64_t addr, uint64_t size) {
  return {.name = std::move(name), .addr = addr, .size = size, .type = STT_OBJECT};
}

TEST(SymbolTableTest, EmptyTableMissesEverything) {
  SymbolTable table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.Lookup(0x1000), nullptr);
  EXPECT_EQ(table.Symbolize(0x1000), "0x1000");
  EXPECT_EQ(table.Symbolize(0), "0x0");
  EXPECT_FALSE(table.Find("kernel_main").has_value());
}

TEST(SymbolTableTest, SymbolizesSizedSymbolsWithOffsets) {
  SymbolTable table = SymbolTable::FromSymbols(
      {Func("kernel_main", 0x100000, 0x40), Object("boot_info", 0x200000, 0x20)});
  EXPECT_EQ(table.Symbolize(0x100000), "kernel_main");
  EXPECT_EQ(table.Symbolize(0x10001c), "kernel_main+0x1c");
  EXPECT_EQ(table.Symbolize(0x10003f), "kernel_main+0x3f");
  EXPECT_EQ(table.Symbolize(0x200010), "boot_info+0x10");
}

TEST(SymbolTableTest, MissesOutsideSymbols) {
  SymbolTable table = SymbolTable::FromSymbols({Func("kernel_main", 0x100000, 0x40)});
  EXPECT_EQ(table.Symbolize(0xfffff), "0xfffff");     // before the first symbol
  EXPECT_EQ(table.Symbolize(0x100040), "0x100040");   // one past its end
  EXPECT_EQ(table.Symbolize(~uint64_t{0}), "0xffffffffffffffff");
  EXPECT_EQ(table.Lookup(0x100040), nullptr);
}

TEST(SymbolTableTest, SizeZeroLabelsReachFourKiB) {
  SymbolTable table = SymbolTable::FromSymbols({Label("isr_common", 0x1000)});
  EXPECT_EQ(table.Symbolize(0x1000), "isr_common");
  EXPECT_EQ(table.Symbolize(0x1008), "isr_common+0x8");
  EXPECT_EQ(table.Symbolize(0x1fff), "isr_common+0xfff");
  EXPECT_EQ(table.Symbolize(0x2000), "0x2000");  // 4 KiB past: too far to be its code
}

TEST(SymbolTableTest, InnermostContainingSymbolWins) {
  SymbolTable table = SymbolTable::FromSymbols(
      {Object("big_table", 0x1000, 0x1000), Func("inner", 0x1100, 0x10)});
  EXPECT_EQ(table.Symbolize(0x1104), "inner+0x4");
  // Past `inner` but still in `big_table`: the outer one is found again.
  EXPECT_EQ(table.Symbolize(0x1200), "big_table+0x200");
}

TEST(SymbolTableTest, SizedSymbolBeatsLabelInsideIt) {
  SymbolTable table =
      SymbolTable::FromSymbols({Func("entry64", 0x1000, 0x80), Label("entry64_done", 0x1040)});
  EXPECT_EQ(table.Symbolize(0x1050), "entry64+0x50");
}

TEST(SymbolTableTest, LabelAfterSizedSymbolCoversTheGap) {
  SymbolTable table =
      SymbolTable::FromSymbols({Func("f", 0x1000, 0x10), Label("trampoline", 0x1020)});
  EXPECT_EQ(table.Symbolize(0x1018), "0x1018");  // after f, before the label
  EXPECT_EQ(table.Symbolize(0x1024), "trampoline+0x4");
}

TEST(SymbolTableTest, SizedSymbolHidesEarlierLabel) {
  SymbolTable table =
      SymbolTable::FromSymbols({Label("start", 0x1000), Func("f", 0x1100, 0x10)});
  EXPECT_EQ(table.Symbolize(0x1080), "start+0x80");
  // Past the end of f: not blamed on `start`, which f separates it from.
  EXPECT_EQ(table.Symbolize(0x1120), "0x1120");
}

TEST(SymbolTableTest, AliasesResolveByPreference) {
  SymbolTable table = SymbolTable::FromSymbols({
      Func("memcpy_local", 0x1000, 0x20, STB_LOCAL),
      Func("memcpy", 0x1000, 0x20, STB_GLOBAL),
      Func("memcpy_weak", 0x1000, 0x20, STB_WEAK),
      Label("memcpy_label", 0x1000),
      Object("not_code", 0x1000, 0x20),
  });
  EXPECT_EQ(table.Symbolize(0x1004), "memcpy+0x4");
  EXPECT_EQ(table.Symbolize(0x1000), "memcpy");
}

TEST(SymbolTableTest, SymbolReachingTheTopOfMemoryDoesNotWrap) {
  SymbolTable table =
      SymbolTable::FromSymbols({Func("top", ~uint64_t{0} - 0xf, 0x100), Func("low", 0x10, 4)});
  EXPECT_EQ(table.Symbolize(~uint64_t{0}), "top+0xf");
  EXPECT_EQ(table.Symbolize(0x20), "0x20");
}

TEST(SymbolTableTest, FindByName) {
  SymbolTable table = SymbolTable::FromSymbols({
      Func("helper", 0x1000, 0x10, STB_LOCAL),
      Func("helper", 0x3000, 0x10, STB_GLOBAL),
      Func("kernel_main", 0x2000, 0x40),
  });
  std::optional<Symbol> main = table.Find("kernel_main");
  ASSERT_TRUE(main.has_value());
  EXPECT_EQ(main->addr, 0x2000u);
  EXPECT_EQ(main->size, 0x40u);
  EXPECT_EQ(main->type, STT_FUNC);
  std::optional<Symbol> helper = table.Find("helper");
  ASSERT_TRUE(helper.has_value());
  EXPECT_EQ(helper->addr, 0x3000u);  // the global one
  EXPECT_FALSE(table.Find("kernel").has_value());
  EXPECT_FALSE(table.Find("").has_value());
}

TEST(SymbolTableTest, LookupReturnsTheSymbol) {
  SymbolTable table = SymbolTable::FromSymbols({Func("a", 0x10, 0x10), Func("b", 0x20, 0x10)});
  const Symbol* s = table.Lookup(0x2f);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "b");
  EXPECT_EQ(table.symbols().size(), 2u);
  EXPECT_EQ(table.symbols()[0].name, "a");  // sorted by address
}

// ---- FromElf: raw SHT_SYMTAB bytes ------------------------------------------------

struct RawSymtab {
  std::vector<uint8_t> symtab;
  std::vector<uint8_t> strtab{0};

  void Add(std::string_view name, uint64_t value, uint64_t size, uint8_t type, uint8_t bind,
           uint16_t shndx) {
    Elf64_Sym sym{.st_name = static_cast<Elf64_Word>(name.empty() ? 0 : strtab.size()),
                  .st_info = static_cast<unsigned char>(ELF64_ST_INFO(bind, type)),
                  .st_shndx = shndx,
                  .st_value = value,
                  .st_size = size};
    if (!name.empty()) {
      strtab.insert(strtab.end(), name.begin(), name.end());
      strtab.push_back(0);
    }
    const auto* p = reinterpret_cast<const uint8_t*>(&sym);
    symtab.insert(symtab.end(), p, p + sizeof(sym));
  }
};

RawSymtab TypicalSymtab() {
  RawSymtab raw;
  raw.Add("", 0, 0, STT_NOTYPE, STB_LOCAL, SHN_UNDEF);                 // [0] null
  raw.Add("main.c", 0, 0, STT_FILE, STB_LOCAL, SHN_ABS);               // dropped
  raw.Add("", 0x100000, 0, STT_SECTION, STB_LOCAL, 1);                 // dropped
  raw.Add("PAGE_SIZE", 0x1000, 0, STT_NOTYPE, STB_LOCAL, SHN_ABS);     // constant: dropped
  raw.Add("isr_stub", 0x100100, 0, STT_NOTYPE, STB_LOCAL, 1);          // asm label: kept
  raw.Add("kernel_main", 0x100000, 0x40, STT_FUNC, STB_GLOBAL, 1);     // kept
  raw.Add("boot_info", 0x200000, 0x20, STT_OBJECT, STB_GLOBAL, 2);     // kept
  raw.Add("printf", 0, 0, STT_FUNC, STB_GLOBAL, SHN_UNDEF);            // undefined: dropped
  raw.Add("tls_var", 0x10, 8, STT_TLS, STB_GLOBAL, 3);                 // dropped
  return raw;
}

TEST(SymbolTableFromElfTest, KeepsFunctionsObjectsAndLabels) {
  RawSymtab raw = TypicalSymtab();
  absl::StatusOr<SymbolTable> table = SymbolTable::FromElf(raw.symtab, raw.strtab);
  ASSERT_TRUE(table.ok()) << table.status();
  std::vector<std::string> names;
  for (const Symbol& s : table->symbols()) names.push_back(s.name);
  EXPECT_THAT(names, ::testing::ElementsAre("kernel_main", "isr_stub", "boot_info"));
  EXPECT_EQ(table->Symbolize(0x10001c), "kernel_main+0x1c");
  EXPECT_EQ(table->Symbolize(0x100108), "isr_stub+0x8");
  EXPECT_EQ(table->Symbolize(0x1000), "0x1000");  // PAGE_SIZE is not a place
}

TEST(SymbolTableFromElfTest, EmptyInputsGiveEmptyTable) {
  absl::StatusOr<SymbolTable> table = SymbolTable::FromElf({}, {});
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->empty());
}

TEST(SymbolTableFromElfTest, RejectsPartialEntry) {
  RawSymtab raw = TypicalSymtab();
  raw.symtab.pop_back();
  absl::StatusOr<SymbolTable> table = SymbolTable::FromElf(raw.symtab, raw.strtab);
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("not a whole number of 24-byte entries"));
}

TEST(SymbolTableFromElfTest, RejectsNameOutsideStringTable) {
  RawSymtab raw = TypicalSymtab();
  // Symbol 5 (kernel_main): point its name past the string table.
  Elf64_Word bad = static_cast<Elf64_Word>(raw.strtab.size() + 100);
  std::memcpy(raw.symtab.data() + 5 * sizeof(Elf64_Sym), &bad, sizeof(bad));
  absl::StatusOr<SymbolTable> table = SymbolTable::FromElf(raw.symtab, raw.strtab);
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("symbol 5 name"));
  EXPECT_THAT(table.status().message(), HasSubstr("outside its string table"));
}

TEST(SymbolTableFromElfTest, RejectsUnterminatedName) {
  RawSymtab raw = TypicalSymtab();
  raw.strtab.back() = 'x';  // the last name now runs off the end
  absl::StatusOr<SymbolTable> table = SymbolTable::FromElf(raw.symtab, raw.strtab);
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(), HasSubstr("not NUL-terminated"));
}

}  // namespace
}  // namespace sigvisor
