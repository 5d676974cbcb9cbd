#include "vmm/loader/elf_image.h"

#include <elf.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_test_builder.h"

// Defined outside any namespace, with C linkage, so that the test knows one plain
// function symbol that the host binary's .symtab must contain.
extern "C" __attribute__((noinline, used)) int SigvisorElfImageTestMarker(int x) {
  return x * 3 + 1;
}

namespace sigvisor {
namespace {

using ::sigvisor::testing::BuiltElf;
using ::sigvisor::testing::ElfBuilder;
using ::sigvisor::testing::kDataPaddr;
using ::sigvisor::testing::kEntry;
using ::sigvisor::testing::kTextPaddr;
using ::sigvisor::testing::PatchEhdr;
using ::sigvisor::testing::PatchPhdr;
using ::sigvisor::testing::PatchShdr;
using ::sigvisor::testing::TestNote;
using ::sigvisor::testing::TestSegment;
using ::sigvisor::testing::ValidGuest;
using ::testing::HasSubstr;

std::vector<uint8_t> ValidBytes() { return ValidGuest().Build().bytes; }

// Parses `bytes` and expects failure with `fragment` in the message.
void ExpectError(std::vector<uint8_t> bytes, const std::string& fragment) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(std::move(bytes));
  ASSERT_FALSE(image.ok()) << "parsed, but expected an error containing: " << fragment;
  EXPECT_THAT(std::string(image.status().message()), HasSubstr(fragment));
  // One line: reports put the message after a prefix.
  EXPECT_EQ(image.status().message().find('\n'), std::string::npos);
}

// A builder for tiny images with just the given code segments (plus the ABI note).
ElfBuilder Loads(std::vector<TestSegment> segments) {
  ElfBuilder b;
  b.SetEntry(segments.front().paddr).AddAbiNote(SIGVISOR_ABI_VERSION);
  for (TestSegment& s : segments) b.AddSegment(std::move(s));
  return b;
}

TestSegment Code(uint64_t paddr, size_t size, uint64_t memsz = 0) {
  return {.flags = PF_R | PF_X, .paddr = paddr, .data = std::vector<uint8_t>(size, 0xcc),
          .memsz = memsz};
}

// ---- A valid image ----------------------------------------------------------------

TEST(ElfImageTest, ParsesValidGuest) {
  std::vector<uint8_t> bytes = ValidBytes();
  absl::StatusOr<ElfImage> image = ElfImage::Parse(bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->entry(), kEntry);
  EXPECT_EQ(image->type(), ET_EXEC);
  EXPECT_TRUE(image->bootable());
  EXPECT_EQ(image->bytes().size(), bytes.size());

  ASSERT_EQ(image->segments().size(), 2u);
  const ElfSegment& text = image->segments()[0];
  EXPECT_EQ(text.paddr, kTextPaddr);
  EXPECT_EQ(text.vaddr, kTextPaddr);
  EXPECT_EQ(text.filesz, 0x40u);
  EXPECT_EQ(text.memsz, 0x40u);
  EXPECT_EQ(text.flags, uint32_t{PF_R | PF_X});
  ASSERT_EQ(text.file_bytes.size(), 0x40u);
  EXPECT_EQ(text.file_bytes[0x13], 0x13);
  const ElfSegment& data = image->segments()[1];
  EXPECT_EQ(data.paddr, kDataPaddr);
  EXPECT_EQ(data.filesz, 0x20u);
  EXPECT_EQ(data.memsz, 0x2000u);
  EXPECT_EQ(data.file_bytes[0], 0xd0);

  EXPECT_EQ(image->load_begin(), kTextPaddr);
  EXPECT_EQ(image->load_end(), kDataPaddr + 0x2000);
  EXPECT_EQ(image->abi_version(), std::optional<uint32_t>(SIGVISOR_ABI_VERSION));

  EXPECT_EQ(image->symbols().size(), 5u);
  EXPECT_EQ(image->symbols().Symbolize(0x10002c), "kernel_main+0x1c");
  EXPECT_EQ(image->symbols().Symbolize(0x100044), "isr_stub+0x4");
  EXPECT_EQ(image->symbols().Symbolize(0x101024), "counter+0x4");
  ASSERT_TRUE(image->symbols().Find("boot_info").has_value());

  std::vector<ElfSection> exec = image->executable_sections();
  ASSERT_EQ(exec.size(), 1u);
  EXPECT_EQ(exec[0].name, ".text");
  EXPECT_EQ(exec[0].vaddr, kTextPaddr);
  ASSERT_EQ(exec[0].bytes.size(), 0x40u);
  EXPECT_EQ(exec[0].bytes.data(), text.file_bytes.data());
}

TEST(ElfImageTest, SpansSurviveMovesAndCopies) {
  absl::StatusOr<ElfImage> parsed = ElfImage::Parse(ValidBytes());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const uint8_t* text = parsed->segments()[0].file_bytes.data();
  ElfImage moved = *std::move(parsed);
  EXPECT_EQ(moved.segments()[0].file_bytes.data(), text);
  ElfImage copy = moved;
  { ElfImage gone = std::move(moved); }  // the original dies; the copy shares the buffer
  EXPECT_EQ(copy.segments()[0].file_bytes.data(), text);
  EXPECT_EQ(copy.segments()[0].file_bytes[5], 5);
  EXPECT_EQ(copy.executable_sections()[0].bytes[6], 6);
}

TEST(ElfImageTest, StrippedImageLoadsWithoutSymbols) {
  absl::StatusOr<ElfImage> image =
      ElfImage::Parse(ValidGuest().StripSectionHeaders().Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_TRUE(image->symbols().empty());
  EXPECT_TRUE(image->executable_sections().empty());
  EXPECT_EQ(image->segments().size(), 2u);
  EXPECT_EQ(image->abi_version(), std::optional<uint32_t>(SIGVISOR_ABI_VERSION));  // PT_NOTE
  EXPECT_EQ(image->symbols().Symbolize(kEntry), "0x100010");
}

TEST(ElfImageTest, SegmentsAreInFileOrderAndBoundsSpanThemAll) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(
      Loads({Code(0x300000, 0x10), Code(0x100000, 0x10, 0x100), Code(0x200000, 0x10)})
          .Build()
          .bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  ASSERT_EQ(image->segments().size(), 3u);
  EXPECT_EQ(image->segments()[0].paddr, 0x300000u);
  EXPECT_EQ(image->segments()[1].paddr, 0x100000u);
  EXPECT_EQ(image->load_begin(), 0x100000u);
  EXPECT_EQ(image->load_end(), 0x300010u);
}

// ---- ABI note ---------------------------------------------------------------------

TEST(ElfImageTest, AbiNoteFoundInSectionOnly) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(ValidGuest().NotesIn(false, true).Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->abi_version(), std::optional<uint32_t>(SIGVISOR_ABI_VERSION));
}

TEST(ElfImageTest, AbiNoteFoundInSegmentOnly) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(ValidGuest().NotesIn(true, false).Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->abi_version(), std::optional<uint32_t>(SIGVISOR_ABI_VERSION));
}

