#include "arch/x86_64/vmm/cpu/page_walk.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {
constexpr uint64_t kPresent = 1;
constexpr uint64_t kLargePage = 1ull << 7;
constexpr uint64_t kAddressMask = 0x000ffffffffff000ull;
}  // namespace

absl::StatusOr<uint64_t> TranslateGva(const GuestMemory& memory, uint64_t cr3, uint64_t gva) {
  uint64_t table = cr3 & kAddressMask;
  for (int level = 3; level >= 0; --level) {
    const int shift = 12 + 9 * level;
    const uint64_t index = (gva >> shift) & 511;
    absl::StatusOr<uint64_t> entry = memory.ReadObject<uint64_t>(table + index * 8);
    if (!entry.ok()) return entry.status();
    if (!(*entry & kPresent)) {
      return absl::NotFoundError(absl::StrFormat("guest address %#x is not mapped", gva));
    }
    const bool leaf = level == 0 || ((level == 1 || level == 2) && (*entry & kLargePage));
    if (leaf) {
      const uint64_t page_mask = (1ull << shift) - 1;
      return (*entry & kAddressMask & ~page_mask) | (gva & page_mask);
    }
    table = *entry & kAddressMask;
  }
  return absl::InternalError("unreachable");
}

absl::StatusOr<uint64_t> LeafEntryGpa(const GuestMemory& memory, uint64_t cr3, uint64_t gva) {
  uint64_t table = cr3 & kAddressMask;
  for (int level = 3; level > 0; --level) {
    const uint64_t index = (gva >> (12 + 9 * level)) & 511;
    absl::StatusOr<uint64_t> entry = memory.ReadObject<uint64_t>(table + index * 8);
    if (!entry.ok()) return entry.status();
    if (!(*entry & kPresent)) {
      return absl::NotFoundError(absl::StrFormat("guest address %#x is not mapped", gva));
    }
    if (*entry & kLargePage) {
      return absl::FailedPreconditionError(
          absl::StrFormat("guest address %#x is in a large page, not a 4 KiB one", gva));
    }
    table = *entry & kAddressMask;
  }
  const uint64_t gpa = table + ((gva >> 12) & 511) * 8;
  if (!memory.ReadObject<uint64_t>(gpa).ok()) {
    return absl::OutOfRangeError(absl::StrFormat("page table of %#x is outside RAM", gva));
  }
  return gpa;
}

absl::StatusOr<bool> UserAccessible(const GuestMemory& memory, uint64_t cr3, uint64_t gva) {
  constexpr uint64_t kUser = 1ull << 2;
  uint64_t table = cr3 & kAddressMask;
  bool user = true;
  for (int level = 3; level >= 0; --level) {
    const int shift = 12 + 9 * level;
    absl::StatusOr<uint64_t> entry = memory.ReadObject<uint64_t>(table + ((gva >> shift) & 511) * 8);
    if (!entry.ok()) return entry.status();
    if (!(*entry & kPresent)) {
      return absl::NotFoundError(absl::StrFormat("guest address %#x is not mapped", gva));
    }
    user = user && (*entry & kUser);
    if (level == 0 || ((level == 1 || level == 2) && (*entry & kLargePage))) return user;
    table = *entry & kAddressMask;
  }
  return absl::InternalError("unreachable");
}

absl::StatusOr<std::vector<GuestPiece>> TranslateRange(const GuestMemory& memory, uint64_t cr3,
                                                        uint64_t gva, size_t len) {
  constexpr uint64_t kPageSize = 4096;
  std::vector<GuestPiece> pieces;
  for (size_t done = 0; done < len;) {
    const uint64_t at = gva + done;
    const size_t chunk = std::min<size_t>(len - done, kPageSize - at % kPageSize);
    absl::StatusOr<uint64_t> gpa = TranslateGva(memory, cr3, at);
    if (!gpa.ok()) return gpa.status();
    if (!memory.Contains(*gpa, chunk)) {
      return absl::OutOfRangeError(
          absl::StrFormat("guest address %#x maps outside guest RAM (%#x)", at, *gpa));
    }
    pieces.push_back({*gpa, chunk});
    done += chunk;
  }
  return pieces;
}

