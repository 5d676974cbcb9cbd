/* Never exits: the watchdog must stop it. */
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	.globl spin_forever
spin_forever:
	jmp	spin_forever
