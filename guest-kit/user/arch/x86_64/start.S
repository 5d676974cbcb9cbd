/* User program entry: the kernel enters at _start with rdi = the argument string
 * (the boot command line) and a 16-byte aligned stack less one slot, as after a
 * call. main's return value becomes the exit status. */
	.section .text.start, "ax"
	.globl _start
_start:
	call	main
	mov	%eax, %edi
	mov	$60, %eax	/* SYS_exit */
	int	$0x80
	ud2

/* Where a signal handler returns to (sa_restorer): the frame's pretcode. */
	.text
	.globl __restore_rt
__restore_rt:
	mov	$15, %eax	/* SYS_rt_sigreturn */
	int	$0x80
	ud2

	.section .note.GNU-stack, "", @progbits