TEST(ElfImageTest, NoAbiNote) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(Loads({Code(0x100000, 16)})
                                                       .NotesIn(false, false)
                                                       .Build()
                                                       .bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->abi_version(), std::nullopt);
}

TEST(ElfImageTest, OtherNotesAreSkipped) {
  ElfBuilder b;
  b.SetEntry(0x100000)
      .AddSegment(Code(0x100000, 16))
      .AddNote({.owner = "GNU", .type = 3, .desc = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}})
      .AddNote({.owner = "sigvisorx", .type = SIGVISOR_NOTE_TYPE_ABI, .desc = {9, 0, 0, 0}})
      .AddNote({.owner = "sigvisor", .type = 99, .desc = {8, 0, 0, 0, 1}})
      .AddNote({.owner = "sigvisorx", .type = SIGVISOR_NOTE_TYPE_SMP, .desc = {0, 0}})
      .AddAbiNote(7);
  absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->abi_version(), std::optional<uint32_t>(7));
  EXPECT_EQ(image->smp_max_cpus(), 0u);
}

TEST(ElfImageTest, AbiNoteWithWrongDescriptorSize) {
  ElfBuilder b = Loads({Code(0x100000, 16)}).NotesIn(true, false);
  b.AddNote({.owner = "sigvisor", .type = SIGVISOR_NOTE_TYPE_ABI, .desc = {1, 0, 0, 0, 0, 0, 0, 0}});
  ExpectError(b.Build().bytes, "sigvisor ABI note has a 8-byte descriptor; expected 4");
}

TEST(ElfImageTest, ConflictingAbiNotes) {
  ElfBuilder b = Loads({Code(0x100000, 16)});  // carries SIGVISOR_ABI_VERSION
  b.AddAbiNote(SIGVISOR_ABI_VERSION + 1);
  ExpectError(b.Build().bytes, "conflicting sigvisor ABI notes");
}

