/* QEMU's isa-debug-exit convention: writing 5 to port 0xf4 exits with (5 << 1) | 1. */
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	mov	$5, %eax
	outl	%eax, $0xf4
	hlt
