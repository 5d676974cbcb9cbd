/*
 * A Multiboot kernel that reads the PS/2 controller's status port (0x64), which
 * sigvisor does not provide: the run must end with a report naming the port, the RIP
 * and the instruction bytes, never hang.
 */
#include "mb_lib32.inc"

#define MB_FLAGS (1 << 1)

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.globl	_start
_start:
	mov	$stack_top, %esp
	call	serial_init
	PUTS(s_hello)
	.globl	absent_port_read
absent_port_read:
	in	$0x64, %al
	PUTS(s_bye)
	xor	%al, %al
	jmp	debug_exit

	.section .rodata
s_hello:	.asciz "mb_nodev: reading port 0x64\n"
s_bye:		.asciz "mb_nodev: the read returned\n"

	.bss
	.balign 16
stack:	.skip 1024
stack_top:
