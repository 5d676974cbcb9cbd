#include "arch/x86_64/vmm/trap/site_table.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"

namespace sigvisor::trap {
namespace {

// Where the byte linked at `vaddr` lands in guest RAM: through the PT_LOAD segment
// whose file bytes hold it.
std::optional<uint64_t> PhysicalAddress(const ElfImage& image, uint64_t vaddr, uint64_t len) {
  for (const ElfSegment& segment : image.segments()) {
    if (vaddr >= segment.vaddr && vaddr - segment.vaddr <= segment.filesz &&
        len <= segment.filesz - (vaddr - segment.vaddr)) {
      return segment.paddr + (vaddr - segment.vaddr);
    }
  }
  return std::nullopt;
}

}  // namespace

SiteTable::SiteTable(std::vector<TrapSite> sites) : sites_(std::move(sites)) {
  std::sort(sites_.begin(), sites_.end(),
            [](const TrapSite& a, const TrapSite& b) { return a.address < b.address; });
}

const TrapSite* SiteTable::Find(uint64_t address) const {
  auto it = std::lower_bound(sites_.begin(), sites_.end(), address,
                             [](const TrapSite& site, uint64_t a) { return site.address < a; });
  return it != sites_.end() && it->address == address ? &*it : nullptr;
}

absl::StatusOr<SiteTable> ScanImage(const ElfImage& image, const Decoder& decoder) {
  std::vector<TrapSite> sites;
  absl::Status error;
  for (const ElfSection& section : image.executable_sections()) {
    const uint64_t begin = section.vaddr;
    const uint64_t end = begin + section.bytes.size();
    // Restart points: the section's start and every symbol inside it.
    std::set<uint64_t> starts = {begin};
    for (const Symbol& symbol : image.symbols().symbols()) {
      if (symbol.addr > begin && symbol.addr < end) starts.insert(symbol.addr);
    }
    for (auto it = starts.begin(); it != starts.end(); ++it) {
      const uint64_t from = *it;
      const uint64_t to = std::next(it) == starts.end() ? end : *std::next(it);
      decoder.Sweep(section.bytes.subspan(from - begin, to - from), from,
                    [&](const DecodedInsn& decoded) {
                      std::optional<uint64_t> physical =
                          PhysicalAddress(image, decoded.address, decoded.length);
                      if (!physical) {
                        error = absl::InvalidArgumentError(absl::StrFormat(
                            "trap site %#x (%s) is in no loaded segment of the image",
                            decoded.address, image.symbols().Symbolize(decoded.address)));
                        return;
                      }
                      TrapSite site;
                      site.address = decoded.address;
                      site.physical = *physical;
                      const auto* first = section.bytes.data() + (decoded.address - begin);
                      site.bytes.assign(first, first + decoded.length);
                      site.symbol = image.symbols().Symbolize(decoded.address);
                      site.text = decoded.text;
                      site.insn = *decoded.trap;
                      sites.push_back(std::move(site));
                    });
      if (!error.ok()) return error;
    }
  }
  return SiteTable(std::move(sites));
}

absl::Status PatchSites(const SiteTable& sites, GuestMemory& memory,
                        bool include_debug_register_sites) {
  std::vector<const TrapSite*> chosen;
  for (const TrapSite& site : sites.sites()) {
    const bool debug_register = site.insn.op == TrapOp::kMovToDr ||
                                site.insn.op == TrapOp::kMovFromDr;
    if (debug_register && !include_debug_register_sites) continue;
    std::vector<uint8_t> now(site.bytes.size());
    if (absl::Status s = memory.Read(site.physical, now); !s.ok()) return s;
    if (now != site.bytes) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "trap site %#x (%s) does not hold its instruction in guest RAM at %#x", site.address,
          site.symbol, site.physical));
    }
    chosen.push_back(&site);
  }
  for (const TrapSite* site : chosen) {
    if (absl::Status s = memory.WriteObject(site->physical, kTrapByte); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace sigvisor::trap