// ---- SMP note ----------------------------------------------------------------------

TestNote SmpNote(std::vector<uint8_t> desc) {
  return {.owner = "sigvisor", .type = SIGVISOR_NOTE_TYPE_SMP, .desc = std::move(desc)};
}

TEST(ElfImageTest, NoSmpNoteIsAUniprocessorBuild) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(ValidBytes());
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->smp_max_cpus(), 0u);
}

TEST(ElfImageTest, SmpNoteFoundInSectionOnlyAndSegmentOnly) {
  for (bool in_segment : {true, false}) {
    ElfBuilder b = Loads({Code(0x100000, 16)});
    b.AddNote(SmpNote({8, 0, 0, 0})).NotesIn(in_segment, !in_segment);
    absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes);
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(image->smp_max_cpus(), 8u) << "in segment: " << in_segment;
    EXPECT_EQ(image->abi_version(), std::optional<uint32_t>(SIGVISOR_ABI_VERSION));
  }
}

TEST(ElfImageTest, SmpNoteRefusals) {
  ElfBuilder wrong_size = Loads({Code(0x100000, 16)}).NotesIn(true, false);
  wrong_size.AddNote(SmpNote({2, 0, 0, 0, 0, 0, 0, 0}));
  ExpectError(wrong_size.Build().bytes, "sigvisor SMP note has a 8-byte descriptor; expected 4");
  ElfBuilder short_desc = Loads({Code(0x100000, 16)}).NotesIn(true, false);
  short_desc.AddNote(SmpNote({2}));
  ExpectError(short_desc.Build().bytes, "sigvisor SMP note has a 1-byte descriptor");
  ElfBuilder zero = Loads({Code(0x100000, 16)}).NotesIn(true, false);
  zero.AddNote(SmpNote({0, 0, 0, 0}));
  ExpectError(zero.Build().bytes, "sigvisor SMP note gives 0 CPUs; the ABI allows 1 to 8");
  ElfBuilder too_many = Loads({Code(0x100000, 16)}).NotesIn(false, true);
  too_many.AddNote(SmpNote({9, 0, 0, 0}));
  ExpectError(too_many.Build().bytes, "sigvisor SMP note gives 9 CPUs");
  ElfBuilder conflicting = Loads({Code(0x100000, 16)});
  conflicting.AddNote(SmpNote({2, 0, 0, 0})).AddNote(SmpNote({4, 0, 0, 0}));
  ExpectError(conflicting.Build().bytes, "conflicting sigvisor SMP notes: CPU counts: 2 and 4");
}

// ---- Xen PVH entry note -------------------------------------------------------------

TestNote PvhNote(std::vector<uint8_t> desc) {
  return {.owner = "Xen", .type = 18, .desc = std::move(desc)};  // XEN_ELFNOTE_PHYS32_ENTRY
}

TEST(ElfImageTest, PvhEntryNoteOf4Bytes) {
  ElfBuilder b = Loads({Code(0x100000, 16)});
  b.AddNote(PvhNote({0x50, 0x08, 0x10, 0x00}));
  absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->pvh_entry(), std::optional<uint32_t>(0x100850));
  EXPECT_EQ(image->abi_version(), std::optional<uint32_t>(SIGVISOR_ABI_VERSION));
}

TEST(ElfImageTest, PvhEntryNoteOf8BytesAsX8664LinuxWritesIt) {
  // Debian 6.1's vmlinux: Xen note 18, descriptor 50 08 00 01 00 00 00 00, found in its
  // PT_NOTE and in its .notes section, among Xen's other notes.
  ElfBuilder b = Loads({Code(0x1000000, 16)});
  b.AddNote({.owner = "Xen", .type = 6, .desc = {'l', 'i', 'n', 'u', 'x', 0}})
      .AddNote({.owner = "Xen", .type = 17, .desc = {1, 0x88, 0, 0}})
      .AddNote(PvhNote({0x50, 0x08, 0x00, 0x01, 0, 0, 0, 0}));
  absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->pvh_entry(), std::optional<uint32_t>(0x1000850));
}

TEST(ElfImageTest, NoPvhEntryNote) {
  ElfBuilder b = Loads({Code(0x100000, 16)});
  b.AddNote({.owner = "Xen", .type = 17, .desc = {1, 2, 3, 4}})    // another Xen note
      .AddNote({.owner = "Xe", .type = 18, .desc = {1, 2, 3, 4}})   // another owner
      .AddNote({.owner = "Xenx", .type = 18, .desc = {1, 2, 3, 4}});
  absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->pvh_entry(), std::nullopt);
  EXPECT_EQ(ElfImage::Parse(ValidBytes())->pvh_entry(), std::nullopt);
}

