/* Where the vdso page sits in every process (vdso.c). What it holds is the ABI
 * header's one definition (SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN*), whether the page is
 * the VMM's or the kernel's own copy (vdso.S). */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_VDSO_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_VDSO_H_

#include "guest-kit/abi/sigvisor_abi.h"

/* The last user page (USER_TOP - 4 KiB), above the stack: USER_VDSO_BASE. */
#define MIPS_VDSO_BASE 0x7ffff000u
#define VDSO_RT_SIGRETURN_OFFSET SIGVISOR_VDSO_RT_SIGRETURN_OFFSET

#ifndef __ASSEMBLER__
struct sigvisor_boot_info;
/* Takes the VMM's vdso page when the boot info names one (setup.c, under sigvisor);
 * without a call the kernel's own copy is mapped (under QEMU). */
void mips_vdso_init(const struct sigvisor_boot_info *boot);
#endif

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_VDSO_H_ */
