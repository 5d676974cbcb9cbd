#include "arch/x86_64/vmm/gdb/x86_64_target.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sigvisor::gdb {
namespace {

struct RegSpec {
  const char* name;
  int bits;
  const char* type;
  const char* group;  // "" for the default
};

// gdb's amd64 numbering (features/i386/64bit-core.xml, 64bit-segments.xml).
constexpr RegSpec kRegs[kRegCount] = {
    {"rax", 64, "int64", ""},      {"rbx", 64, "int64", ""},     {"rcx", 64, "int64", ""},
    {"rdx", 64, "int64", ""},      {"rsi", 64, "int64", ""},     {"rdi", 64, "int64", ""},
    {"rbp", 64, "data_ptr", ""},   {"rsp", 64, "data_ptr", ""},  {"r8", 64, "int64", ""},
    {"r9", 64, "int64", ""},       {"r10", 64, "int64", ""},     {"r11", 64, "int64", ""},
    {"r12", 64, "int64", ""},      {"r13", 64, "int64", ""},     {"r14", 64, "int64", ""},
    {"r15", 64, "int64", ""},      {"rip", 64, "code_ptr", ""},  {"eflags", 32, "int32", ""},
    {"cs", 32, "int32", ""},       {"ss", 32, "int32", ""},      {"ds", 32, "int32", ""},
    {"es", 32, "int32", ""},       {"fs", 32, "int32", ""},      {"gs", 32, "int32", ""},
    {"st0", 80, "i387_ext", ""},   {"st1", 80, "i387_ext", ""},  {"st2", 80, "i387_ext", ""},
    {"st3", 80, "i387_ext", ""},   {"st4", 80, "i387_ext", ""},  {"st5", 80, "i387_ext", ""},
    {"st6", 80, "i387_ext", ""},   {"st7", 80, "i387_ext", ""},  {"fctrl", 32, "int", "float"},
    {"fstat", 32, "int", "float"}, {"ftag", 32, "int", "float"}, {"fiseg", 32, "int", "float"},
    {"fioff", 32, "int", "float"}, {"foseg", 32, "int", "float"}, {"fooff", 32, "int", "float"},
    {"fop", 32, "int", "float"},   {"fs_base", 64, "int", ""},   {"gs_base", 64, "int", ""},
    {"cr0", 64, "int64", "system"}, {"cr2", 64, "int64", "system"},
    {"cr3", 64, "int64", "system"}, {"cr4", 64, "int64", "system"},
    {"efer", 64, "int64", "system"},
};

constexpr int kFirstX87 = 24;
constexpr int kFsBase = 40;
constexpr int kFirstSystem = 42;

// The value of a 64-bit-or-less register, or nullopt for the x87 ones (zero).
std::optional<uint64_t> Value(const X86Registers& r, int n) {
  if (n < 16) return r.gpr[n];
  if (n == kRegRip) return r.rip;
  if (n == kRegEflags) return r.rflags;
  if (n < kFirstX87) return r.segment[n - 18];
  if (n < kFsBase) return std::nullopt;
  switch (n) {
    case 40: return r.fs_base;
    case 41: return r.gs_base;
    case 42: return r.cr0;
    case 43: return r.cr2;
    case 44: return r.cr3;
    case 45: return r.cr4;
    case 46: return r.efer;
    default: return std::nullopt;
  }
}

void Store(X86Registers& r, int n, uint64_t v) {
  if (n < 16) {
    r.gpr[n] = v;
  } else if (n == kRegRip) {
    r.rip = v;
  } else if (n == kRegEflags) {
    r.rflags = v;
  } else if (n < kFirstX87) {
    r.segment[n - 18] = static_cast<uint32_t>(v);
  } else if (n == 40) {
    r.fs_base = v;
  } else if (n == 41) {
    r.gs_base = v;
  }
  // x87 and control registers: read-only here.
}

}  // namespace

size_t X86RegisterSize(int number) {
  if (number < 0 || number >= kRegCount) return 0;
  return static_cast<size_t>(kRegs[number].bits / 8);
}

std::string X86TargetXml() {
  std::string xml =
      "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
      "<target version=\"1.0\">\n<architecture>i386:x86-64</architecture>\n";
  auto feature = [&](const char* name, int begin, int end) {
    absl::StrAppend(&xml, "<feature name=\"", name, "\">\n");
    for (int n = begin; n < end; ++n) {
      absl::StrAppendFormat(&xml, "  <reg name=\"%s\" bitsize=\"%d\" type=\"%s\" regnum=\"%d\"%s/>\n",
                            kRegs[n].name, kRegs[n].bits, kRegs[n].type, n,
                            kRegs[n].group[0] ? absl::StrCat(" group=\"", kRegs[n].group, "\"")
                                              : std::string());
    }
    xml += "</feature>\n";
  };
  feature("org.gnu.gdb.i386.core", 0, kFsBase);
  feature("org.gnu.gdb.i386.segments", kFsBase, kFirstSystem);
  feature("org.sigvisor.x86.system", kFirstSystem, kRegCount);
  xml += "</target>\n";
  return xml;
}

std::optional<std::vector<uint8_t>> PackX86Register(const X86Registers& regs, int number) {
  const size_t size = X86RegisterSize(number);
  if (size == 0) return std::nullopt;
  std::vector<uint8_t> raw(size, 0);
  if (std::optional<uint64_t> v = Value(regs, number)) {
    for (size_t i = 0; i < size && i < 8; ++i) raw[i] = static_cast<uint8_t>(*v >> (8 * i));
  }
  return raw;
}

std::vector<uint8_t> PackX86Registers(const X86Registers& regs) {
  std::vector<uint8_t> raw;
  for (int n = 0; n < kRegCount; ++n) {
    std::vector<uint8_t> one = *PackX86Register(regs, n);
    raw.insert(raw.end(), one.begin(), one.end());
  }
  return raw;
}

bool UnpackX86Register(int number, std::span<const uint8_t> raw, X86Registers& regs) {
  const size_t size = X86RegisterSize(number);
  if (size == 0 || raw.size() != size) return false;
  if (size <= 8) {
    uint64_t v = 0;
    for (size_t i = 0; i < size; ++i) v |= uint64_t{raw[i]} << (8 * i);
    Store(regs, number, v);
  }
  return true;
}

bool UnpackX86Registers(std::span<const uint8_t> raw, X86Registers& regs) {
  size_t at = 0;
  for (int n = 0; n < kRegCount && at < raw.size(); ++n) {
    const size_t size = X86RegisterSize(n);
    if (raw.size() - at < size) return false;
    UnpackX86Register(n, raw.subspan(at, size), regs);
    at += size;
  }
  return at == raw.size();
}

}  // namespace sigvisor::gdb