TEST(ElfImageTest, PvhEntryNoteFoundInSectionOnlyAndSegmentOnly) {
  for (bool in_segment : {false, true}) {
    ElfBuilder b = Loads({Code(0x100000, 16)});
    b.AddNote(PvhNote({4, 3, 2, 1})).NotesIn(in_segment, !in_segment);
    absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes);
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(image->pvh_entry(), std::optional<uint32_t>(0x01020304));
  }
}

TEST(ElfImageTest, PvhEntryNoteRefusals) {
  ElfBuilder wrong_size = Loads({Code(0x100000, 16)});
  wrong_size.AddNote(PvhNote({1, 2})).NotesIn(true, false);
  ExpectError(wrong_size.Build().bytes,
              "program header 1 (PT_NOTE): Xen PVH entry note has a 2-byte descriptor; expected "
              "4 or 8 (an address)");
  ElfBuilder above_4g = Loads({Code(0x100000, 16)});
  above_4g.AddNote(PvhNote({0, 0, 0, 0, 1, 0, 0, 0})).NotesIn(true, false);
  ExpectError(above_4g.Build().bytes,
              "Xen PVH entry note gives 0x100000000, above 4 GiB; the PVH entry is 32-bit");
  ElfBuilder conflicting = Loads({Code(0x100000, 16)});
  conflicting.AddNote(PvhNote({0, 0, 0x10, 0})).AddNote(PvhNote({0x10, 0, 0x10, 0}));
  ExpectError(conflicting.Build().bytes, "conflicting Xen PVH entry notes: 0x100000 and 0x100010");
}

TEST(ElfImageTest, NoteRunningPastItsArea) {
  std::vector<uint8_t> bytes = ValidBytes();
  // The PT_NOTE is program header 2; its first note's descsz field is at +4.
  const Elf64_Phdr note = testing::LoadAt<Elf64_Phdr>(
      bytes, testing::LoadAt<Elf64_Ehdr>(bytes, 0).e_phoff + 2 * sizeof(Elf64_Phdr));
  ASSERT_EQ(note.p_type, uint32_t{PT_NOTE});
  testing::StoreAt<uint32_t>(bytes, note.p_offset + 4, 0x7fffffff);
  ExpectError(bytes, "runs past the end of its area");
}

TEST(ElfImageTest, NoteSegmentOutsideFile) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchPhdr(bytes, 2, [](Elf64_Phdr& ph) { ph.p_offset = ~uint64_t{0} - 4; });
  ExpectError(bytes, "program header 2 (PT_NOTE): file range");
}

TEST(ElfImageTest, TruncatedNoteHeader) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchPhdr(bytes, 2, [](Elf64_Phdr& ph) { ph.p_filesz += 4; });
  ExpectError(bytes, "truncated note header");
}

// ---- ELF header -------------------------------------------------------------------

TEST(ElfImageTest, EmptyFile) { ExpectError({}, "too short"); }

TEST(ElfImageTest, TooShortForHeader) {
  std::vector<uint8_t> bytes = ValidBytes();
  bytes.resize(40);
  ExpectError(bytes, "file is 40 bytes, too short for an ELF64 header");
}

TEST(ElfImageTest, BadMagic) {
  ExpectError({'#', '!', '/', 'b', 'i', 'n', '/', 's', 'h'}, "not an ELF file");
  std::vector<uint8_t> bytes = ValidBytes();
  bytes[3] = 'G';
  ExpectError(bytes, "not an ELF file");
}

TEST(ElfImageTest, Elf32) {
  std::vector<uint8_t> bytes = ValidBytes();
  bytes[EI_CLASS] = ELFCLASS32;
  ExpectError(bytes, "32-bit ELF; sigvisor boots ELF64 images");
  bytes[EI_CLASS] = 7;
  ExpectError(bytes, "invalid ELF class 7");
}

TEST(ElfImageTest, BigEndian) {
  std::vector<uint8_t> bytes = ValidBytes();
  bytes[EI_DATA] = ELFDATA2MSB;
  ExpectError(bytes, "big-endian ELF");
  bytes[EI_DATA] = 0;
  ExpectError(bytes, "invalid ELF byte order 0");
}

