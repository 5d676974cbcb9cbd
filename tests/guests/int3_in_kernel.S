/* int3 at CPL0: on a PVM host KVM cannot emulate it (internal error); on hardware
 * KVM the boot IDT (limit 0) makes it a triple fault. Either way a clear report. */
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	.globl breakpoint_here
breakpoint_here:
	int3
	hlt
