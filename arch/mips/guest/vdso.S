/*
 * The vdso (seed 004): one page of the kernel image holding the signal-return
 * trampoline, mapped read-only at MIPS_VDSO_BASE into every process (vdso.c).
 * With CONFIG_TRAMP_VDSO a handler's ra points here and nothing is written to the
 * user stack or flushed from any I-cache.
 */
#include "asm/vdso.h"
#include "guest-kit/uapi/syscalls.h"

	.set	noreorder
	.section .vdso, "a"
	.balign	4096
	.globl	vdso_page
vdso_page:
	/* at VDSO_RT_SIGRETURN_OFFSET */
	li	$2, SYS_rt_sigreturn	/* v0 */
	syscall
	.balign	4096