TEST(ElfImageTest, BadVersion) {
  std::vector<uint8_t> bytes = ValidBytes();
  bytes[EI_VERSION] = 2;
  ExpectError(bytes, "unsupported ELF ident version 2");
  bytes = ValidBytes();
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_version = 0; });
  ExpectError(bytes, "unsupported ELF version 0");
}

TEST(ElfImageTest, WrongMachineIsNamed) {
  const std::pair<uint16_t, std::string> cases[] = {
      {EM_AARCH64, "ELF for machine AArch64 (183); sigvisor boots x86-64 (62)"},
      {EM_386, "ELF for machine i386 (3)"},
      {EM_ARM, "ELF for machine ARM (40)"},
      {EM_RISCV, "ELF for machine RISC-V (243)"},
      {EM_MIPS, "ELF for machine MIPS (8)"},
      {EM_PPC, "ELF for machine PowerPC (20)"},
      {EM_PPC64, "ELF for machine PowerPC64 (21)"},
      {EM_S390, "ELF for machine s390 (22)"},
      {4242, "ELF for unknown machine (4242); sigvisor boots x86-64 (62)"},
  };
  for (const auto& [machine, message] : cases) {
    SCOPED_TRACE(machine);
    ExpectError(ValidGuest().SetMachine(machine).Build().bytes, message);
  }
}

TEST(ElfImageTest, OnlyExecutablesBoot) {
  ExpectError(ValidGuest().SetType(ET_DYN).Build().bytes, "ET_DYN");
  ExpectError(ValidGuest().SetType(ET_DYN).Build().bytes, "-static -no-pie");
  ExpectError(ValidGuest().SetType(ET_REL).Build().bytes, "ET_REL (relocatable object)");
  ExpectError(ValidGuest().SetType(ET_CORE).Build().bytes, "ET_CORE");
  ExpectError(ValidGuest().SetType(ET_NONE).Build().bytes, "ELF type 0");
}

TEST(ElfImageTest, HostBinariesOnlyWithTheOption) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(ValidGuest().SetType(ET_DYN).Build().bytes,
                                                   {.allow_host_binaries = true});
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->type(), ET_DYN);
  EXPECT_FALSE(image->bootable());
}

TEST(ElfImageTest, DynamicallyLinked) {
  ElfBuilder b = ValidGuest();
  b.AddSegment({.type = PT_INTERP, .data = {'/', 'l', 'd', 0}});
  ExpectError(b.Build().bytes, "PT_INTERP (dynamically linked)");
  absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes, {.allow_host_binaries = true});
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_FALSE(image->bootable());
}

// ---- Program headers and segments -------------------------------------------------

TEST(ElfImageTest, BadPhentsize) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_phentsize = 32; });
  ExpectError(bytes, "bad e_phentsize 32");
}

TEST(ElfImageTest, ProgramHeadersOutsideFile) {
  std::vector<uint8_t> bytes = ValidBytes();
  const uint64_t size = bytes.size();
  PatchEhdr(bytes, [&](Elf64_Ehdr& eh) { eh.e_phoff = size - 8; });
  ExpectError(bytes, "program header table: file range");
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_phoff = ~uint64_t{0} - 16; });  // would wrap
  ExpectError(bytes, "program header table: file range");
}

TEST(ElfImageTest, ExtendedProgramHeaderNumbering) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_phnum = PN_XNUM; });
  ExpectError(bytes, "PN_XNUM");
}

TEST(ElfImageTest, NoLoadSegments) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchPhdr(bytes, 0, [](Elf64_Phdr& ph) { ph.p_type = PT_NULL; });
  PatchPhdr(bytes, 1, [](Elf64_Phdr& ph) { ph.p_type = PT_GNU_STACK; });
  ExpectError(bytes, "no PT_LOAD segments");
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_phnum = 0; });
  ExpectError(bytes, "no PT_LOAD segments");
}

TEST(ElfImageTest, SegmentOutsideFile) {
  std::vector<uint8_t> bytes = ValidBytes();
  const uint64_t size = bytes.size();
  PatchPhdr(bytes, 1, [&](Elf64_Phdr& ph) { ph.p_offset = size - 4; });
  ExpectError(bytes, "program header 1 (PT_LOAD): file range");
  bytes = ValidBytes();
  PatchPhdr(bytes, 0, [](Elf64_Phdr& ph) { ph.p_offset = ~uint64_t{0}; });  // offset + size wraps
  ExpectError(bytes, "program header 0 (PT_LOAD): file range");
  bytes = ValidBytes();
  PatchPhdr(bytes, 0, [](Elf64_Phdr& ph) { ph.p_filesz = ph.p_memsz = ~uint64_t{0}; });
  ExpectError(bytes, "is outside the file");
}

