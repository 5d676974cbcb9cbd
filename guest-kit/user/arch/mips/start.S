/* User program entry on MIPS: the kernel enters at _start with a0 = the argument
 * string and sp 8-byte aligned below the o32 argument save area. main's return
 * value becomes the exit status. */
#include "guest-kit/uapi/syscalls.h"

	.set	noreorder
	.section .text.start, "ax"
	.globl	_start
_start:
	jal	main
	nop
	move	$4, $2		/* a0 = main's result */
	li	$2, SYS_exit
	syscall
	break

/* The portable sig_install() passes a restorer; MIPS has no SA_RESTORER and the
 * kernel ignores it (its trampoline is on the stack or in the vdso: seed 004). This
 * one is equivalent, should anything call it. */
	.text
	.globl	__restore_rt
__restore_rt:
	li	$2, SYS_rt_sigreturn
	syscall
	break
