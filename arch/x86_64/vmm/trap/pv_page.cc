#include "arch/x86_64/vmm/trap/pv_page.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "absl/strings/str_format.h"

namespace sigvisor::trap {
namespace {

constexpr int kDrIndexes[] = {0, 1, 2, 3, 6, 7};  // the registers a guest can write
constexpr size_t kSegmentBases = 3;               // FS_BASE, GS_BASE, KERNEL_GS_BASE

uint64_t Since(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }

// The ledger's name of a site entry's kind; empty for one the VMM does not know.
std::string_view KindName(uint32_t kind) {
  switch (kind) {
    case SIGVISOR_PV_SITE_DR_WRITE: return "dr_write";
    case SIGVISOR_PV_SITE_SEGMENT_BASE: return "segment_load";
    default: return {};
  }
}

}  // namespace

absl::StatusOr<PvPage> PvPage::Create(GuestMemory& memory, uint64_t gpa,
                                      const DebugRegs& hardware) {
  if (gpa % SIGVISOR_PV_PAGE_BYTES != 0 || gpa == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a pv page at guest-physical %#x: it must be a nonzero page address", gpa));
  }
  absl::StatusOr<std::span<uint8_t>> bytes = memory.Span(gpa, SIGVISOR_PV_PAGE_BYTES);
  if (!bytes.ok()) return bytes.status();
  std::fill(bytes->begin(), bytes->end(), 0);
  sigvisor_pv_page page = {};
  page.magic = SIGVISOR_PV_PAGE_MAGIC;
  page.abi_version = SIGVISOR_ABI_VERSION;
  for (int i = 0; i < 4; ++i) page.dr[i] = page.loaded[i] = hardware.dr[i];
  page.dr[6] = page.loaded[6] = hardware.dr6;
  page.dr[7] = page.loaded[7] = hardware.dr7;
  if (absl::Status s = memory.WriteObject(gpa, page); !s.ok()) return s;
  PvPage pv(memory, gpa);
  pv.last_ = page;
  return pv;
}

absl::StatusOr<PvPage> PvPage::Adopt(GuestMemory& memory, uint64_t gpa) {
  absl::StatusOr<sigvisor_pv_page> page = memory.ReadObject<sigvisor_pv_page>(gpa);
  if (!page.ok()) return page.status();
  if (page->magic != SIGVISOR_PV_PAGE_MAGIC || page->abi_version != SIGVISOR_ABI_VERSION) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the restored guest's pv page at %#x has magic %#x and ABI %u, not a pv page of ABI %u",
        gpa, page->magic, page->abi_version, SIGVISOR_ABI_VERSION));
  }
  PvPage pv(memory, gpa);
  pv.last_ = *page;
  return pv;
}

absl::StatusOr<sigvisor_pv_page> PvPage::Read() const {
  return memory_->ReadObject<sigvisor_pv_page>(gpa_);
}

std::vector<PvTraps> PvPage::Collect() {
  std::vector<PvTraps> out;
  absl::StatusOr<sigvisor_pv_page> page = Read();
  if (!page.ok()) return out;  // not reached: the page is in RAM (Create checked it)
  // Each kind's writes by the per-register counters, which the guest keeps for
  // every write; the site entries say where they came from, up to that many.
  uint64_t dr_writes = 0, segment_writes = 0;
  for (int n : kDrIndexes) dr_writes += Since(page->dr_writes[n], last_.dr_writes[n]);
  for (size_t i = 0; i < kSegmentBases; ++i) {
    segment_writes += Since(page->seg_base_writes[i], last_.seg_base_writes[i]);
  }
  uint64_t unplaced[] = {0, dr_writes, segment_writes};  // by SIGVISOR_PV_SITE_*
  for (size_t i = 0; i < SIGVISOR_PV_SITES; ++i) {
    const sigvisor_pv_site& now = page->sites[i];
    const sigvisor_pv_site& before = last_.sites[i];
    const std::string_view kind = KindName(now.kind);
    if (kind.empty()) continue;
    const bool same_site = now.address == before.address && now.kind == before.kind;
    const uint64_t count =
        std::min(same_site ? Since(now.count, before.count) : now.count, unplaced[now.kind]);
    if (count == 0) continue;
    unplaced[now.kind] -= count;
    out.push_back({kind, now.address, count});
  }
  for (uint32_t kind : {SIGVISOR_PV_SITE_DR_WRITE, SIGVISOR_PV_SITE_SEGMENT_BASE}) {
    if (unplaced[kind] != 0) out.push_back({KindName(kind), 0, unplaced[kind]});
  }
  // `loaded` and dr[] are not counters; keeping them does no harm.
  last_ = *page;
  return out;
}

absl::StatusOr<uint64_t> PvPage::Load(uint64_t argument, DrShadow& shadow, DrHardware& hw) {
  if (argument != gpa_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pv debug-register load with argument %#x; the page is at %#x", argument, gpa_));
  }
  absl::StatusOr<sigvisor_pv_page> page = Read();
  if (!page.ok()) return page.status();
  // DR6 only when the guest wrote it: else the page holds its last write, and the
  // hardware may have set status bits since (a breakpoint fired) that it never saw.
  std::optional<uint64_t> dr6;
  if (page->dr_writes[6] != dr6_writes_seen_) dr6 = page->dr[6];
  for (auto [name, value] : {std::pair{"DR6", dr6.value_or(0)}, {"DR7", page->dr[7]}}) {
    if (value >> 32) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "pv debug-register load: %s = %#x has bits 63:32 set (mov would raise #GP)", name, value));
    }
  }
  const uint64_t dr[4] = {page->dr[0], page->dr[1], page->dr[2], page->dr[3]};
  const uint64_t loads_before = shadow.loads();
  if (absl::Status s = shadow.Assign(dr, dr6, page->dr[7], hw); !s.ok()) return s;
  dr6_writes_seen_ = page->dr_writes[6];
  const DebugRegs& held = shadow.hardware();
  std::array<uint64_t, 8> loaded = {held.dr[0], held.dr[1], held.dr[2], held.dr[3], 0, 0,
                                    held.dr6,   held.dr7};
  if (absl::Status s = memory_->WriteObject(gpa_ + offsetof(sigvisor_pv_page, loaded), loaded);
      !s.ok()) {
    return s;
  }
  return shadow.loads() - loads_before;
}

}  // namespace sigvisor::trap