TEST(ElfImageTest, FileszExceedsMemsz) {
  ExpectError(Loads({Code(0x100000, 0x20, 0x10)}).Build().bytes,
              "p_filesz 0x20 exceeds p_memsz 0x10");
}

TEST(ElfImageTest, PhysicalEndOverflows) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchPhdr(bytes, 1, [](Elf64_Phdr& ph) { ph.p_paddr = ~uint64_t{0} - 0x10; });
  ExpectError(bytes, "p_paddr 0xffffffffffffffef + p_memsz 0x2000 overflows 64 bits");
  bytes = ValidBytes();
  PatchPhdr(bytes, 1, [](Elf64_Phdr& ph) { ph.p_vaddr = ~uint64_t{0}; });
  ExpectError(bytes, "p_vaddr 0xffffffffffffffff + p_memsz 0x2000 overflows 64 bits");
}

TEST(ElfImageTest, OverlappingSegments) {
  ExpectError(Loads({Code(0x100000, 0x10, 0x2000), Code(0x101000, 0x10)}).Build().bytes,
              "PT_LOAD segments 0 [0x100000, 0x102000) and 1 [0x101000, 0x101010) overlap");
  // Out of order in the file, and nested.
  ExpectError(Loads({Code(0x101000, 0x10), Code(0x100000, 0x10, 0x10000)}).Build().bytes,
              "overlap in physical memory");
  // Touching is fine.
  EXPECT_TRUE(
      ElfImage::Parse(Loads({Code(0x100000, 0x10, 0x1000), Code(0x101000, 0x10)}).Build().bytes)
          .ok());
}

TEST(ElfImageTest, OverlapIsByPhysicalAddress) {
  // Same vaddr, different paddr: fine (the loader only uses paddr).
  TestSegment a = Code(0x100000, 0x10);
  TestSegment b = Code(0x200000, 0x10);
  b.vaddr = 0x100000;
  EXPECT_TRUE(ElfImage::Parse(Loads({a, b}).Build().bytes).ok());
}

TEST(ElfImageTest, EntryByPhysicalAddressAsInAVmlinux) {
  // Linux links at 0xffffffff81000000 and loads at 0x1000000; e_entry is physical.
  TestSegment text = Code(0x1000000, 0x100);
  text.vaddr = 0xffffffff81000000;
  ElfBuilder b;
  b.SetEntry(0x1000000).AddSegment(text);
  absl::StatusOr<ElfImage> image = ElfImage::Parse(b.Build().bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->entry(), 0x1000000u);
  EXPECT_EQ(image->load_begin(), 0x1000000u);
  EXPECT_EQ(image->abi_version(), std::nullopt);
  EXPECT_FALSE(image->multiboot().has_value());
  ExpectError(ElfBuilder(b).SetEntry(0x1000100).Build().bytes, "entry point 0x1000100");
}

TEST(ElfImageTest, EntryOutsideExecutableSegment) {
  ExpectError(ValidGuest().SetEntry(0x101000).Build().bytes,  // .data: not executable
              "entry point 0x101000 is not inside any executable PT_LOAD segment");
  ExpectError(ValidGuest().SetEntry(0).Build().bytes, "entry point 0x0");
  ExpectError(ValidGuest().SetEntry(kTextPaddr + 0x40).Build().bytes, "entry point");
}

// ---- Sections ---------------------------------------------------------------------

TEST(ElfImageTest, SectionHeadersOutsideFile) {
  std::vector<uint8_t> bytes = ValidBytes();
  const uint64_t size = bytes.size();
  PatchEhdr(bytes, [&](Elf64_Ehdr& eh) { eh.e_shoff = size - 8; });
  ExpectError(bytes, "section header table: file range");
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_shoff = ~uint64_t{0}; });
  ExpectError(bytes, "section header table: file range");
}

TEST(ElfImageTest, BadShentsize) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_shentsize = 40; });
  ExpectError(bytes, "bad e_shentsize 40");
}

TEST(ElfImageTest, ExtendedSectionNumbering) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_shnum = 0; });
  ExpectError(bytes, "extended section numbering");
}

TEST(ElfImageTest, SectionContentsOutsideFile) {
  BuiltElf built = ValidGuest().Build();
  const uint16_t data = built.section_index.at(".data");
  PatchShdr(built.bytes, data, [](Elf64_Shdr& sh) { sh.sh_size = 1 << 30; });
  ExpectError(built.bytes, absl::StrFormat("section %d: file range", data));
}

