#include "vmm/loader/elf_image.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_bytes.h"

namespace sigvisor {
namespace {

using elf_internal::RangeFits;
using elf_internal::ReadStruct;
using elf_internal::StringAt;
using elf_internal::SubSpan;
using Bytes = std::span<const uint8_t>;

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

std::string OutsideFile(std::string_view what, uint64_t offset, uint64_t len, uint64_t size) {
  return absl::StrFormat("%s: file range [0x%x, +0x%x) is outside the file (%d bytes)", what,
                         offset, len, size);
}

// ---- ELF header -------------------------------------------------------------------

std::string TooShort(uint64_t size) {
  return absl::StrFormat(
      "file is %d bytes, too short for an ELF64 header (%d bytes); is it truncated?", size,
      sizeof(Elf64_Ehdr));
}

// e_ident: magic, class, byte order, version. Checked before the rest of the header
// so that, say, a 32-bit image is reported as such rather than as "too short".
absl::Status CheckIdent(Bytes bytes, bool multiboot) {
  if (bytes.size() < SELFMAG) return Invalid(TooShort(bytes.size()));
  if (std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    return Invalid("not an ELF file (bad magic; expected \\x7fELF)");
  }
  if (bytes.size() < EI_NIDENT) return Invalid(TooShort(bytes.size()));
  switch (bytes[EI_CLASS]) {
    case ELFCLASS64:
      break;
    case ELFCLASS32:
      if (multiboot) break;
      return Invalid(
          "32-bit ELF; sigvisor boots ELF64 images, and 32-bit ones only as Multiboot kernels "
          "(this one has no Multiboot header in its first 8 KiB)");
    default:
      return Invalid(absl::StrFormat("invalid ELF class %d (expected 2, ELFCLASS64)",
                                     bytes[EI_CLASS]));
  }
  switch (bytes[EI_DATA]) {
    case ELFDATA2LSB:
      break;
    case ELFDATA2MSB:
      return Invalid("big-endian ELF; sigvisor boots little-endian x86-64 images");
    default:
      return Invalid(absl::StrFormat("invalid ELF byte order %d (expected 1, ELFDATA2LSB)",
                                     bytes[EI_DATA]));
  }
  if (bytes[EI_VERSION] != EV_CURRENT) {
    return Invalid(absl::StrFormat("unsupported ELF ident version %d (expected 1)",
                                   bytes[EI_VERSION]));
  }
  return absl::OkStatus();
}

const char* MachineName(uint16_t machine) {
  switch (machine) {
    case EM_386:
      return "i386";
    case EM_ARM:
      return "ARM";
    case EM_AARCH64:
      return "AArch64";
    case EM_RISCV:
      return "RISC-V";
    case EM_MIPS:
      return "MIPS";
    case EM_PPC:
      return "PowerPC";
    case EM_PPC64:
      return "PowerPC64";
    case EM_S390:
      return "s390";
    case EM_X86_64:
      return "x86-64";
    default:
      return nullptr;
  }
}

absl::Status CheckMachine(uint16_t machine, bool elf32) {
  if (machine == EM_X86_64) return absl::OkStatus();
  if (elf32 && machine == EM_386) return absl::OkStatus();  // a Multiboot kernel
  const char* name = MachineName(machine);
  if (name == nullptr) {
    return Invalid(absl::StrFormat(
        "ELF for unknown machine (%d); sigvisor boots x86-64 (%d)", machine, EM_X86_64));
  }
  return Invalid(absl::StrFormat("ELF for machine %s (%d); sigvisor boots x86-64 (%d)", name,
                                 machine, EM_X86_64));
}

absl::Status CheckType(uint16_t type, const ElfParseOptions& options) {
  switch (type) {
    case ET_EXEC:
      return absl::OkStatus();
    case ET_DYN:
      if (options.allow_host_binaries) return absl::OkStatus();
      return Invalid(
          "ELF type ET_DYN (PIE or shared object); sigvisor boots ET_EXEC images: link the "
          "guest with -static -no-pie");
    case ET_REL:
      return Invalid(
          "ELF type ET_REL (relocatable object); sigvisor boots ET_EXEC images: link it first");
    case ET_CORE:
      return Invalid("ELF type ET_CORE (core dump); sigvisor boots ET_EXEC images");
    default:
      return Invalid(absl::StrFormat("ELF type %d; sigvisor boots ET_EXEC images", type));
  }
}

// An ELF32 header in its ELF64 form (every field fits).
std::optional<Elf64_Ehdr> ReadHeader32(Bytes bytes) {
  std::optional<Elf32_Ehdr> h = ReadStruct<Elf32_Ehdr>(bytes, 0);
  if (!h) return std::nullopt;
  Elf64_Ehdr w = {};
  std::memcpy(w.e_ident, h->e_ident, EI_NIDENT);
  w.e_type = h->e_type;
  w.e_machine = h->e_machine;
  w.e_version = h->e_version;
  w.e_entry = h->e_entry;
  w.e_phoff = h->e_phoff;
  w.e_shoff = h->e_shoff;
  w.e_flags = h->e_flags;
  w.e_ehsize = h->e_ehsize;
  w.e_phentsize = h->e_phentsize;
  w.e_phnum = h->e_phnum;
  w.e_shentsize = h->e_shentsize;
  w.e_shnum = h->e_shnum;
  w.e_shstrndx = h->e_shstrndx;
  return w;
}

bool IsElf32(const Elf64_Ehdr& ehdr) { return ehdr.e_ident[EI_CLASS] == ELFCLASS32; }

absl::StatusOr<Elf64_Ehdr> ReadHeader(Bytes bytes, const ElfParseOptions& options,
                                      bool multiboot) {
  if (absl::Status s = CheckIdent(bytes, multiboot); !s.ok()) return s;
  std::optional<Elf64_Ehdr> ehdr = bytes[EI_CLASS] == ELFCLASS32
                                       ? ReadHeader32(bytes)
                                       : ReadStruct<Elf64_Ehdr>(bytes, 0);
  if (!ehdr) return Invalid(TooShort(bytes.size()));
  if (ehdr->e_version != EV_CURRENT) {
    return Invalid(absl::StrFormat("unsupported ELF version %d (expected 1)", ehdr->e_version));
  }
  if (absl::Status s = CheckMachine(ehdr->e_machine, IsElf32(*ehdr)); !s.ok()) return s;
  if (absl::Status s = CheckType(ehdr->e_type, options); !s.ok()) return s;
  return *ehdr;
}

// ---- Program headers --------------------------------------------------------------

absl::StatusOr<std::vector<Elf64_Phdr>> ReadProgramHeaders(Bytes bytes, const Elf64_Ehdr& ehdr) {
  if (ehdr.e_phnum == 0) return std::vector<Elf64_Phdr>{};  // reported as "no PT_LOAD"
  if (ehdr.e_phnum == PN_XNUM) {
    return absl::UnimplementedError(
        "extended program header numbering (e_phnum = PN_XNUM) is not supported");
  }
  const bool elf32 = IsElf32(ehdr);
  const uint64_t entsize = elf32 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr);
  if (ehdr.e_phentsize != entsize) {
    return Invalid(absl::StrFormat("bad e_phentsize %d; ELF%d program headers are %d bytes",
                                   ehdr.e_phentsize, elf32 ? 32 : 64, entsize));
  }
  // e_phnum < 2^16, so the table size cannot overflow.
  const uint64_t table_size = uint64_t{ehdr.e_phnum} * entsize;
  if (!RangeFits(ehdr.e_phoff, table_size, bytes.size())) {
    return Invalid(OutsideFile("program header table", ehdr.e_phoff, table_size, bytes.size()));
  }
  std::vector<Elf64_Phdr> phdrs;
  for (uint64_t i = 0; i < ehdr.e_phnum; ++i) {
    std::optional<Elf64_Phdr> ph;
    if (elf32) {
      std::optional<Elf32_Phdr> p = ReadStruct<Elf32_Phdr>(bytes, ehdr.e_phoff + i * entsize);
      if (p) {
        ph = Elf64_Phdr{.p_type = p->p_type,
                        .p_flags = p->p_flags,
                        .p_offset = p->p_offset,
                        .p_vaddr = p->p_vaddr,
                        .p_paddr = p->p_paddr,
                        .p_filesz = p->p_filesz,
                        .p_memsz = p->p_memsz,
                        .p_align = p->p_align};
      }
    } else {
      ph = ReadStruct<Elf64_Phdr>(bytes, ehdr.e_phoff + i * entsize);
    }
    if (!ph) return absl::InternalError("program header out of range");  // checked above
    phdrs.push_back(*ph);
  }
  return phdrs;
}

std::string LoadName(size_t phdr_index) {
  return absl::StrFormat("program header %d (PT_LOAD)", phdr_index);
}

absl::StatusOr<ElfSegment> ReadLoadSegment(Bytes bytes, const Elf64_Phdr& ph, size_t index) {
  if (!RangeFits(ph.p_offset, ph.p_filesz, bytes.size())) {
    return Invalid(OutsideFile(LoadName(index), ph.p_offset, ph.p_filesz, bytes.size()));
  }
  if (ph.p_filesz > ph.p_memsz) {
    return Invalid(absl::StrFormat("%s: p_filesz 0x%x exceeds p_memsz 0x%x", LoadName(index),
                                   ph.p_filesz, ph.p_memsz));
  }
  uint64_t end;
  if (__builtin_add_overflow(ph.p_paddr, ph.p_memsz, &end)) {
    return Invalid(absl::StrFormat("%s: p_paddr 0x%x + p_memsz 0x%x overflows 64 bits",
                                   LoadName(index), ph.p_paddr, ph.p_memsz));
  }
  if (__builtin_add_overflow(ph.p_vaddr, ph.p_memsz, &end)) {
    return Invalid(absl::StrFormat("%s: p_vaddr 0x%x + p_memsz 0x%x overflows 64 bits",
                                   LoadName(index), ph.p_vaddr, ph.p_memsz));
  }
  std::optional<Bytes> file_bytes = SubSpan(bytes, ph.p_offset, ph.p_filesz);
  if (!file_bytes) return absl::InternalError("segment range out of file");  // checked above
  return ElfSegment{.paddr = ph.p_paddr,
                    .vaddr = ph.p_vaddr,
                    .memsz = ph.p_memsz,
                    .filesz = ph.p_filesz,
                    .flags = ph.p_flags,
                    .file_bytes = *file_bytes};
}

absl::StatusOr<std::vector<ElfSegment>> ReadLoadSegments(Bytes bytes,
                                                         const std::vector<Elf64_Phdr>& phdrs) {
  std::vector<ElfSegment> segments;
  for (size_t i = 0; i < phdrs.size(); ++i) {
    if (phdrs[i].p_type != PT_LOAD) continue;
    absl::StatusOr<ElfSegment> segment = ReadLoadSegment(bytes, phdrs[i], i);
    if (!segment.ok()) return segment.status();
    segments.push_back(*segment);
  }
  if (segments.empty()) {
    return Invalid("no PT_LOAD segments; nothing to load (is this a linked executable?)");
  }
  return segments;
}

// Two segments loaded over each other would make the result depend on load order.
// Sorted by start, ranges are disjoint iff every neighbour pair is.
absl::Status CheckNoOverlap(const std::vector<ElfSegment>& segments) {
  std::vector<size_t> order;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].memsz > 0) order.push_back(i);  // an empty range overlaps nothing
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return segments[a].paddr < segments[b].paddr; });
  for (size_t k = 1; k < order.size(); ++k) {
    const ElfSegment& prev = segments[order[k - 1]];
    const ElfSegment& cur = segments[order[k]];
    // Ends cannot overflow: ReadLoadSegment checked paddr + memsz.
    if (prev.paddr + prev.memsz > cur.paddr) {
      return Invalid(absl::StrFormat(
          "PT_LOAD segments %d [0x%x, 0x%x) and %d [0x%x, 0x%x) overlap in physical memory",
          order[k - 1], prev.paddr, prev.paddr + prev.memsz, order[k], cur.paddr,
          cur.paddr + cur.memsz));
    }
  }
  return absl::OkStatus();
}

