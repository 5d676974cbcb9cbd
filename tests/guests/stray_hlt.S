/* A hlt that is no trap site: with a trap mechanism on, the run must end with a
 * report naming it (not be taken for a trap). */
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	nop
	.globl stray_hlt
stray_hlt:
	hlt
