/* int3 at CPL0 with the boot IDT (limit 0): #BP cannot be delivered, a triple fault
 * on both host kinds (on a PVM host sigvisor completes the int3 the emulator cannot). */
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	.globl breakpoint_here
breakpoint_here:
	int3
	hlt