// The vCPU starts at e_entry; make sure there is code there. A sigvisor image's entry
// is virtual (and its vaddr is its paddr); a Linux vmlinux's is physical (ENTRY is
// phys_startup_64), so either kind of address counts.
absl::Status CheckEntry(uint64_t entry, const std::vector<ElfSegment>& segments) {
  for (const ElfSegment& s : segments) {
    if ((s.flags & PF_X) == 0) continue;
    if (entry >= s.vaddr && entry - s.vaddr < s.memsz) return absl::OkStatus();
    if (entry >= s.paddr && entry - s.paddr < s.memsz) return absl::OkStatus();
  }
  return Invalid(absl::StrFormat(
      "entry point 0x%x is not inside any executable PT_LOAD segment (check ENTRY() and the "
      "linker script)",
      entry));
}

bool HasInterpreter(const std::vector<Elf64_Phdr>& phdrs) {
  return std::any_of(phdrs.begin(), phdrs.end(),
                     [](const Elf64_Phdr& ph) { return ph.p_type == PT_INTERP; });
}

// ---- Section headers --------------------------------------------------------------

absl::StatusOr<std::vector<Elf64_Shdr>> ReadSectionHeaders(Bytes bytes, const Elf64_Ehdr& ehdr) {
  if (ehdr.e_shoff == 0) return std::vector<Elf64_Shdr>{};  // stripped: no sections
  if (ehdr.e_shnum == 0) {
    return absl::UnimplementedError(
        "extended section numbering (e_shnum = 0 with e_shoff != 0) is not supported");
  }
  const bool elf32 = IsElf32(ehdr);
  const uint64_t entsize = elf32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);
  if (ehdr.e_shentsize != entsize) {
    return Invalid(absl::StrFormat("bad e_shentsize %d; ELF%d section headers are %d bytes",
                                   ehdr.e_shentsize, elf32 ? 32 : 64, entsize));
  }
  const uint64_t table_size = uint64_t{ehdr.e_shnum} * entsize;
  if (!RangeFits(ehdr.e_shoff, table_size, bytes.size())) {
    return Invalid(OutsideFile("section header table", ehdr.e_shoff, table_size, bytes.size()));
  }
  std::vector<Elf64_Shdr> shdrs;
  for (uint64_t i = 0; i < ehdr.e_shnum; ++i) {
    std::optional<Elf64_Shdr> sh;
    if (elf32) {
      std::optional<Elf32_Shdr> h = ReadStruct<Elf32_Shdr>(bytes, ehdr.e_shoff + i * entsize);
      if (h) {
        sh = Elf64_Shdr{.sh_name = h->sh_name,
                        .sh_type = h->sh_type,
                        .sh_flags = h->sh_flags,
                        .sh_addr = h->sh_addr,
                        .sh_offset = h->sh_offset,
                        .sh_size = h->sh_size,
                        .sh_link = h->sh_link,
                        .sh_info = h->sh_info,
                        .sh_addralign = h->sh_addralign,
                        .sh_entsize = h->sh_entsize};
      }
    } else {
      sh = ReadStruct<Elf64_Shdr>(bytes, ehdr.e_shoff + i * entsize);
    }
    if (!sh) return absl::InternalError("section header out of range");  // checked above
    // Checking every section's contents here lets later code slice them freely.
    const bool has_contents = sh->sh_type != SHT_NULL && sh->sh_type != SHT_NOBITS;
    if (i != 0 && has_contents && !RangeFits(sh->sh_offset, sh->sh_size, bytes.size())) {
      return Invalid(OutsideFile(absl::StrFormat("section %d", i), sh->sh_offset, sh->sh_size,
                                 bytes.size()));
    }
    shdrs.push_back(*sh);
  }
  return shdrs;
}

