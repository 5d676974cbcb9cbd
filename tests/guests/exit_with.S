/* Writes `ops` bytes to COM1 (one port-I/O exit each) and exits with status 3 through
 * the exit hypercall. ops comes from the boot info command line's first number, so
 * a test can ask for any count: "ops=N" is parsed here as plain decimal after '='. */
#include "tests/guests/guest.inc"

	.text
	.globl _start
_start:
	PARSE_OPS			/* rcx = N */
	mov	$0x3f8, %dx
	mov	$'x', %al
	test	%rcx, %rcx
	jz	5f
4:	outb	%al, %dx
	dec	%rcx
	jnz	4b
5:	HYPERCALL 2, exit_args
	hlt

	.data
	.balign 8
exit_args:
	.quad 3
