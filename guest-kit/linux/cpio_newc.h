// The "newc" cpio format (070701: ASCII hex headers, 4-byte alignment), the one
// Linux unpacks an initramfs from (Documentation/driver-api/early-userspace/
// buffer-format.rst). Written deterministically, for the embedded initramfs: entries
// sorted by name (so a directory precedes what it holds), mtime 0, owner root, inode
// numbers in that order, one link each. Parsed back, bounds-checked, for the tests and
// for whoever wants to look inside an archive.
#ifndef SIGVISOR_GUEST_KIT_LINUX_CPIO_NEWC_H_
#define SIGVISOR_GUEST_KIT_LINUX_CPIO_NEWC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace sigvisor {

struct CpioEntry {
  std::string name;   // "init", "dev/console": no leading slash
  uint32_t mode = 0;  // type and permissions: S_IFREG | 0755, S_IFDIR | 0755, S_IFCHR | 0600
  std::string data;   // a regular file's bytes
  uint32_t rdev_major = 0, rdev_minor = 0;  // a device node's number

  bool operator==(const CpioEntry&) const = default;
};

// The archive of `entries`, sorted by name, ending in the TRAILER!!! entry.
// InvalidArgument for an empty, absolute or duplicate name, or data on a non-file.
absl::StatusOr<std::string> WriteNewcArchive(std::vector<CpioEntry> entries);

// The entries of an archive, in its order, up to the trailer (not included).
// InvalidArgument for anything that is not a well-formed newc archive.
absl::StatusOr<std::vector<CpioEntry>> ParseNewcArchive(std::string_view archive);

}  // namespace sigvisor

#endif  // SIGVISOR_GUEST_KIT_LINUX_CPIO_NEWC_H_
