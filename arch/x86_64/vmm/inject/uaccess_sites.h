// The guest kernel's user-access instructions: the entries of its exception table
// (__start___ex_table .. __stop___ex_table, pairs of 64-bit addresses: the access,
// its fixup; arch/x86_64/guest/uaccess.h). Each is where a fault on a user page
// resumes at a fixup instead of panicking, so each is a place to aim a page
// injection (`--inject page=np,addr=access,at=ADDRESS`).
#ifndef SIGVISOR_ARCH_X86_64_VMM_INJECT_UACCESS_SITES_H_
#define SIGVISOR_ARCH_X86_64_VMM_INJECT_UACCESS_SITES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::x86 {

struct UserAccessSite {
  uint64_t address = 0;  // the instruction that touches user memory
  uint64_t fixup = 0;    // where a fault there resumes
  std::string symbol;    // symbol+offset of `address`
  std::string function;  // the symbol's name alone ("" if none covers it)
};

// In table order. An image without the table symbols has none (an empty list); a
// table outside the image's loaded bytes is an error.
absl::StatusOr<std::vector<UserAccessSite>> UserAccessSites(const ElfImage& image);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_INJECT_UACCESS_SITES_H_
