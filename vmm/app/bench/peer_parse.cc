// What the side-by-side bench reads as text: --peer's list of peers, and the guest's
// timing lines on its console (the same under sigvisor and QEMU).
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "vmm/app/bench/peer.h"

namespace sigvisor::bench {
namespace {

constexpr char kQemu[] = "qemu-system-x86_64";

}  // namespace

absl::StatusOr<std::vector<PeerKind>> ParsePeerList(const std::string& text) {
  std::vector<PeerKind> peers;
  for (absl::string_view raw : absl::StrSplit(text, ',')) {
    const std::string name(absl::StripAsciiWhitespace(raw));
    if (name.empty()) continue;
    PeerKind kind;
    if (name == "qemu-kvm") {
      kind = {name, kQemu, "kvm"};
    } else if (name == "qemu-tcg") {
      kind = {name, kQemu, "tcg"};
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("--peer: '%s' is not a peer (give qemu-kvm, qemu-tcg or both)", name));
    }
    for (const PeerKind& seen : peers) {
      if (seen.name == name) {
        return absl::InvalidArgumentError(absl::StrFormat("--peer: %s is listed twice", name));
      }
    }
    peers.push_back(kind);
  }
  if (peers.empty()) return absl::InvalidArgumentError("--peer is empty (give qemu-kvm, qemu-tcg)");
  return peers;
}

std::map<std::string, PeerPhase> ParseTimingLines(const std::string& console,
                                                  const std::string& workload) {
  std::map<std::string, PeerPhase> phases;
  for (absl::string_view line : absl::StrSplit(console, '\n')) {
    const size_t colon = line.find(": ");
    const size_t per = line.find(" tsc cycles per ");
    if (colon == absl::string_view::npos || per == absl::string_view::npos || per < colon) {
      continue;
    }
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view counts = line.substr(colon + 2, per - colon - 2);  // "100 signal, 123"
    const size_t space = counts.find(' ');
    const size_t comma = counts.rfind(", ");
    if (space == absl::string_view::npos || comma == absl::string_view::npos) continue;
    PeerPhase phase;
    if (!absl::SimpleAtoi(counts.substr(0, space), &phase.ops) ||
        !absl::SimpleAtoi(counts.substr(comma + 2), &phase.tsc_cycles_per_op)) {
      continue;
    }
    std::string phase_name(name);  // one word: the phase ("divzero", hello's "getpid")
    if (const size_t blank = name.find(' '); blank != absl::string_view::npos) {
      if (name.substr(0, blank) != workload) continue;
      phase_name = std::string(name.substr(blank + 1));
    }
    phases[absl::StrCat(workload, "/", phase_name)] = phase;
  }
  return phases;
}

}  // namespace sigvisor::bench