// A section's file contents; empty for SHT_NOBITS / SHT_NULL.
absl::StatusOr<Bytes> SectionBytes(Bytes bytes, const Elf64_Shdr& sh) {
  if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) return Bytes{};
  std::optional<Bytes> contents = SubSpan(bytes, sh.sh_offset, sh.sh_size);
  if (!contents) return absl::InternalError("section range out of file");  // checked on read
  return *contents;
}

absl::StatusOr<std::vector<std::string>> ReadSectionNames(Bytes bytes, const Elf64_Ehdr& ehdr,
                                                          const std::vector<Elf64_Shdr>& shdrs) {
  std::vector<std::string> names(shdrs.size());
  if (shdrs.empty() || ehdr.e_shstrndx == SHN_UNDEF) return names;  // unnamed sections
  if (ehdr.e_shstrndx == SHN_XINDEX) {
    return absl::UnimplementedError(
        "extended section name table index (e_shstrndx = SHN_XINDEX) is not supported");
  }
  if (ehdr.e_shstrndx >= shdrs.size()) {
    return Invalid(absl::StrFormat("e_shstrndx %d is out of range (%d sections)",
                                   ehdr.e_shstrndx, shdrs.size()));
  }
  const Elf64_Shdr& strtab = shdrs[ehdr.e_shstrndx];
  if (strtab.sh_type != SHT_STRTAB) {
    return Invalid(absl::StrFormat("section name table (section %d) is not SHT_STRTAB (type %d)",
                                   ehdr.e_shstrndx, strtab.sh_type));
  }
  absl::StatusOr<Bytes> table = SectionBytes(bytes, strtab);
  if (!table.ok()) return table.status();
  // Section 0 is the reserved null section; it has no name to look up.
  for (size_t i = 1; i < shdrs.size(); ++i) {
    absl::StatusOr<std::string_view> name =
        StringAt(*table, shdrs[i].sh_name, absl::StrFormat("section %d name", i));
    if (!name.ok()) return name.status();
    names[i] = std::string(*name);
  }
  return names;
}

