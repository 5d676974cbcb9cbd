// Guest-virtual to guest-physical translation by walking the guest's 4-level page
// tables through GuestMemory (every table read bounds-checked). Used for
// diagnoses: the bytes at a faulting RIP, wherever the guest was running.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_PAGE_WALK_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_PAGE_WALK_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

absl::StatusOr<uint64_t> TranslateGva(const GuestMemory& memory, uint64_t cr3, uint64_t gva);

// The guest-physical address of the 4 KiB leaf page-table entry for `gva` (present
// or not), for the VMM to edit (fault injection). Fails if a level above is not
// present or the address is in a large page.
absl::StatusOr<uint64_t> LeafEntryGpa(const GuestMemory& memory, uint64_t cr3, uint64_t gva);

// Whether `gva` is mapped user-accessible (U/S set at every level): code there runs
// at CPL3.
absl::StatusOr<bool> UserAccessible(const GuestMemory& memory, uint64_t cr3, uint64_t gva);

// One page's worth of a guest-virtual range: where it lives in guest RAM.
struct GuestPiece {
  uint64_t gpa;
  size_t length;
};

// [gva, gva + len) split at page boundaries and translated, every piece checked to
// lie in guest RAM; an error if any page is unmapped or outside RAM.
absl::StatusOr<std::vector<GuestPiece>> TranslateRange(const GuestMemory& memory, uint64_t cr3,
                                                        uint64_t gva, size_t len);

// How the guest kernel's own access to user memory would go: a read, or a write
// (which also needs R/W at every level).
enum class UserAccess { kRead, kWrite };

// [gva, gva + len) translated as the CPU would for the guest kernel touching user
// memory: every level present and user-accessible (U/S), writable too for kWrite,
// and every piece in guest RAM; otherwise an error and nothing changed. On success
// the walk's Accessed bits (and the leaf's Dirty bit for kWrite) are set, as the
// CPU's own walk would have set them, so that the page tables end as they would
// had the kernel made the access itself.
absl::StatusOr<std::vector<GuestPiece>> TranslateUserRange(GuestMemory& memory, uint64_t cr3,
                                                            uint64_t gva, size_t len,
                                                            UserAccess access);

// Up to `len` bytes at `gva`, stopping early at an unmapped page.
std::vector<uint8_t> ReadGuestVirtual(const GuestMemory& memory, uint64_t cr3, uint64_t gva,
                                      size_t len);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_PAGE_WALK_H_
