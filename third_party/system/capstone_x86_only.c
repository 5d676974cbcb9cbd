/* Capstone with x86 only.
 *
 * Debian's libcapstone.a holds every architecture Capstone knows, and its cs.o names
 * each one's set-up through a pair of functions, <Arch>_global_init and <Arch>_option,
 * which each architecture's <Arch>Module.o defines and nothing else does. sigvisor
 * opens x86 only (arch/x86_64/vmm/trap/decoder.cc). Defining the other pairs here, in
 * an object linked before the archive is searched, keeps the linker from pulling
 * those modules and their tables in: M68K's alone is a 65,536-entry table of function
 * pointers, each one a relative relocation that the dynamic loader applies, and a
 * page it dirties, on every start of the (position-independent) sigvisor binary.
 * perf/startup.sh counts the relocations.
 *
 * Opening one of these architectures then fails with CS_ERR_ARCH, as on a Capstone
 * built without it. If a Capstone version renames these functions, the definitions
 * here go unused and the modules come back: larger, never wrong. */
#include <capstone/capstone.h>
#include <stddef.h>

struct cs_struct; /* Capstone's handle, opaque here. */

#define SIGVISOR_CAPSTONE_ARCH_ABSENT(arch)                                           \
  cs_err arch##_global_init(struct cs_struct *handle);                                \
  cs_err arch##_option(struct cs_struct *handle, cs_opt_type type, size_t value);     \
  cs_err arch##_global_init(struct cs_struct *handle) {                               \
    (void)handle;                                                                     \
    return CS_ERR_ARCH;                                                               \
  }                                                                                   \
  cs_err arch##_option(struct cs_struct *handle, cs_opt_type type, size_t value) {    \
    (void)handle, (void)type, (void)value;                                            \
    return CS_ERR_ARCH;                                                               \
  }

SIGVISOR_CAPSTONE_ARCH_ABSENT(ARM)
SIGVISOR_CAPSTONE_ARCH_ABSENT(AArch64)
SIGVISOR_CAPSTONE_ARCH_ABSENT(Mips)
SIGVISOR_CAPSTONE_ARCH_ABSENT(PPC)
SIGVISOR_CAPSTONE_ARCH_ABSENT(Sparc)
SIGVISOR_CAPSTONE_ARCH_ABSENT(SystemZ)
SIGVISOR_CAPSTONE_ARCH_ABSENT(XCore)
SIGVISOR_CAPSTONE_ARCH_ABSENT(M68K)
SIGVISOR_CAPSTONE_ARCH_ABSENT(TMS320C64x)
SIGVISOR_CAPSTONE_ARCH_ABSENT(M680X)
SIGVISOR_CAPSTONE_ARCH_ABSENT(EVM)