absl::StatusOr<SymbolTable> ReadSymbols(Bytes bytes, const std::vector<Elf64_Shdr>& shdrs,
                                        bool elf32) {
  auto symtab = std::find_if(shdrs.begin(), shdrs.end(),
                             [](const Elf64_Shdr& sh) { return sh.sh_type == SHT_SYMTAB; });
  if (symtab == shdrs.end()) return SymbolTable();  // stripped of symbols
  const size_t index = symtab - shdrs.begin();
  const uint64_t entsize = elf32 ? sizeof(Elf32_Sym) : sizeof(Elf64_Sym);
  if (symtab->sh_entsize != entsize) {
    return Invalid(absl::StrFormat("symbol table (section %d) has sh_entsize %d; expected %d",
                                   index, symtab->sh_entsize, entsize));
  }
  if (symtab->sh_link >= shdrs.size() || shdrs[symtab->sh_link].sh_type != SHT_STRTAB) {
    return Invalid(absl::StrFormat(
        "symbol table (section %d) links to section %d, which is not a string table", index,
        symtab->sh_link));
  }
  absl::StatusOr<Bytes> entries = SectionBytes(bytes, *symtab);
  if (!entries.ok()) return entries.status();
  absl::StatusOr<Bytes> names = SectionBytes(bytes, shdrs[symtab->sh_link]);
  if (!names.ok()) return names.status();
  if (!elf32) return SymbolTable::FromElf(*entries, *names);
  // ELF32 (a Multiboot kernel): widen the entries; FromElf checks the rest.
  if (entries->size() % sizeof(Elf32_Sym) != 0) {
    return Invalid(absl::StrFormat("symbol table (section %d) is %d bytes, not a whole number of "
                                   "%d-byte entries",
                                   index, entries->size(), sizeof(Elf32_Sym)));
  }
  std::vector<Elf64_Sym> wide;
  for (uint64_t off = 0; off < entries->size(); off += sizeof(Elf32_Sym)) {
    std::optional<Elf32_Sym> sym = ReadStruct<Elf32_Sym>(*entries, off);
    if (!sym) return absl::InternalError("symbol out of range");  // checked above
    wide.push_back(Elf64_Sym{.st_name = sym->st_name,
                             .st_info = sym->st_info,
                             .st_other = sym->st_other,
                             .st_shndx = sym->st_shndx,
                             .st_value = sym->st_value,
                             .st_size = sym->st_size});
  }
  return SymbolTable::FromElf(
      {reinterpret_cast<const uint8_t*>(wide.data()), wide.size() * sizeof(Elf64_Sym)}, *names);
}

