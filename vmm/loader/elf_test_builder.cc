#include "vmm/loader/elf_test_builder.h"

#include <algorithm>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor::testing {
namespace {

uint64_t AlignUp(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

// Appends `n` bytes to `out` and returns their offset.
uint64_t Append(std::vector<uint8_t>& out, const void* data, size_t n) {
  const uint64_t offset = out.size();
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + n);
  return offset;
}

void Pad(std::vector<uint8_t>& out, uint64_t align) { out.resize(AlignUp(out.size(), align)); }

std::vector<uint8_t> EncodeNotes(const std::vector<TestNote>& notes) {
  std::vector<uint8_t> blob;
  for (const TestNote& note : notes) {
    Elf64_Nhdr nh{.n_namesz = static_cast<Elf64_Word>(note.owner.size() + 1),
                  .n_descsz = static_cast<Elf64_Word>(note.desc.size()),
                  .n_type = note.type};
    Append(blob, &nh, sizeof(nh));
    Append(blob, note.owner.c_str(), note.owner.size() + 1);
    Pad(blob, 4);
    Append(blob, note.desc.data(), note.desc.size());
    Pad(blob, 4);
  }
  return blob;
}

uint64_t SegmentMemsz(const TestSegment& s) { return s.memsz != 0 ? s.memsz : s.data.size(); }
uint64_t SegmentVaddr(const TestSegment& s) { return s.vaddr.value_or(s.paddr); }

}  // namespace

ElfBuilder& ElfBuilder::AddAbiNote(uint32_t version) {
  std::vector<uint8_t> desc(sizeof(version));
  std::memcpy(desc.data(), &version, sizeof(version));
  return AddNote({.owner = SIGVISOR_NOTE_NAME, .type = SIGVISOR_NOTE_TYPE_ABI, .desc = desc});
}

BuiltElf ElfBuilder::Build() const {
  BuiltElf built;
  std::vector<uint8_t>& out = built.bytes;
  out.resize(sizeof(Elf64_Ehdr));

  // Program headers, then the bytes they point at.
  const bool note_segment = !notes_.empty() && notes_in_segment_;
  const size_t phnum = segments_.size() + (note_segment ? 1 : 0);
  const uint64_t phoff = out.size();
  out.resize(phoff + phnum * sizeof(Elf64_Phdr));
  std::vector<uint64_t> data_offsets;
  for (const TestSegment& s : segments_) {
    Pad(out, 16);
    data_offsets.push_back(Append(out, s.data.data(), s.data.size()));
  }
  const std::vector<uint8_t> note_blob = EncodeNotes(notes_);
  Pad(out, 4);
  const uint64_t note_offset = Append(out, note_blob.data(), note_blob.size());

  for (size_t i = 0; i < segments_.size(); ++i) {
    const TestSegment& s = segments_[i];
    Elf64_Phdr ph{.p_type = s.type,
                  .p_flags = s.flags,
                  .p_offset = data_offsets[i],
                  .p_vaddr = SegmentVaddr(s),
                  .p_paddr = s.paddr,
                  .p_filesz = s.data.size(),
                  .p_memsz = SegmentMemsz(s),
                  .p_align = s.align};
    StoreAt(out, phoff + i * sizeof(Elf64_Phdr), ph);
  }
  if (note_segment) {
    Elf64_Phdr ph{.p_type = PT_NOTE,
                  .p_flags = PF_R,
                  .p_offset = note_offset,
                  .p_filesz = note_blob.size(),
                  .p_memsz = note_blob.size(),
                  .p_align = 4};
    StoreAt(out, phoff + segments_.size() * sizeof(Elf64_Phdr), ph);
  }

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh.e_type = type_;
  eh.e_machine = machine_;
  eh.e_version = EV_CURRENT;
  eh.e_entry = entry_;
  eh.e_phoff = phnum > 0 ? phoff : 0;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<uint16_t>(phnum);

  if (strip_) {
    StoreAt(out, 0, eh);
    return built;
  }

  // Section headers: the content sections first, named as they are added.
  std::vector<Elf64_Shdr> shdrs(1);  // [0]: the null section
  std::string shstrtab(1, '\0');
  auto add = [&](const std::string& name, Elf64_Shdr sh) {
    sh.sh_name = static_cast<Elf64_Word>(shstrtab.size());
    shstrtab += name;
    shstrtab += '\0';
    built.section_index[name] = static_cast<uint16_t>(shdrs.size());
    shdrs.push_back(sh);
    return shdrs.size() - 1;
  };
  for (size_t i = 0; i < segments_.size(); ++i) {
    const TestSegment& s = segments_[i];
    uint64_t flags = SHF_ALLOC;
    if (s.flags & PF_X) flags |= SHF_EXECINSTR;
    if (s.flags & PF_W) flags |= SHF_WRITE;
    if (!s.section.empty()) {
      add(s.section, {.sh_type = SHT_PROGBITS,
                      .sh_flags = flags,
                      .sh_addr = SegmentVaddr(s),
                      .sh_offset = data_offsets[i],
                      .sh_size = s.data.size(),
                      .sh_addralign = 16});
    }
    if (!s.bss_section.empty()) {
      add(s.bss_section, {.sh_type = SHT_NOBITS,
                          .sh_flags = flags,
                          .sh_addr = SegmentVaddr(s) + s.data.size(),
                          .sh_offset = data_offsets[i] + s.data.size(),
                          .sh_size = SegmentMemsz(s) - s.data.size(),
                          .sh_addralign = 16});
    }
  }
  if (!notes_.empty() && notes_in_section_) {
    add(".note.sigvisor", {.sh_type = SHT_NOTE,
                           .sh_flags = SHF_ALLOC,
                           .sh_offset = note_offset,
                           .sh_size = note_blob.size(),
                           .sh_addralign = 4});
  }
  size_t symtab_index = 0, strtab_index = 0;
  if (!symbols_.empty()) {
    symtab_index = add(".symtab", {.sh_type = SHT_SYMTAB});
    strtab_index = add(".strtab", {.sh_type = SHT_STRTAB});
  }
  const size_t shstrtab_index = add(".shstrtab", {.sh_type = SHT_STRTAB});

  // Now every name is known: write the string tables and the symbols.
  shdrs[shstrtab_index].sh_offset = Append(out, shstrtab.data(), shstrtab.size());
  shdrs[shstrtab_index].sh_size = shstrtab.size();
  shdrs[shstrtab_index].sh_addralign = 1;
  if (!symbols_.empty()) {
    std::vector<TestSymbol> sorted = symbols_;
    // ELF wants the locals first; sh_info is the index of the first non-local.
    std::stable_partition(sorted.begin(), sorted.end(),
                          [](const TestSymbol& s) { return s.bind == STB_LOCAL; });
    const size_t locals = std::count_if(sorted.begin(), sorted.end(),
                                        [](const TestSymbol& s) { return s.bind == STB_LOCAL; });
    std::string strtab(1, '\0');
    std::vector<Elf64_Sym> syms(1);  // [0]: the null symbol
    for (const TestSymbol& s : sorted) {
      syms.push_back({.st_name = static_cast<Elf64_Word>(strtab.size()),
                      .st_info = static_cast<unsigned char>(ELF64_ST_INFO(s.bind, s.type)),
                      .st_shndx = s.shndx,
                      .st_value = s.value,
                      .st_size = s.size});
      strtab += s.name;
      strtab += '\0';
    }
    Elf64_Shdr& str = shdrs[strtab_index];
    str.sh_offset = Append(out, strtab.data(), strtab.size());
    str.sh_size = strtab.size();
    str.sh_addralign = 1;
    Pad(out, 8);
    Elf64_Shdr& sym = shdrs[symtab_index];
    sym.sh_offset = Append(out, syms.data(), syms.size() * sizeof(Elf64_Sym));
    sym.sh_size = syms.size() * sizeof(Elf64_Sym);
    sym.sh_link = static_cast<Elf64_Word>(strtab_index);
    sym.sh_info = static_cast<Elf64_Word>(locals + 1);
    sym.sh_entsize = sizeof(Elf64_Sym);
    sym.sh_addralign = 8;
  }

  Pad(out, 8);
  eh.e_shoff = Append(out, shdrs.data(), shdrs.size() * sizeof(Elf64_Shdr));
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<uint16_t>(shdrs.size());
  eh.e_shstrndx = static_cast<uint16_t>(shstrtab_index);
  StoreAt(out, 0, eh);
  return built;
}

