#include "arch/mips/vmm/vdso_page.h"

#include <cstring>

namespace sigvisor::mips {

std::array<uint8_t, VdsoPage::kBytes> VdsoPage::Contents() {
  static_assert(SIGVISOR_VDSO_RT_SIGRETURN_OFFSET % 4 == 0 &&
                    SIGVISOR_VDSO_RT_SIGRETURN_OFFSET + 8 <= SIGVISOR_VDSO_PAGE_BYTES,
                "the trampoline's two words lie in the page, aligned");
  std::array<uint8_t, kBytes> page{};
  // Little-endian words, as the guest fetches them (the host is little-endian too).
  const uint32_t words[] = {SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN0,
                            SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN1};
  std::memcpy(page.data() + SIGVISOR_VDSO_RT_SIGRETURN_OFFSET, words, sizeof(words));
  return page;
}

}  // namespace sigvisor::mips