std::vector<ElfSection> ExecutableSections(Bytes bytes, const std::vector<Elf64_Shdr>& shdrs,
                                           const std::vector<std::string>& names) {
  std::vector<ElfSection> sections;
  for (size_t i = 0; i < shdrs.size(); ++i) {
    const Elf64_Shdr& sh = shdrs[i];
    if (sh.sh_type != SHT_PROGBITS || (sh.sh_flags & SHF_EXECINSTR) == 0) continue;
    absl::StatusOr<Bytes> contents = SectionBytes(bytes, sh);
    if (!contents.ok()) continue;  // unreachable: ranges were checked on read
    sections.push_back(ElfSection{.name = names[i], .vaddr = sh.sh_addr, .bytes = *contents});
  }
  return sections;
}

// ---- Notes ------------------------------------------------------------------------

constexpr uint64_t AlignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) & ~(align - 1);
}

// Note entries are padded to 4 bytes, or to 8 in areas aligned to 8 (e.g.
// .note.gnu.property); binutils decides the same way from the area's alignment.
uint64_t NoteAlignment(uint64_t area_align) { return area_align == 8 ? 8 : 4; }

// XEN_ELFNOTE_PHYS32_ENTRY, from Xen's public/elfnote.h: the PVH entry point.
constexpr uint32_t kXenElfnotePhys32Entry = 18;
constexpr char kXenNoteName[] = "Xen";

