#include "arch/x86_64/vmm/inject/uaccess_sites.h"

#include <cstring>
#include <optional>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/white_box.h"

namespace sigvisor::x86 {
namespace {

// The file bytes behind [vaddr, vaddr + len) of one loaded segment, or nullopt.
std::optional<std::span<const uint8_t>> BytesAt(const ElfImage& image, uint64_t vaddr,
                                                uint64_t len) {
  for (const ElfSegment& segment : image.segments()) {
    if (vaddr < segment.vaddr || vaddr - segment.vaddr > segment.filesz ||
        len > segment.filesz - (vaddr - segment.vaddr)) {
      continue;
    }
    return segment.file_bytes.subspan(vaddr - segment.vaddr, len);
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::vector<UserAccessSite>> UserAccessSites(const ElfImage& image) {
  const SymbolTable& symbols = image.symbols();
  std::optional<Symbol> start = symbols.Find(white_box::kExTableStart);
  std::optional<Symbol> stop = symbols.Find(white_box::kExTableStop);
  std::vector<UserAccessSite> sites;
  if (!start || !stop) return sites;
  constexpr uint64_t kEntryBytes = 16;
  if (stop->addr < start->addr || (stop->addr - start->addr) % kEntryBytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the image's exception table [%#x, %#x) is not a whole number of entries", start->addr,
        stop->addr));
  }
  const uint64_t len = stop->addr - start->addr;
  std::optional<std::span<const uint8_t>> table = BytesAt(image, start->addr, len);
  if (!table) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the image's exception table at %#x is not in its loaded bytes", start->addr));
  }
  for (uint64_t at = 0; at < len; at += kEntryBytes) {
    UserAccessSite site;
    std::memcpy(&site.address, table->data() + at, 8);
    std::memcpy(&site.fixup, table->data() + at + 8, 8);
    site.symbol = symbols.Symbolize(site.address);
    if (const Symbol* symbol = symbols.Lookup(site.address)) site.function = symbol->name;
    sites.push_back(std::move(site));
  }
  return sites;
}

}  // namespace sigvisor::x86
