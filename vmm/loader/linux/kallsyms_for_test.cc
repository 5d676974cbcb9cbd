#include "vmm/loader/linux/kallsyms_for_test.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace sigvisor::linux_boot::testing {
namespace {

template <typename T>
void Append(std::vector<uint8_t>& out, T value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

// `.balign 8` at the address the next byte is loaded at.
void Align(std::vector<uint8_t>& out, uint64_t vaddr) {
  while ((vaddr + out.size()) % 8 != 0) out.push_back(0);
}

}  // namespace

KallsymsTables BuildKallsymsTables(const KallsymsSpec& spec) {
  // The tokens: each byte a name uses stands for itself, the digits always (the reader
  // finds the table by them); the spec's tokens take the lowest bytes left.
  std::array<std::string, 256> tokens;
  std::array<bool, 256> used{};
  for (const KallsymsSymbol& s : spec.symbols) {
    used[static_cast<uint8_t>(s.type)] = true;
    for (char c : s.name) used[static_cast<uint8_t>(c)] = true;
  }
  for (char c = '0'; c <= '9'; ++c) used[static_cast<uint8_t>(c)] = true;
  for (size_t i = 0; i < 256; ++i) {
    if (used[i]) tokens[i] = std::string(1, static_cast<char>(i));
  }
  std::vector<std::pair<std::string, uint8_t>> long_tokens;
  size_t next = 1;
  for (const std::string& token : spec.tokens) {
    while (next < 256 && used[next]) ++next;
    if (next == 256) throw std::runtime_error("no byte left for a token");
    tokens[next] = token;
    used[next] = true;
    long_tokens.push_back({token, static_cast<uint8_t>(next)});
  }
  std::sort(long_tokens.begin(), long_tokens.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });

  const size_t n = spec.symbols.size();
  std::vector<std::vector<uint8_t>> encoded(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string text = std::string(1, spec.symbols[i].type) + spec.symbols[i].name;
    for (size_t at = 0; at < text.size();) {
      bool matched = false;
      for (const auto& [token, code] : long_tokens) {
        if (text.compare(at, token.size(), token) == 0) {
          encoded[i].push_back(code);
          at += token.size();
          matched = true;
          break;
        }
      }
      if (!matched) encoded[i].push_back(static_cast<uint8_t>(text[at++]));
    }
  }

  // The addresses as scripts/kallsyms.c stores them.
  uint64_t relative_base = n > 0 ? spec.symbols[0].addr : 0;
  if (spec.absolute_percpu) {
    for (const KallsymsSymbol& s : spec.symbols) {
      if (s.type != 'A') {
        relative_base = s.addr;
        break;
      }
    }
  }
  std::vector<int32_t> offsets;
  for (const KallsymsSymbol& s : spec.symbols) {
    if (!spec.absolute_percpu) {
      offsets.push_back(static_cast<int32_t>(static_cast<uint32_t>(s.addr - relative_base)));
    } else if (s.type == 'A') {
      offsets.push_back(static_cast<int32_t>(s.addr));
    } else {
      offsets.push_back(static_cast<int32_t>(relative_base - s.addr - 1));
    }
  }

