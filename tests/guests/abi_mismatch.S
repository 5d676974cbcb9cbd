/* Built against a future ABI: the VMM must refuse to boot it. */
#define ABI_VERSION 999
#include "tests/guests/guest.inc"
	.text
	.globl _start
_start:
	hlt