ElfBuilder ValidGuest() {
  std::vector<uint8_t> text(0x40);
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> data(0x20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(0xd0 + i);
  ElfBuilder b;
  b.SetEntry(kEntry)
      .AddSegment({.flags = PF_R | PF_X, .paddr = kTextPaddr, .data = text, .section = ".text"})
      .AddSegment({.flags = PF_R | PF_W,
                   .paddr = kDataPaddr,
                   .data = data,
                   .memsz = 0x2000,
                   .section = ".data",
                   .bss_section = ".bss"})
      .AddAbiNote(SIGVISOR_ABI_VERSION)
      .AddSymbol({.name = "_start", .value = 0x100000, .size = 0x10})
      .AddSymbol({.name = "kernel_main", .value = 0x100010, .size = 0x30})
      .AddSymbol({.name = "isr_stub", .value = 0x100040, .type = STT_NOTYPE})
      .AddSymbol({.name = "boot_info", .value = 0x101000, .size = 0x20, .type = STT_OBJECT,
                  .shndx = 2})
      .AddSymbol({.name = "counter", .value = 0x101020, .size = 8, .type = STT_OBJECT,
                  .bind = STB_LOCAL, .shndx = 3});
  return b;
}

void PatchEhdr(std::vector<uint8_t>& bytes, const std::function<void(Elf64_Ehdr&)>& patch) {
  Elf64_Ehdr eh = LoadAt<Elf64_Ehdr>(bytes, 0);
  patch(eh);
  StoreAt(bytes, 0, eh);
}

void PatchPhdr(std::vector<uint8_t>& bytes, size_t index,
               const std::function<void(Elf64_Phdr&)>& patch) {
  const uint64_t offset = LoadAt<Elf64_Ehdr>(bytes, 0).e_phoff + index * sizeof(Elf64_Phdr);
  Elf64_Phdr ph = LoadAt<Elf64_Phdr>(bytes, offset);
  patch(ph);
  StoreAt(bytes, offset, ph);
}

void PatchShdr(std::vector<uint8_t>& bytes, size_t index,
               const std::function<void(Elf64_Shdr&)>& patch) {
  const uint64_t offset = LoadAt<Elf64_Ehdr>(bytes, 0).e_shoff + index * sizeof(Elf64_Shdr);
  Elf64_Shdr sh = LoadAt<Elf64_Shdr>(bytes, offset);
  patch(sh);
  StoreAt(bytes, offset, sh);
}

Elf64_Shdr GetShdr(const std::vector<uint8_t>& bytes, size_t index) {
  return LoadAt<Elf64_Shdr>(bytes, LoadAt<Elf64_Ehdr>(bytes, 0).e_shoff +
                                       index * sizeof(Elf64_Shdr));
}

}  // namespace sigvisor::testing
