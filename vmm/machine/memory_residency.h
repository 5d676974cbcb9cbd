// How much of guest RAM is in host memory at the end of a run, and whose it is: the
// kernel's own account of the mapping (/proc/self/smaps). A booted VM's RAM is
// anonymous, so what is resident is what the guest touched. A restored VM's is its
// snapshot's memory image mapped copy-on-write (snapshots.md): a page the guest only
// read is the image's page in the page cache, one copy for every VM restored from that
// image at once; a page it wrote is its own (smaps' "Anonymous"). So N concurrent
// restores of one snapshot cost the image's pages once plus each VM's written pages.
#ifndef SIGVISOR_VMM_MACHINE_MEMORY_RESIDENCY_H_
#define SIGVISOR_VMM_MACHINE_MEMORY_RESIDENCY_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace sigvisor {

struct MemoryResidency {
  uint64_t mapped_bytes = 0;    // the mapping's size (smaps' "Size")
  uint64_t resident_bytes = 0;  // in host memory ("Rss")
  uint64_t private_bytes = 0;   // of those, this process's own copies ("Anonymous")
  // What the page cache holds for this mapping and every other of its file.
  uint64_t shared_bytes() const { return resident_bytes - private_bytes; }
};

// The residency of the mapping that starts at `base`, from the text of an smaps file.
// NotFound when no mapping starts there; DataLoss when its entry lacks a figure or
// says more is private than resident.
absl::StatusOr<MemoryResidency> ParseSmapsResidency(std::string_view smaps, uint64_t base);

// The same for this process's mapping at `base` (/proc/self/smaps, read through the
// capped reader).
absl::StatusOr<MemoryResidency> ReadMemoryResidency(const void* base);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_MACHINE_MEMORY_RESIDENCY_H_
