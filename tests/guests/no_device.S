/* Writes to a port where sigvisor has no device: the run ends with a report naming
 * the port. */
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	mov	$0x1234, %dx
	mov	$0x5a, %al
	outb	%al, %dx
	hlt