namespace {

// One page's walk for TranslateUserRange: the leaf's address and every entry's GPA,
// top level first, so that the caller can set their A/D bits once the whole range
// has passed.
struct UserWalk {
  uint64_t gpa = 0;
  std::vector<uint64_t> entry_gpas;
};

absl::StatusOr<UserWalk> WalkUserPage(const GuestMemory& memory, uint64_t cr3, uint64_t gva,
                                      UserAccess access) {
  constexpr uint64_t kWritable = 1ull << 1;
  constexpr uint64_t kUser = 1ull << 2;
  const uint64_t needed = kPresent | kUser | (access == UserAccess::kWrite ? kWritable : 0);
  UserWalk walk;
  uint64_t table = cr3 & kAddressMask;
  for (int level = 3; level >= 0; --level) {
    const int shift = 12 + 9 * level;
    const uint64_t entry_gpa = table + ((gva >> shift) & 511) * 8;
    absl::StatusOr<uint64_t> entry = memory.ReadObject<uint64_t>(entry_gpa);
    if (!entry.ok()) return entry.status();
    if ((*entry & needed) != needed) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "guest address %#x is not mapped present, user%s (level %d entry %#x)", gva,
          access == UserAccess::kWrite ? " and writable" : "", level + 1, *entry));
    }
    walk.entry_gpas.push_back(entry_gpa);
    if (level == 0 || ((level == 1 || level == 2) && (*entry & kLargePage))) {
      const uint64_t page_mask = (1ull << shift) - 1;
      walk.gpa = (*entry & kAddressMask & ~page_mask) | (gva & page_mask);
      return walk;
    }
    table = *entry & kAddressMask;
  }
  return absl::InternalError("unreachable");
}

}  // namespace

absl::StatusOr<std::vector<GuestPiece>> TranslateUserRange(GuestMemory& memory, uint64_t cr3,
                                                           uint64_t gva, size_t len,
                                                           UserAccess access) {
  constexpr uint64_t kPageSize = 4096;
  constexpr uint64_t kAccessed = 1ull << 5;
  constexpr uint64_t kDirty = 1ull << 6;
  std::vector<GuestPiece> pieces;
  std::vector<UserWalk> walks;
  for (size_t done = 0; done < len;) {
    const uint64_t at = gva + done;
    const size_t chunk = std::min<size_t>(len - done, kPageSize - at % kPageSize);
    absl::StatusOr<UserWalk> walk = WalkUserPage(memory, cr3, at, access);
    if (!walk.ok()) return walk.status();
    if (!memory.Contains(walk->gpa, chunk)) {
      return absl::OutOfRangeError(
          absl::StrFormat("guest address %#x maps outside guest RAM (%#x)", at, walk->gpa));
    }
    pieces.push_back({walk->gpa, chunk});
    walks.push_back(*std::move(walk));
    done += chunk;
  }
  for (const UserWalk& walk : walks) {
    for (size_t i = 0; i < walk.entry_gpas.size(); ++i) {
      const bool leaf = i + 1 == walk.entry_gpas.size();
      const uint64_t bits = kAccessed | (leaf && access == UserAccess::kWrite ? kDirty : 0);
      absl::StatusOr<uint64_t> entry = memory.ReadObject<uint64_t>(walk.entry_gpas[i]);
      if (!entry.ok()) return entry.status();
      if ((*entry & bits) == bits) continue;
      if (absl::Status s = memory.WriteObject<uint64_t>(walk.entry_gpas[i], *entry | bits);
          !s.ok()) {
        return s;
      }
    }
  }
  return pieces;
}

std::vector<uint8_t> ReadGuestVirtual(const GuestMemory& memory, uint64_t cr3, uint64_t gva,
                                      size_t len) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < len; ++i) {
    absl::StatusOr<uint64_t> gpa = TranslateGva(memory, cr3, gva + i);
    if (!gpa.ok()) break;
    absl::StatusOr<uint8_t> byte = memory.ReadObject<uint8_t>(*gpa);
    if (!byte.ok()) break;
    bytes.push_back(*byte);
  }
  return bytes;
}

}  // namespace sigvisor::x86