bool IsNote(Bytes area, const Elf64_Nhdr& nh, uint64_t name_offset, std::string_view owner,
            uint32_t type) {
  // The name is stored with its NUL, which `owner.size() + 1` counts.
  return nh.n_type == type && nh.n_namesz == owner.size() + 1 &&
         std::memcmp(area.data() + name_offset, owner.data(), owner.size()) == 0 &&
         area[name_offset + owner.size()] == 0;
}

// The notes sigvisor reads, as found. The same note is usually reachable both as a
// PT_NOTE segment and as an SHT_NOTE section, so each may be found more than once.
struct FoundNotes {
  std::vector<uint32_t> abi_versions;
  std::vector<uint32_t> smp_max_cpus;
  std::vector<uint32_t> pvh_entries;
};

// The PVH entry note's descriptor: 32-bit, or 64-bit as x86-64 Linux writes it
// (ELFNOTE with _ASM_PTR), which must still hold a 32-bit address.
absl::StatusOr<uint32_t> ReadPvhEntry(Bytes area, const Elf64_Nhdr& nh, uint64_t desc_offset,
                                      std::string_view where) {
  if (nh.n_descsz == sizeof(uint32_t)) {
    std::optional<uint32_t> entry = ReadStruct<uint32_t>(area, desc_offset);
    if (!entry) return absl::InternalError("note descriptor out of range");  // checked
    return *entry;
  }
  if (nh.n_descsz != sizeof(uint64_t)) {
    return Invalid(absl::StrFormat(
        "%s: Xen PVH entry note has a %d-byte descriptor; expected 4 or 8 (an address)", where,
        nh.n_descsz));
  }
  std::optional<uint64_t> entry = ReadStruct<uint64_t>(area, desc_offset);
  if (!entry) return absl::InternalError("note descriptor out of range");  // checked
  if (*entry > UINT32_MAX) {
    return Invalid(absl::StrFormat(
        "%s: Xen PVH entry note gives 0x%x, above 4 GiB; the PVH entry is 32-bit", where,
        *entry));
  }
  return static_cast<uint32_t>(*entry);
}

// Walks the notes of one PT_NOTE segment or SHT_NOTE section and adds the sigvisor
// ABI and PVH entry notes in it to `found`. Other notes are skipped, but must be
// well-formed: a note running off the end of its area means a corrupt image.
absl::Status ScanNotes(Bytes area, uint64_t align, std::string_view where, FoundNotes& found) {
  uint64_t pos = 0;
  while (pos < area.size()) {
    std::optional<Elf64_Nhdr> nh = ReadStruct<Elf64_Nhdr>(area, pos);
    if (!nh) {
      return Invalid(absl::StrFormat("%s: truncated note header at offset 0x%x (area is %d bytes)",
                                     where, pos, area.size()));
    }
    // pos < 2^63 and the sizes are 32-bit: none of these sums can overflow.
    const uint64_t name_offset = pos + sizeof(Elf64_Nhdr);
    const uint64_t desc_offset = AlignUp(name_offset + nh->n_namesz, align);
    const uint64_t desc_end = desc_offset + nh->n_descsz;
    if (desc_offset > area.size() || desc_end > area.size()) {
      return Invalid(absl::StrFormat(
          "%s: note at offset 0x%x (name %d bytes, descriptor %d bytes) runs past the end of "
          "its area (%d bytes)",
          where, pos, nh->n_namesz, nh->n_descsz, area.size()));
    }
    if (IsNote(area, *nh, name_offset, SIGVISOR_NOTE_NAME, SIGVISOR_NOTE_TYPE_ABI)) {
      if (nh->n_descsz != sizeof(uint32_t)) {
        return Invalid(absl::StrFormat(
            "%s: sigvisor ABI note has a %d-byte descriptor; expected 4 (one uint32 version)",
            where, nh->n_descsz));
      }
      std::optional<uint32_t> version = ReadStruct<uint32_t>(area, desc_offset);
      if (!version) return absl::InternalError("note descriptor out of range");  // checked
      found.abi_versions.push_back(*version);
    } else if (IsNote(area, *nh, name_offset, SIGVISOR_NOTE_NAME, SIGVISOR_NOTE_TYPE_SMP)) {
      if (nh->n_descsz != sizeof(uint32_t)) {
        return Invalid(absl::StrFormat(
            "%s: sigvisor SMP note has a %d-byte descriptor; expected 4 (one uint32: the most "
            "CPUs the kernel runs on)",
            where, nh->n_descsz));
      }
      std::optional<uint32_t> cpus = ReadStruct<uint32_t>(area, desc_offset);
      if (!cpus) return absl::InternalError("note descriptor out of range");  // checked
      if (*cpus < 1 || *cpus > SIGVISOR_MAX_CPUS) {
        return Invalid(
            absl::StrFormat("%s: sigvisor SMP note gives %d CPUs; the ABI allows 1 to %d", where,
                            *cpus, SIGVISOR_MAX_CPUS));
      }
      found.smp_max_cpus.push_back(*cpus);
    } else if (IsNote(area, *nh, name_offset, kXenNoteName, kXenElfnotePhys32Entry)) {
      absl::StatusOr<uint32_t> entry = ReadPvhEntry(area, *nh, desc_offset, where);
      if (!entry.ok()) return entry.status();
      found.pvh_entries.push_back(*entry);
    }
    pos = AlignUp(desc_end, align);
  }
  return absl::OkStatus();
}

