// Test-only: assembles small ELF64 images in memory, plus helpers to corrupt them.
//
// Layout of a built image, in file order:
//   Elf64_Ehdr | Elf64_Phdr[] (PT_LOADs, then one PT_NOTE) | segment data | notes |
//   .shstrtab | .strtab | .symtab | Elf64_Shdr[]
// The section header table comes last (the notes, when stripped), so every proper
// prefix of a built image cuts something the parser must check.
#ifndef SIGVISOR_VMM_LOADER_ELF_TEST_BUILDER_H_
#define SIGVISOR_VMM_LOADER_ELF_TEST_BUILDER_H_

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sigvisor::testing {

struct TestSegment {
  uint32_t type = PT_LOAD;
  uint32_t flags = PF_R;
  uint64_t paddr = 0;
  std::optional<uint64_t> vaddr;  // defaults to paddr
  std::vector<uint8_t> data;      // the file bytes: p_filesz = data.size()
  uint64_t memsz = 0;             // 0: data.size()
  uint64_t align = 0x1000;
  std::string section;      // if set, a SHT_PROGBITS section over the file bytes
  std::string bss_section;  // if set, a SHT_NOBITS section over [filesz, memsz)
};

struct TestNote {
  std::string owner;
  uint32_t type = 0;
  std::vector<uint8_t> desc;
};

struct TestSymbol {
  std::string name;
  uint64_t value = 0;
  uint64_t size = 0;
  uint8_t type = STT_FUNC;
  uint8_t bind = STB_GLOBAL;
  uint16_t shndx = 1;  // the first section: defined
};

struct BuiltElf {
  std::vector<uint8_t> bytes;
  std::map<std::string, uint16_t> section_index;  // by section name
};

class ElfBuilder {
 public:
  ElfBuilder& SetEntry(uint64_t entry) { entry_ = entry; return *this; }
  ElfBuilder& SetMachine(uint16_t machine) { machine_ = machine; return *this; }
  ElfBuilder& SetType(uint16_t type) { type_ = type; return *this; }
  ElfBuilder& AddSegment(TestSegment segment) { segments_.push_back(std::move(segment)); return *this; }
  ElfBuilder& AddNote(TestNote note) { notes_.push_back(std::move(note)); return *this; }
  ElfBuilder& AddAbiNote(uint32_t version);
  // Where the notes go: a PT_NOTE segment and/or a ".note.sigvisor" SHT_NOTE section.
  ElfBuilder& NotesIn(bool segment, bool section) {
    notes_in_segment_ = segment;
    notes_in_section_ = section;
    return *this;
  }
  ElfBuilder& AddSymbol(TestSymbol symbol) { symbols_.push_back(std::move(symbol)); return *this; }
  // No section headers at all (e_shoff = 0), like `strip --strip-section-headers`.
  ElfBuilder& StripSectionHeaders() { strip_ = true; return *this; }

  BuiltElf Build() const;

 private:
  uint64_t entry_ = 0;
  uint16_t machine_ = EM_X86_64;
  uint16_t type_ = ET_EXEC;
  std::vector<TestSegment> segments_;
  std::vector<TestNote> notes_;
  bool notes_in_segment_ = true;
  bool notes_in_section_ = true;
  std::vector<TestSymbol> symbols_;
  bool strip_ = false;
};

// A small valid guest:
//   segment 0: .text  R X  paddr 0x100000, 0x40 bytes (i & 0xff)
//   segment 1: .data  R W  paddr 0x101000, 0x20 bytes (0xd0 + i), memsz 0x2000 (.bss)
//   entry 0x100010, ABI note (SIGVISOR_ABI_VERSION) in a PT_NOTE and a section,
//   symbols _start [0x100000, +0x10), kernel_main [0x100010, +0x30), label isr_stub
//   at 0x100040 (size 0), object boot_info [0x101000, +0x20), local counter
//   [0x101020, +8).
ElfBuilder ValidGuest();

inline constexpr uint64_t kTextPaddr = 0x100000;
inline constexpr uint64_t kDataPaddr = 0x101000;
inline constexpr uint64_t kEntry = 0x100010;

// Reading and patching headers of a built image (offsets from its own Ehdr).
template <typename T>
T LoadAt(const std::vector<uint8_t>& bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}
template <typename T>
void StoreAt(std::vector<uint8_t>& bytes, uint64_t offset, const T& value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}
void PatchEhdr(std::vector<uint8_t>& bytes, const std::function<void(Elf64_Ehdr&)>& patch);
void PatchPhdr(std::vector<uint8_t>& bytes, size_t index,
               const std::function<void(Elf64_Phdr&)>& patch);
void PatchShdr(std::vector<uint8_t>& bytes, size_t index,
               const std::function<void(Elf64_Shdr&)>& patch);
Elf64_Shdr GetShdr(const std::vector<uint8_t>& bytes, size_t index);

}  // namespace sigvisor::testing

#endif  // SIGVISOR_VMM_LOADER_ELF_TEST_BUILDER_H_