TEST(ElfImageTest, NobitsSectionsAreNotInTheFile) {
  BuiltElf built = ValidGuest().Build();
  PatchShdr(built.bytes, built.section_index.at(".bss"),
            [](Elf64_Shdr& sh) { sh.sh_offset = ~uint64_t{0}; });
  EXPECT_TRUE(ElfImage::Parse(built.bytes).ok());
}

TEST(ElfImageTest, SectionNameTableIndexOutOfRange) {
  std::vector<uint8_t> bytes = ValidBytes();
  PatchEhdr(bytes, [](Elf64_Ehdr& eh) { eh.e_shstrndx = 99; });
  ExpectError(bytes, "e_shstrndx 99 is out of range");
}

TEST(ElfImageTest, SectionNameTableIsNotAStringTable) {
  BuiltElf built = ValidGuest().Build();
  const uint16_t text = built.section_index.at(".text");
  PatchEhdr(built.bytes, [&](Elf64_Ehdr& eh) { eh.e_shstrndx = text; });
  ExpectError(built.bytes, "is not SHT_STRTAB");
}

TEST(ElfImageTest, SectionNameOffsetOutOfRange) {
  BuiltElf built = ValidGuest().Build();
  const uint16_t text = built.section_index.at(".text");
  PatchShdr(built.bytes, text, [](Elf64_Shdr& sh) { sh.sh_name = 0x10000; });
  ExpectError(built.bytes,
              absl::StrFormat("section %d name: offset 0x10000 is outside its string table", text));
}

TEST(ElfImageTest, SectionNameNotTerminated) {
  BuiltElf built = ValidGuest().Build();
  const Elf64_Shdr shstrtab =
      testing::GetShdr(built.bytes, testing::LoadAt<Elf64_Ehdr>(built.bytes, 0).e_shstrndx);
  built.bytes[shstrtab.sh_offset + shstrtab.sh_size - 1] = 'x';  // ".shstrtab" runs off
  ExpectError(built.bytes, "not NUL-terminated");
}

TEST(ElfImageTest, SymbolNameOffsetOutOfRange) {
  BuiltElf built = ValidGuest().Build();
  const Elf64_Shdr symtab = testing::GetShdr(built.bytes, built.section_index.at(".symtab"));
  // Symbol 1's st_name.
  testing::StoreAt<uint32_t>(built.bytes, symtab.sh_offset + sizeof(Elf64_Sym), 0x123456);
  ExpectError(built.bytes, "symbol 1 name: offset 0x123456 is outside its string table");
}

TEST(ElfImageTest, SymbolTableEntrySize) {
  BuiltElf built = ValidGuest().Build();
  PatchShdr(built.bytes, built.section_index.at(".symtab"),
            [](Elf64_Shdr& sh) { sh.sh_entsize = 16; });
  ExpectError(built.bytes, "has sh_entsize 16; expected 24");
}

TEST(ElfImageTest, SymbolTableSizeNotWholeEntries) {
  BuiltElf built = ValidGuest().Build();
  PatchShdr(built.bytes, built.section_index.at(".symtab"),
            [](Elf64_Shdr& sh) { sh.sh_size -= 1; });
  ExpectError(built.bytes, "not a whole number of 24-byte entries");
}

TEST(ElfImageTest, SymbolTableLinksToNonStringTable) {
  BuiltElf built = ValidGuest().Build();
  const uint16_t symtab = built.section_index.at(".symtab");
  PatchShdr(built.bytes, symtab, [](Elf64_Shdr& sh) { sh.sh_link = 1; });
  ExpectError(built.bytes, "links to section 1, which is not a string table");
  PatchShdr(built.bytes, symtab, [](Elf64_Shdr& sh) { sh.sh_link = 500; });
  ExpectError(built.bytes, "links to section 500");
}

// ---- Robustness -------------------------------------------------------------------

TEST(ElfImageTest, EveryTruncationFailsCleanly) {
  for (const std::vector<uint8_t>& full :
       {ValidBytes(), ValidGuest().StripSectionHeaders().Build().bytes}) {
    ASSERT_TRUE(ElfImage::Parse(full).ok());
    for (size_t len = 0; len < full.size(); ++len) {
      absl::StatusOr<ElfImage> image =
          ElfImage::Parse(std::vector<uint8_t>(full.begin(), full.begin() + len));
      ASSERT_FALSE(image.ok()) << "prefix of " << len << " bytes parsed";
      ASSERT_FALSE(image.status().message().empty());
    }
  }
}

