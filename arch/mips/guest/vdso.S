/*
 * The kernel's own vdso page (seed 004): the signal-return trampoline, mapped
 * read-only at MIPS_VDSO_BASE into every process when the VMM supplies no vdso page
 * of its own (under QEMU; vdso.c). With CONFIG_TRAMP_VDSO a handler's ra points here
 * and nothing is written to the user stack or flushed from any I-cache.
 *
 * The words are the ABI header's, as the VMM's page is made of: one definition.
 */
#include "asm/vdso.h"

	.section .vdso, "a"
	.balign	4096
	.globl	vdso_page
vdso_page:
	.org	vdso_page + VDSO_RT_SIGRETURN_OFFSET
	.word	SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN0	/* li v0, SYS_rt_sigreturn */
	.word	SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN1	/* syscall */
	.balign	4096