// The notes of every PT_NOTE segment and SHT_NOTE section.
absl::StatusOr<FoundNotes> ReadNotes(Bytes bytes, const std::vector<Elf64_Phdr>& phdrs,
                                     const std::vector<Elf64_Shdr>& shdrs,
                                     const std::vector<std::string>& names) {
  FoundNotes found;
  for (size_t i = 0; i < phdrs.size(); ++i) {
    const Elf64_Phdr& ph = phdrs[i];
    if (ph.p_type != PT_NOTE) continue;
    const std::string where = absl::StrFormat("program header %d (PT_NOTE)", i);
    std::optional<Bytes> area = SubSpan(bytes, ph.p_offset, ph.p_filesz);
    if (!area) return Invalid(OutsideFile(where, ph.p_offset, ph.p_filesz, bytes.size()));
    absl::Status s = ScanNotes(*area, NoteAlignment(ph.p_align), where, found);
    if (!s.ok()) return s;
  }
  for (size_t i = 0; i < shdrs.size(); ++i) {
    if (shdrs[i].sh_type != SHT_NOTE) continue;
    absl::StatusOr<Bytes> area = SectionBytes(bytes, shdrs[i]);
    if (!area.ok()) return area.status();
    const std::string where = absl::StrFormat("section %d (%s)", i, names[i]);
    absl::Status s = ScanNotes(*area, NoteAlignment(shdrs[i].sh_addralign), where, found);
    if (!s.ok()) return s;
  }
  return found;
}

// The one value copies of a note agree on; nullopt when there is no copy.
absl::StatusOr<std::optional<uint32_t>> Agreed(const std::vector<uint32_t>& copies,
                                               std::string_view what, bool hex) {
  if (copies.empty()) return std::optional<uint32_t>();
  for (uint32_t v : copies) {
    if (v == copies.front()) continue;
    return Invalid(hex ? absl::StrFormat("conflicting %s: 0x%x and 0x%x", what, copies.front(), v)
                       : absl::StrFormat("conflicting %s: %d and %d", what, copies.front(), v));
  }
  return std::optional<uint32_t>(copies.front());
}

}  // namespace

ElfImage ElfImage::Empty() { return ElfImage(std::make_shared<const std::vector<uint8_t>>()); }

absl::StatusOr<ElfImage> ElfImage::Parse(std::vector<uint8_t> bytes) {
  return Parse(std::move(bytes), ElfParseOptions{});
}