// Exercises everything a parsed image offers, so a corrupt image that still parses
// is also walked end to end.
void UseImage(const ElfImage& image) {
  for (const ElfSegment& s : image.segments()) {
    uint64_t sum = 0;
    for (uint8_t b : s.file_bytes) sum += b;
    (void)sum;
    (void)image.symbols().Symbolize(s.vaddr + s.filesz / 2);
  }
  for (const ElfSection& s : image.executable_sections()) {
    if (!s.bytes.empty()) (void)s.bytes.back();
  }
  for (const Symbol& s : image.symbols().symbols()) (void)image.symbols().Find(s.name);
}

TEST(ElfImageTest, RandomCorruptionNeverCrashes) {
  const std::vector<uint8_t> valid = ValidBytes();
  std::mt19937_64 rng(20240601);  // fixed: failures must reproduce
  int parsed = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::vector<uint8_t> bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      // Mostly the headers, where the offsets and sizes live.
      const size_t limit = (rng() % 2 == 0) ? std::min<size_t>(bytes.size(), 0x100) : bytes.size();
      const size_t at = rng() % limit;
      bytes[at] = (rng() % 4 == 0) ? 0xff : static_cast<uint8_t>(rng());
    }
    absl::StatusOr<ElfImage> image = ElfImage::Parse(std::move(bytes));
    if (image.ok()) {
      ++parsed;
      UseImage(*image);
    } else {
      ASSERT_FALSE(image.status().message().empty());
    }
  }
  // Some flips land in data bytes; the test is only meaningful if both paths ran.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, 20000);
}

TEST(ElfImageTest, RandomGarbageNeverCrashes) {
  std::mt19937_64 rng(7);
  for (int iteration = 0; iteration < 5000; ++iteration) {
    std::vector<uint8_t> bytes(rng() % 512);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    if (bytes.size() >= 20 && iteration % 2 == 0) {  // get past the ident checks
      std::memcpy(bytes.data(), "\x7f" "ELF\x02\x01\x01", 7);
      bytes[18] = EM_X86_64;
      bytes[19] = 0;
      bytes[16] = ET_EXEC;
      bytes[17] = 0;
    }
    absl::StatusOr<ElfImage> image = ElfImage::Parse(std::move(bytes));
    if (image.ok()) UseImage(*image);
  }
}

// ---- A real binary ----------------------------------------------------------------

std::vector<uint8_t> ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(ElfImageTest, ParsesThisTestBinary) {
  std::vector<uint8_t> bytes = ReadFile("/proc/self/exe");
  ASSERT_GT(bytes.size(), sizeof(Elf64_Ehdr));
  const uint16_t type = testing::LoadAt<Elf64_Ehdr>(bytes, 0).e_type;

  absl::StatusOr<ElfImage> strict = ElfImage::Parse(bytes);
  absl::StatusOr<ElfImage> image = ElfImage::Parse(bytes, {.allow_host_binaries = true});
  ASSERT_TRUE(image.ok()) << image.status();
  // A dynamically linked host binary is never bootable, and strict parsing says why.
  EXPECT_FALSE(image->bootable());
  ASSERT_FALSE(strict.ok());
  EXPECT_THAT(std::string(strict.status().message()),
              HasSubstr(type == ET_DYN ? "ET_DYN" : "PT_INTERP"));

  EXPECT_FALSE(image->segments().empty());
  EXPECT_EQ(image->abi_version(), std::nullopt);
  ASSERT_FALSE(image->symbols().empty());
  std::optional<Symbol> marker = image->symbols().Find("SigvisorElfImageTestMarker");
  ASSERT_TRUE(marker.has_value());
  EXPECT_EQ(marker->type, STT_FUNC);
  ASSERT_GT(marker->size, 1u);
  EXPECT_EQ(image->symbols().Symbolize(marker->addr + 1), "SigvisorElfImageTestMarker+0x1");

  bool has_text = false;
  for (const ElfSection& s : image->executable_sections()) {
    if (s.name == ".text") {
      has_text = true;
      EXPECT_GE(marker->addr, s.vaddr);
      EXPECT_LT(marker->addr - s.vaddr, s.bytes.size());
    }
  }
  EXPECT_TRUE(has_text);
  EXPECT_EQ(SigvisorElfImageTestMarker(1), 4);  // keep it referenced
}

}  // namespace
}  // namespace sigvisor
