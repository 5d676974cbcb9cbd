// A snapshot's guest memory, DIR/memory: a sparse file exactly as large as guest RAM,
// byte for byte, in which only the 4 KiB pages that are not all zeros are written and
// the rest are holes. Restoring maps it MAP_PRIVATE, so a restore reads no page before
// the guest touches it, the guest's writes stay its own, and N VMs restored from one
// snapshot share its unwritten pages in the page cache.
//
// What was written is in the index (a part of DIR/state, memory_index): the runs of
// written pages, each with its CRC-32C. Restoring checks the file against it: its size,
// each run's checksum, and that the pages outside the runs are still zeros.
#ifndef SIGVISOR_VMM_SNAPSHOT_MEMORY_IMAGE_H_
#define SIGVISOR_VMM_SNAPSHOT_MEMORY_IMAGE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace sigvisor {

inline constexpr uint64_t kMemoryImagePageSize = 4096;
// The state file's part that holds the index.
inline constexpr std::string_view kMemoryIndexPartName = "memory_index";

// Pages [first_page, first_page + page_count) of guest memory, written to the image.
struct MemoryRun {
  uint64_t first_page = 0;
  uint64_t page_count = 0;
  uint32_t crc32c = 0;  // of the run's page_count * 4 KiB bytes

  bool operator==(const MemoryRun&) const = default;
};

struct MemoryImageIndex {
  uint64_t size = 0;            // bytes of guest memory: a non-zero multiple of 4 KiB
  std::vector<MemoryRun> runs;  // ascending, not overlapping, inside `size`

  // The pages the runs hold: the guest memory the snapshot had touched.
  uint64_t touched_pages() const;

  bool operator==(const MemoryImageIndex&) const = default;
};

// What a caller reports about an image it wrote or mapped.
struct MemoryImageStats {
  uint64_t touched_pages = 0;  // the runs' pages
  uint64_t bytes_on_disk = 0;  // the file's allocated blocks (st_blocks * 512)
};

// Writes `memory` (a non-zero multiple of 4 KiB) to DIR/memory: its non-zero pages, in
// runs, the rest holes; then fsync and an atomic rename, as WriteSnapshotState. Creates
// DIR if missing (one level). Streams from `memory` itself: nothing the size of guest
// memory is allocated. Guest memory must not change while it is written (the vCPUs
// stopped). `stats`, when given, is filled.
absl::StatusOr<MemoryImageIndex> WriteMemoryImage(const std::string& dir,
                                                  std::span<const uint8_t> memory,
                                                  MemoryImageStats* stats = nullptr);

// The index as a part of the state file, named kMemoryIndexPartName, and back. The
// decoder refuses what WriteMemoryImage cannot have written: a size that is not a
// non-zero multiple of 4 KiB, runs that are empty, out of order, overlapping or outside
// the size.
SnapshotPart EncodeMemoryIndex(const MemoryImageIndex& index);
absl::StatusOr<MemoryImageIndex> DecodeMemoryIndex(const SnapshotPart& part);

// Opens DIR/memory (a regular file of exactly index.size bytes), checks each run's
// CRC-32C and that no page outside the runs holds anything but zeros (using the file
// system's holes, SEEK_DATA/SEEK_HOLE, where it reports them, else reading those pages),
// then maps it MAP_PRIVATE read-write as guest memory (GuestMemory::MapPrivateFile).
// Checking reads every written page once, through a fixed buffer. `stats`, when given,
// is filled.
absl::StatusOr<GuestMemory> MapMemoryImage(const std::string& dir, const MemoryImageIndex& index,
                                           MemoryImageStats* stats = nullptr);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_SNAPSHOT_MEMORY_IMAGE_H_
