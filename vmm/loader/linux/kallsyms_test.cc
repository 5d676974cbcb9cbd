// The kallsyms reader: Debian's own kernel against its System.map where the lane cache
// has them (tools/setup.sh), small tables of each layout built here, and the refusals.
#include "vmm/loader/linux/kallsyms.h"

#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vmm/loader/linux/bzimage.h"
#include "vmm/loader/linux/debian_kernel_for_test.h"
#include "vmm/loader/linux/kallsyms_for_test.h"
#include "vmm/loader/system_map.h"

namespace sigvisor::linux_boot {
namespace {

using ::sigvisor::linux_boot::testing::BuildKallsymsTables;
using ::sigvisor::linux_boot::testing::DebianKernel;
using ::sigvisor::linux_boot::testing::FindDebianKernel;
using ::sigvisor::linux_boot::testing::kNoDebianKernel;
using ::sigvisor::linux_boot::testing::KallsymsElf;
using ::sigvisor::linux_boot::testing::KallsymsSpec;
using ::sigvisor::linux_boot::testing::KallsymsTables;
using ::sigvisor::linux_boot::testing::SmallKernel;
using ::testing::HasSubstr;

using Bytes = std::vector<uint8_t>;

Bytes ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// ---------------------------------------------------------------------------------------
// Debian's kernel (debian_kernel_for_test.h), and its System.map where one is there.

struct DecodedKernel {
  std::vector<KallsymsSymbol> symbols;
  double seconds = 0;    // DecodeKallsyms alone
  size_t read_size = 0;  // ReadKallsyms's table's
};

DecodedKernel DecodeDebianKernel(const DebianKernel& kernel) {
  absl::StatusOr<BzImage> bz = ParseBzImage(ReadFile(kernel.vmlinuz));
  EXPECT_TRUE(bz.ok()) << bz.status();
  if (!bz.ok()) return {};
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<KallsymsSymbol>> symbols = DecodeKallsyms(bz->vmlinux);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(symbols.ok()) << symbols.status();
  if (!symbols.ok()) return {};
  absl::StatusOr<SymbolTable> table = ReadKallsyms(bz->vmlinux);
  EXPECT_TRUE(table.ok()) << table.status();
  return {*std::move(symbols), took.count(), table.ok() ? table->size() : 0};
}

TEST(KallsymsDebianTest, NamesLinuxsFunctions) {
  const std::optional<DebianKernel> kernel = FindDebianKernel();
  if (!kernel) GTEST_SKIP() << kNoDebianKernel;
  const DecodedKernel decoded = DecodeDebianKernel(*kernel);
  ASSERT_FALSE(decoded.symbols.empty());
  const SymbolTable table = KallsymsTextTable(decoded.symbols);
  std::cout << kernel->vmlinuz << ": " << decoded.symbols.size() << " kallsyms, " << table.size()
            << " of them text, decoded in " << decoded.seconds * 1000 << " ms\n";
  EXPECT_GT(decoded.symbols.size(), 50000u);
  EXPECT_TRUE(std::is_sorted(decoded.symbols.begin(), decoded.symbols.end(),
                             [](const auto& a, const auto& b) { return a.addr < b.addr; }));
  // What a trace of a signal goes through (docs/trace.md).
  for (const char* name : {"asm_exc_divide_error", "exc_divide_error", "force_sig_fault",
                           "arch_do_signal_or_restart", "entry_SYSCALL_64", "do_syscall_64",
                           "restore_sigcontext", "_stext"}) {
    const std::optional<Symbol> symbol = table.Find(name);
    ASSERT_TRUE(symbol.has_value()) << name;
    EXPECT_GE(symbol->addr, 0xffffffff81000000u) << name;
    EXPECT_GT(symbol->size, 0u) << name;
    EXPECT_EQ(table.Lookup(symbol->addr)->addr, symbol->addr) << name;
  }
  EXPECT_EQ(decoded.read_size, table.size());
}

// The map is `nm -n vmlinux` filtered (scripts/mksysmap); kallsyms is the same list as
// scripts/kallsyms.c filters it. Their text symbols are the same, each with the same
// reach. The other differences, all by design of scripts/kallsyms.c, are:
//  - absolute symbols (map type 'A': text_size, phys_startup_64, init_per_cpu__*, ...)
//    are dropped;
//  - its own tables (kallsyms_offsets, kallsyms_names, ...) are dropped: they change
//    size between the link passes that compute them;
//  - per-CPU symbols are typed 'A' (--absolute-percpu: their addresses are offsets into
//    the per-CPU area, not relative to the kernel's base).
TEST(KallsymsDebianTest, AgreesWithTheSystemMap) {
  const std::optional<DebianKernel> kernel = FindDebianKernel();
  if (!kernel) GTEST_SKIP() << kNoDebianKernel;
  if (kernel->system_map.empty()) {
    GTEST_SKIP() << "no real System.map beside " << kernel->vmlinuz
                 << " (it is in the kernel's -dbg package, which tools/setup.sh no longer "
                    "fetches: `apt-get download linux-image-VERSION-dbg` into the lane cache and "
                    "`dpkg-deb --fsys-tarfile linux-image-VERSION-dbg_*.deb | tar -xO "
                    "./usr/lib/debug/boot/System.map-VERSION > unpacked-VERSION/System.map`)";
  }
  const DecodedKernel decoded = DecodeDebianKernel(*kernel);
  ASSERT_FALSE(decoded.symbols.empty());

  // The text symbols: the tables the trace uses, symbol for symbol, sizes included.
  absl::StatusOr<SymbolTable> map = ReadSystemMap(kernel->system_map.string());
  ASSERT_TRUE(map.ok()) << map.status();
  const SymbolTable kallsyms = KallsymsTextTable(decoded.symbols);
  std::cout << kernel->system_map << ": " << map->size() << " text symbols; kallsyms "
            << kallsyms.size() << "\n";
  EXPECT_EQ(kallsyms.size(), map->size());
  std::set<std::tuple<uint64_t, std::string, uint64_t, uint8_t>> in_map, in_kallsyms;
  for (const Symbol& s : map->symbols()) in_map.insert({s.addr, s.name, s.size, s.binding});
  for (const Symbol& s : kallsyms.symbols()) {
    in_kallsyms.insert({s.addr, s.name, s.size, s.binding});
  }
  int shown = 0;
  for (const auto& [addr, name, size, binding] : in_map) {
    if (!in_kallsyms.contains({addr, name, size, binding}) && ++shown <= 20) {
      ADD_FAILURE() << absl::StrFormat("map only: %016x %s (size %d, binding %d)", addr, name,
                                       size, binding);
    }
  }
  for (const auto& [addr, name, size, binding] : in_kallsyms) {
    if (!in_map.contains({addr, name, size, binding}) && ++shown <= 40) {
      ADD_FAILURE() << absl::StrFormat("kallsyms only: %016x %s (size %d, binding %d)", addr,
                                       name, size, binding);
    }
  }

  // Every symbol, by address and name (a few names repeat at one address, in both):
  // the differences are the three above.
  std::ifstream in(kernel->system_map);
  std::vector<std::pair<std::pair<uint64_t, std::string>, char>> map_lines;
  std::map<std::pair<uint64_t, std::string>, char> all_map;
  for (std::string addr, type, name; in >> addr >> type >> name;) {
    map_lines.push_back({{std::stoull(addr, nullptr, 16), name}, type[0]});
    all_map[map_lines.back().first] = type[0];
  }
  std::map<std::pair<uint64_t, std::string>, char> all_kallsyms;
  for (const KallsymsSymbol& s : decoded.symbols) all_kallsyms[{s.addr, s.name}] = s.type;
  int absolute = 0, tables = 0, per_cpu = 0;
  for (const auto& [key, type] : map_lines) {
    auto it = all_kallsyms.find(key);
    if (it == all_kallsyms.end()) {
      if (type == 'A') {
        ++absolute;
      } else if (key.second.rfind("kallsyms_", 0) == 0 && (type == 'D' || type == 'R')) {
        ++tables;
      } else if (++shown <= 60) {
        ADD_FAILURE() << absl::StrFormat("not in kallsyms: %016x %c %s", key.first, type,
                                         key.second);
      }
    } else if (it->second != type) {
      if (it->second == 'A' && key.first < 0x100000000) {
        ++per_cpu;
      } else if (++shown <= 60) {
        ADD_FAILURE() << absl::StrFormat("%016x %s: type %c in the map, %c in kallsyms",
                                         key.first, key.second, type, it->second);
      }
    }
  }
  for (const auto& [key, type] : all_kallsyms) {
    if (!all_map.contains(key) && ++shown <= 80) {
      ADD_FAILURE() << absl::StrFormat("not in the map: %016x %c %s", key.first, type, key.second);
    }
  }
  std::cout << "map symbols not in kallsyms: " << absolute << " absolute, " << tables
            << " of kallsyms' own tables; " << per_cpu << " per-CPU symbols typed 'A'\n";
  EXPECT_EQ(decoded.symbols.size() + absolute + tables, map_lines.size());
}

// ---------------------------------------------------------------------------------------
// Tables built here: each layout decodes to exactly what was put in.

std::vector<KallsymsSymbol> Decode(const KallsymsSpec& spec) {
  absl::StatusOr<std::vector<KallsymsSymbol>> symbols = DecodeKallsyms(KallsymsElf(spec));
  EXPECT_TRUE(symbols.ok()) << symbols.status();
  return symbols.ok() ? *symbols : std::vector<KallsymsSymbol>{};
}

TEST(KallsymsTest, DecodesEachLayout) {
  for (bool seqs : {false, true}) {
    for (bool last : {false, true}) {
      for (bool percpu : {false, true}) {
        KallsymsSpec spec = SmallKernel();
        spec.seqs_of_names = seqs;
        spec.offsets_last = last;
        spec.absolute_percpu = percpu;
        if (!percpu) spec.symbols.erase(spec.symbols.begin(), spec.symbols.begin() + 2);
        SCOPED_TRACE(absl::StrFormat("seqs %d, offsets last %d, absolute per-CPU %d", seqs, last,
                                     percpu));
        EXPECT_EQ(Decode(spec), spec.symbols);
      }
    }
  }
}

TEST(KallsymsTest, AlignmentIsTheAddressesNotTheFiles) {
  for (uint64_t misaligned : {1, 4, 7}) {
    KallsymsSpec spec = SmallKernel();
    spec.vaddr += misaligned;
    spec.seqs_of_names = misaligned == 4;
    EXPECT_EQ(Decode(spec), spec.symbols) << misaligned;
  }
}

// Names of 128 tokens or more take two length bytes ("big" symbols, ULEB128, Linux 6.1);
// more than 256 symbols take more than one marker.
TEST(KallsymsTest, BigNamesAndManyMarkers) {
  KallsymsSpec spec = SmallKernel();
  spec.symbols.resize(2);
  for (int i = 0; i < 700; ++i) {
    spec.symbols.push_back({.addr = 0xffffffff81000000 + 16 * static_cast<uint64_t>(i),
                            .type = i % 3 == 0 ? 't' : 'T',
                            .name = absl::StrFormat("function_%d", i)});
  }
  spec.symbols.push_back(
      {.addr = 0xffffffff81100000, .type = 'T', .name = std::string(300, 'x') + "_long"});
  for (bool seqs : {false, true}) {
    spec.seqs_of_names = seqs;
    const KallsymsTables tables = BuildKallsymsTables(spec);
    ASSERT_GT(tables.markers, tables.names + 700 * 8);  // three markers' worth of names
    EXPECT_EQ(Decode(spec), spec.symbols) << seqs;
  }
}

TEST(KallsymsTest, TextSymbolsReachToTheNextAddress) {
  const KallsymsSpec spec = SmallKernel();
  absl::StatusOr<SymbolTable> table = ReadKallsyms(KallsymsElf(spec));
  ASSERT_TRUE(table.ok()) << table.status();
  // _stext, x86_64_start, exc_divide_error, arch_cpu_idle9, _etext: not the data or the
  // per-CPU ones.
  EXPECT_EQ(table->size(), 5u);
  EXPECT_EQ(table->Symbolize(0xffffffff81000024), "exc_divide_error+0x4");
  EXPECT_EQ(table->Find("exc_divide_error")->size, 0x10u);
  EXPECT_EQ(table->Find("exc_divide_error")->binding, STB_GLOBAL);
  EXPECT_EQ(table->Find("x86_64_start")->binding, STB_LOCAL);
  EXPECT_EQ(table->Find("arch_cpu_idle9")->binding, STB_WEAK);
  EXPECT_EQ(table->Find("arch_cpu_idle9")->size, 8u);
  // _etext reaches to jiffies_64, the next address any symbol names.
  EXPECT_EQ(table->Find("_etext")->size, 0xffffffff82000000 - 0xffffffff81000038);
  EXPECT_FALSE(table->Find("jiffies_64").has_value());
}

// The same table as ParseSystemMap builds from the map of the same symbols.
TEST(KallsymsTest, SameTableAsTheSystemMap) {
  const KallsymsSpec spec = SmallKernel();
  std::string map;
  for (const KallsymsSymbol& s : spec.symbols) {
    map += absl::StrFormat("%016x %c %s\n", s.addr, s.type, s.name);
  }
  absl::StatusOr<SymbolTable> from_map = ParseSystemMap(map);
  absl::StatusOr<SymbolTable> from_kallsyms = ReadKallsyms(KallsymsElf(spec));
  ASSERT_TRUE(from_map.ok() && from_kallsyms.ok());
  EXPECT_EQ(from_kallsyms->symbols(), from_map->symbols());
}

// ---------------------------------------------------------------------------------------
// Refusals: one line each, never a read out of bounds.

std::string ErrorOf(const Bytes& elf) {
  absl::StatusOr<SymbolTable> table = ReadKallsyms(elf);
  EXPECT_FALSE(table.ok());
  return table.ok() ? "" : std::string(table.status().message());
}

TEST(KallsymsRefusedTest, NoTables) {
  const Bytes elf = KallsymsElf(Bytes(0x400, 0x5a), 0xffffffff82000000);
  absl::StatusOr<SymbolTable> table = ReadKallsyms(elf);
  EXPECT_TRUE(absl::IsNotFound(table.status())) << table.status();
  EXPECT_EQ(table.status().message(),
            "vmlinux: no kallsyms tables found (a kernel built without CONFIG_KALLSYMS?)");
}

TEST(KallsymsRefusedTest, NotAnElf64File) {
  EXPECT_EQ(ErrorOf(Bytes(64, 0)), "vmlinux: not a little-endian ELF64 file");
  Bytes elf = KallsymsElf(SmallKernel());
  elf[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(ErrorOf(elf), "vmlinux: not a little-endian ELF64 file");
  elf = KallsymsElf(SmallKernel());
  elf.resize(elf.size() - 1);  // the tables' segment now runs past the file
  EXPECT_EQ(ErrorOf(elf), "vmlinux: program header 1's bytes lie outside the file");
  elf = KallsymsElf(SmallKernel());
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof(eh));
  eh.e_phoff = elf.size() - 8;
  std::memcpy(elf.data(), &eh, sizeof(eh));
  EXPECT_EQ(ErrorOf(elf), "vmlinux: its program headers lie outside the file");
}

// Every cut of the tables' segment short of its end loses the token index or more: no
// cut decodes, and none reads past what is left.
TEST(KallsymsRefusedTest, TruncatedTables) {
  for (bool seqs : {false, true}) {
    KallsymsSpec spec = SmallKernel();
    spec.seqs_of_names = seqs;
    const KallsymsTables tables = BuildKallsymsTables(spec);
    for (size_t size = 0; size < tables.token_index + 512; ++size) {
      const Bytes cut(tables.bytes.begin(), tables.bytes.begin() + size);
      absl::StatusOr<std::vector<KallsymsSymbol>> symbols =
          DecodeKallsyms(KallsymsElf(cut, spec.vaddr));
      EXPECT_FALSE(symbols.ok()) << size;
    }
  }
}

TEST(KallsymsRefusedTest, CorruptTokenIndex) {
  const KallsymsSpec spec = SmallKernel();
  KallsymsTables tables = BuildKallsymsTables(spec);
  tables.bytes[tables.token_index + 2 * 'A'] += 1;  // token 'A' one byte later
  EXPECT_THAT(ErrorOf(KallsymsElf(tables.bytes, spec.vaddr)),
              HasSubstr("kallsyms-like tokens \"0\" .. \"9\" at 0xffffffff82"));
  EXPECT_THAT(ErrorOf(KallsymsElf(tables.bytes, spec.vaddr)),
              HasSubstr("but no token index that fits them"));
}

TEST(KallsymsRefusedTest, NumSymsTooLarge) {
  const KallsymsSpec spec = SmallKernel();
  for (uint32_t num_syms : {uint32_t{10}, uint32_t{257}, kMaxKallsyms + 1, uint32_t{0xffffffff}}) {
    KallsymsTables tables = BuildKallsymsTables(spec);
    std::memcpy(tables.bytes.data() + tables.num_syms, &num_syms, 4);
    EXPECT_THAT(ErrorOf(KallsymsElf(tables.bytes, spec.vaddr)),
                HasSubstr("a kallsyms token table at 0xffffffff82"))
        << num_syms;
  }
}

TEST(KallsymsRefusedTest, OffsetsOutOfOrder) {
  const KallsymsSpec spec = SmallKernel();
  KallsymsTables tables = BuildKallsymsTables(spec);
  std::swap_ranges(tables.bytes.begin() + tables.offsets + 4 * 3,
                   tables.bytes.begin() + tables.offsets + 4 * 4,
                   tables.bytes.begin() + tables.offsets + 4 * 4);
  EXPECT_THAT(ErrorOf(KallsymsElf(tables.bytes, spec.vaddr)),
              HasSubstr("(9 symbols), but no kallsyms_offsets and kallsyms_relative_base that "
                        "put them in address order"));
}

TEST(KallsymsRefusedTest, ANameWithoutATypeLetter) {
  KallsymsSpec spec = SmallKernel();
  spec.symbols[4].type = '_';
  EXPECT_THAT(ErrorOf(KallsymsElf(spec)),
              HasSubstr("kallsyms name 4 (of 9, at 0xffffffff82"));
}

TEST(KallsymsRefusedTest, NoCode) {
  KallsymsSpec spec = SmallKernel();
  for (KallsymsSymbol& s : spec.symbols) {
    if (s.type == 'T' || s.type == 't' || s.type == 'W') s.type = 'R';
  }
  EXPECT_EQ(ErrorOf(KallsymsElf(spec)),
            "vmlinux: its kallsyms (9 symbols) name no code (no symbol of type t, T, w or W)");
}

// Every byte of the tables changed, one at a time: each decodes or is refused.
TEST(KallsymsRefusedTest, EveryByteMutated) {
  for (bool seqs : {false, true}) {
    KallsymsSpec spec = SmallKernel();
    spec.seqs_of_names = seqs;
    const KallsymsTables tables = BuildKallsymsTables(spec);
    for (size_t at = 0; at < tables.bytes.size(); ++at) {
      for (uint8_t value : {uint8_t{0}, uint8_t{0xff}, uint8_t(tables.bytes[at] ^ 0x80)}) {
        Bytes bytes = tables.bytes;
        bytes[at] = value;
        (void)DecodeKallsyms(KallsymsElf(bytes, spec.vaddr));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// The fuzz target's seeds (tests/fuzz/corpus/kallsyms_fuzz) are the builder's: each one
// the file this names. With SIGVISOR_WRITE_KALLSYMS_SEEDS=DIR the test writes them there
// instead (`bazel run //vmm/loader/linux:kallsyms_test -- --gtest_filter=*Seeds*`).

std::map<std::string, Bytes> Seeds() {
  std::map<std::string, Bytes> seeds;
  KallsymsSpec spec = SmallKernel();
  seeds["linux_6_1.elf"] = KallsymsElf(spec);
  spec.seqs_of_names = true;
  seeds["linux_6_1_y.elf"] = KallsymsElf(spec);
  spec.offsets_last = true;
  seeds["linux_6_4.elf"] = KallsymsElf(spec);
  spec = SmallKernel();
  spec.absolute_percpu = false;
  spec.symbols.erase(spec.symbols.begin(), spec.symbols.begin() + 2);
  spec.vaddr += 4;
  seeds["relative_only.elf"] = KallsymsElf(spec);
  seeds["no_tables.elf"] = KallsymsElf(Bytes(0x100, 0x5a), spec.vaddr);
  return seeds;
}

TEST(KallsymsSeedsTest, SeedsAreTheBuildersFiles) {
  if (const char* dir = std::getenv("SIGVISOR_WRITE_KALLSYMS_SEEDS")) {
    for (const auto& [name, bytes] : Seeds()) {
      std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    }
    GTEST_SKIP() << "wrote the seeds to " << dir;
  }
  const std::filesystem::path corpus = "tests/fuzz/corpus/kallsyms_fuzz";
  int seeds = 0;
  for (const auto& [name, bytes] : Seeds()) {
    EXPECT_EQ(ReadFile(corpus / name), bytes) << name << ": rewrite the seeds";
    absl::StatusOr<std::vector<KallsymsSymbol>> symbols = DecodeKallsyms(bytes);
    EXPECT_EQ(symbols.ok(), name != "no_tables.elf") << name << ": " << symbols.status();
    ++seeds;
  }
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(corpus)) ++files;
  EXPECT_EQ(files, seeds);
}

}  // namespace
}  // namespace sigvisor::linux_boot
