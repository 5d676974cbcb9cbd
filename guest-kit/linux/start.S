/* The programs' entry and their signal-return trampoline. No C library: the kernel
 * starts _start with rsp at argc, then argv[], NULL, envp[], NULL. */
#include "guest-kit/linux/lsys.h"

	.text
	.globl _start
_start:
	xor %ebp, %ebp
	mov %rsp, %rdi             /* linux_start_main(uint64_t *initial_stack) */
	and $-16, %rsp
	call linux_start_main
	mov %eax, %edi
	mov $SYS_exit, %eax
	syscall
	ud2

/* The sa_restorer of every handler (SA_RESTORER is mandatory on x86-64): the handler
 * returns here, with rsp at the kernel's rt_sigframe, and rt_sigreturn restores
 * the registers and the mask the frame saved. */
	.globl linux_restore_rt
linux_restore_rt:
	mov $SYS_rt_sigreturn, %eax
	syscall
	ud2

	.section .note.GNU-stack, "", @progbits