absl::StatusOr<ElfImage> ElfImage::Parse(std::vector<uint8_t> bytes,
                                         const ElfParseOptions& options) {
  // The buffer is moved to the heap once; from here on its address never changes,
  // which is what keeps the spans below valid when the ElfImage moves.
  ElfImage image(std::make_shared<const std::vector<uint8_t>>(std::move(bytes)));
  const Bytes file = image.bytes();

  absl::StatusOr<std::optional<MultibootHeader>> multiboot = FindMultibootHeader(file);
  if (!multiboot.ok()) return multiboot.status();
  image.multiboot_ = *multiboot;
  const bool aout_kludge =
      image.multiboot_ && (image.multiboot_->flags & kMultibootAoutKludge) != 0;
  const bool is_elf = file.size() >= SELFMAG && std::memcmp(file.data(), ELFMAG, SELFMAG) == 0;
  if (aout_kludge && !is_elf) {  // a flat binary: the header says it all
    image.elf_class_ = 0;
    image.type_ = ET_EXEC;
    image.bootable_ = true;
    return image.ApplyMultibootAddressFields();
  }

  absl::StatusOr<Elf64_Ehdr> ehdr = ReadHeader(file, options, image.multiboot_.has_value());
  if (!ehdr.ok()) return ehdr.status();
  image.elf_class_ = IsElf32(*ehdr) ? 32 : 64;
  image.entry_ = ehdr->e_entry;
  image.type_ = ehdr->e_type;

  absl::StatusOr<std::vector<Elf64_Phdr>> phdrs = ReadProgramHeaders(file, *ehdr);
  if (!phdrs.ok()) return phdrs.status();
  absl::StatusOr<std::vector<ElfSegment>> segments = ReadLoadSegments(file, *phdrs);
  if (!segments.ok() && !aout_kludge) return segments.status();
  if (segments.ok()) {
    if (absl::Status s = CheckNoOverlap(*segments); !s.ok()) return s;
  } else {
    segments = std::vector<ElfSegment>{};
  }
  const bool dynamic = HasInterpreter(*phdrs);
  if (dynamic && !options.allow_host_binaries) {
    return Invalid(
        "image has a PT_INTERP (dynamically linked); sigvisor boots static images: link with "
        "-static");
  }
  image.bootable_ = image.type_ == ET_EXEC && !dynamic;
  image.segments_ = *std::move(segments);
  image.ComputeLoadRange();

  absl::StatusOr<std::vector<Elf64_Shdr>> shdrs = ReadSectionHeaders(file, *ehdr);
  if (!shdrs.ok()) return shdrs.status();
  absl::StatusOr<std::vector<std::string>> names = ReadSectionNames(file, *ehdr, *shdrs);
  if (!names.ok()) return names.status();
  absl::StatusOr<SymbolTable> symbols = ReadSymbols(file, *shdrs, IsElf32(*ehdr));
  if (!symbols.ok()) return symbols.status();
  image.symbols_ = *std::move(symbols);
  absl::StatusOr<FoundNotes> notes = ReadNotes(file, *phdrs, *shdrs, *names);
  if (!notes.ok()) return notes.status();
  absl::StatusOr<std::optional<uint32_t>> abi =
      Agreed(notes->abi_versions, "sigvisor ABI notes: versions", /*hex=*/false);
  if (!abi.ok()) return abi.status();
  image.abi_version_ = *abi;
  absl::StatusOr<std::optional<uint32_t>> smp =
      Agreed(notes->smp_max_cpus, "sigvisor SMP notes: CPU counts", /*hex=*/false);
  if (!smp.ok()) return smp.status();
  image.smp_max_cpus_ = smp->value_or(0);
  absl::StatusOr<std::optional<uint32_t>> pvh =
      Agreed(notes->pvh_entries, "Xen PVH entry notes", /*hex=*/true);
  if (!pvh.ok()) return pvh.status();
  image.pvh_entry_ = *pvh;
  image.executable_sections_ = ExecutableSections(file, *shdrs, *names);
  // A sigvisor image also carries a Multiboot header for QEMU, but sigvisor boots it
  // by its program headers at its 64-bit entry.
  if (aout_kludge && !image.abi_version_) return image.ApplyMultibootAddressFields();
  if (image.segments_.empty()) return Invalid("no PT_LOAD segments; nothing to load");
  if (absl::Status s = CheckEntry(image.entry_, image.segments_); !s.ok()) return s;
  return image;
}

void ElfImage::ComputeLoadRange() {
  load_begin_ = segments_.empty() ? 0 : segments_.front().paddr;
  load_end_ = 0;
  for (const ElfSegment& s : segments_) {
    load_begin_ = std::min(load_begin_, s.paddr);
    load_end_ = std::max(load_end_, s.paddr + s.memsz);  // checked: no overflow
  }
}

// QEMU loads a kernel whose Multiboot header has the address fields by those fields,
// even when it is an ELF file: one segment, entered at entry_addr.
absl::StatusOr<ElfImage> ElfImage::ApplyMultibootAddressFields() {
  absl::StatusOr<MultibootAoutLoad> load = MultibootAoutLayout(bytes(), *multiboot_);
  if (!load.ok()) return load.status();
  segments_ = {ElfSegment{.paddr = load->load_addr,
                          .vaddr = load->load_addr,
                          .memsz = load->memsz,
                          .filesz = load->bytes.size(),
                          .flags = PF_R | PF_W | PF_X,
                          .file_bytes = load->bytes}};
  entry_ = load->entry;
  ComputeLoadRange();
  return std::move(*this);
}

}  // namespace sigvisor
