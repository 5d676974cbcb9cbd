// `sigvisor sites`: the trap sites of an image, as the patch mechanism arms them.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/inject/uaccess_sites.h"
#include "arch/x86_64/vmm/trap/decoder.h"
#include "arch/x86_64/vmm/trap/site_table.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/launch/image.h"

namespace sigvisor::cli {

namespace {

// --uaccess: the kernel's exception-table entries, where page injections aim.
int PrintUserAccessSites(const launch::LoadedImage& image, const trap::Decoder& decoder, bool json) {
  absl::StatusOr<std::vector<x86::UserAccessSite>> sites = x86::UserAccessSites(image.elf);
  if (!sites.ok()) return ReportError(sites.status());
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::string text = absl::StrFormat("%s: %d user-access sites\n", image.label, sites->size());
  if (!sites->empty()) {
    absl::StrAppendFormat(&text, "  %-18s %-32s %-18s %s\n", "address", "symbol", "fixup",
                          "disassembly");
  }
  for (const x86::UserAccessSite& site : *sites) {
    std::string disassembly;
    for (const ElfSection& section : image.elf.executable_sections()) {
      if (site.address < section.vaddr || site.address - section.vaddr >= section.bytes.size()) {
        continue;
      }
      if (auto insn = decoder.Decode(section.bytes.subspan(site.address - section.vaddr),
                                     site.address)) {
        disassembly = insn->text;
      }
    }
    const std::string address = absl::StrFormat("%#x", site.address);
    const std::string fixup = absl::StrFormat("%#x", site.fixup);
    rows.push_back({{"address", address},
                    {"symbol", site.symbol},
                    {"function", site.function},
                    {"fixup", fixup},
                    {"disassembly", disassembly}});
    absl::StrAppendFormat(&text, "  %-18s %-32s %-18s %s\n", address, site.symbol, fixup,
                          disassembly);
  }
  if (json) {
    nlohmann::ordered_json doc = {
        {"schema", "sigvisor.uaccess_sites/1"}, {"image", image.label}, {"sites", rows}};
    std::printf("%s\n", WithBuildInfo(doc).dump(2).c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
  return 0;
}

}  // namespace

// `sigvisor help`'s line for `sites`, and what `sigvisor help sites` prints above
// the flags (SitesFlags, options.cc).
constexpr CommandHelp kSitesHelp{
    "list an image's trap sites (debug-register moves, segment loads)",
    "Scans the image's executable sections with Capstone (restarting at each ELF\n"
    "symbol) and lists every instruction --trap=patch arms: moves to and from DR0-DR7\n"
    "and segment-register loads (mov/pop to a segment register, lfs/lgs/lss, swapgs,\n"
    "wrfsbase/wrgsbase, wrmsr), with address, symbol+offset, bytes and disassembly.\n"
    "\nWith --uaccess it lists instead the kernel's user-access instructions (its\n"
    "exception table: each access and the fixup a fault there resumes at), the\n"
    "addresses to aim page injections at (docs/inject.md).\n"
    "\nExamples:\n"
    "  sigvisor sites\n"
    "  sigvisor sites --image path/to/guest.elf --json\n"
    "  sigvisor sites --uaccess --variant uaccess=cerr",
};

int SitesCommand(const SitesOptions& options) {
  if (!options.args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor sites` takes no argument '%s' (use --image)",
                                       options.args[0]));
  }
  absl::StatusOr<launch::LoadedImage> image = launch::LoadImage(options.image, options.variant);
  if (!image.ok()) return ReportError(image.status());
  absl::StatusOr<trap::Decoder> decoder = trap::Decoder::Create();
  if (!decoder.ok()) return ReportError(decoder.status());
  if (options.uaccess) return PrintUserAccessSites(*image, *decoder, options.json);
  absl::StatusOr<trap::SiteTable> sites = trap::ScanImage(image->elf, *decoder);
  if (!sites.ok()) return ReportError(sites.status());

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::string text = absl::StrFormat("%s: %d trap sites\n", image->label, sites->size());
  if (!sites->empty()) {
    absl::StrAppendFormat(&text, "  %-18s %-28s %-13s %-24s %s\n", "address", "symbol", "kind",
                          "bytes", "disassembly");
  }
  for (const trap::TrapSite& site : sites->sites()) {
    std::vector<std::string> hex;
    for (uint8_t b : site.bytes) hex.push_back(absl::StrFormat("%02x", b));
    const std::string bytes = absl::StrJoin(hex, " ");
    const std::string kind(trap::SiteClassName(site.insn.op));
    const std::string address = absl::StrFormat("%#x", site.address);
    rows.push_back({{"address", address},
                    {"symbol", site.symbol},
                    {"kind", kind},
                    {"bytes", bytes},
                    {"disassembly", site.text}});
    absl::StrAppendFormat(&text, "  %-18s %-28s %-13s %-24s %s\n", address, site.symbol, kind,
                          bytes, site.text);
  }
  if (options.json) {
    nlohmann::ordered_json doc = {
        {"schema", "sigvisor.sites/1"}, {"image", image->label}, {"sites", rows}};
    std::printf("%s\n", WithBuildInfo(doc).dump(2).c_str());
  } else {
    std::fputs(text.c_str(), stdout);
  }
  return 0;
}

}  // namespace sigvisor::cli