  KallsymsTables t;
  std::vector<uint8_t>& out = t.bytes;
  out.assign(spec.lead, 0xaa);
  auto write_offsets = [&] {
    Align(out, spec.vaddr);
    t.offsets = out.size();
    for (int32_t offset : offsets) Append(out, offset);
    Align(out, spec.vaddr);
    t.relative_base = out.size();
    Append(out, relative_base);
  };
  auto write_seqs = [&] {
    Align(out, spec.vaddr);
    t.seqs = out.size();
    std::vector<uint32_t> by_name(n);
    std::iota(by_name.begin(), by_name.end(), 0);
    std::stable_sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) {
      return spec.symbols[a].name < spec.symbols[b].name;
    });
    for (uint32_t seq : by_name) {
      out.push_back(static_cast<uint8_t>(seq >> 16));
      out.push_back(static_cast<uint8_t>(seq >> 8));
      out.push_back(static_cast<uint8_t>(seq));
    }
  };
  if (!spec.offsets_last) write_offsets();
  Align(out, spec.vaddr);
  t.num_syms = out.size();
  Append(out, static_cast<uint32_t>(n));
  Align(out, spec.vaddr);
  t.names = out.size();
  std::vector<uint32_t> markers;
  for (size_t i = 0; i < n; ++i) {
    if (i % 256 == 0) markers.push_back(static_cast<uint32_t>(out.size() - t.names));
    const size_t length = encoded[i].size();
    if (length < 0x80) {
      out.push_back(static_cast<uint8_t>(length));
    } else {
      out.push_back(static_cast<uint8_t>((length & 0x7f) | 0x80));
      out.push_back(static_cast<uint8_t>(length >> 7));
    }
    out.insert(out.end(), encoded[i].begin(), encoded[i].end());
  }
  Align(out, spec.vaddr);
  t.markers = out.size();
  for (uint32_t marker : markers) Append(out, marker);
  if (spec.seqs_of_names && !spec.offsets_last) write_seqs();
  Align(out, spec.vaddr);
  t.token_table = out.size();
  std::array<uint16_t, 256> index;
  for (size_t i = 0; i < 256; ++i) {
    index[i] = static_cast<uint16_t>(out.size() - t.token_table);
    out.insert(out.end(), tokens[i].begin(), tokens[i].end());
    out.push_back(0);
  }
  Align(out, spec.vaddr);
  t.token_index = out.size();
  for (uint16_t offset : index) Append(out, offset);
  if (spec.offsets_last) {
    write_offsets();
    if (spec.seqs_of_names) write_seqs();
  }
  Align(out, spec.vaddr);
  return t;
}

std::vector<uint8_t> KallsymsElf(const std::vector<uint8_t>& tables, uint64_t vaddr) {
  constexpr uint64_t kTextVaddr = 0xffffffff81000000;
  constexpr size_t kTextBytes = 0x40;
  constexpr uint64_t kKernelBase = 0xffffffff80000000;  // vaddr - paddr, as Linux links
  std::vector<uint8_t> out(sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr));
  const size_t text = out.size();
  for (size_t i = 0; i < kTextBytes; ++i) out.push_back(0xcc);
  const size_t data = out.size();
  out.insert(out.end(), tables.begin(), tables.end());

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_entry = kTextVaddr - kKernelBase;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 2;
  std::memcpy(out.data(), &eh, sizeof(eh));
  const std::array<Elf64_Phdr, 2> phdrs = {
      Elf64_Phdr{.p_type = PT_LOAD,
                 .p_flags = PF_R | PF_X,
                 .p_offset = text,
                 .p_vaddr = kTextVaddr,
                 .p_paddr = kTextVaddr - kKernelBase,
                 .p_filesz = kTextBytes,
                 .p_memsz = kTextBytes,
                 .p_align = 8},
      Elf64_Phdr{.p_type = PT_LOAD,
                 .p_flags = PF_R,
                 .p_offset = data,
                 .p_vaddr = vaddr,
                 .p_paddr = vaddr - kKernelBase,
                 .p_filesz = tables.size(),
                 .p_memsz = tables.size(),
                 .p_align = 8},
  };
  std::memcpy(out.data() + sizeof(Elf64_Ehdr), phdrs.data(), sizeof(phdrs));
  return out;
}

std::vector<uint8_t> KallsymsElf(const KallsymsSpec& spec) {
  return KallsymsElf(BuildKallsymsTables(spec).bytes, spec.vaddr);
}

KallsymsSpec SmallKernel() {
  KallsymsSpec spec;
  spec.symbols = {
      {.addr = 0x0, .type = 'A', .name = "fixed_percpu_data"},
      {.addr = 0x1000, .type = 'A', .name = "cpu_debug_store"},
      {.addr = 0xffffffff81000000, .type = 'T', .name = "_stext"},
      {.addr = 0xffffffff81000010, .type = 't', .name = "x86_64_start"},
      {.addr = 0xffffffff81000020, .type = 'T', .name = "exc_divide_error"},
      {.addr = 0xffffffff81000030, .type = 'W', .name = "arch_cpu_idle9"},
      {.addr = 0xffffffff81000038, .type = 'T', .name = "_etext"},
      {.addr = 0xffffffff82000000, .type = 'D', .name = "jiffies_64"},
      {.addr = 0xffffffff82000010, .type = 'd', .name = "entry_0123456789"},
  };
  spec.tokens = {"exc_", "_e", "T_"};
  return spec;
}

}  // namespace sigvisor::linux_boot::testing
