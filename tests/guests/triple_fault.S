/* ud2 with the boot IDT (limit 0): #UD cannot be delivered, then neither can #DF:
 * a triple fault, which the VMM reports with this RIP and symbol. */
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	nop
	.globl crash_here
crash_here:
	ud2
