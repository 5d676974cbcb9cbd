/* fwait at CPL0, which a PVM host's emulator cannot run (Linux's fpu__drop() runs
 * one on every exec and exit): on hardware KVM the CPU runs it, on a PVM host sigvisor
 * completes it (arch/x86_64/vmm/cpu/cpl0_completion.h). With no x87 exception pending
 * and CR0.TS clear it does nothing: the guest goes on and exits 7. */
#include "tests/guests/guest.inc"

	.text
	.globl _start
_start:
	fwait
	HYPERCALL 2, exit_args
	hlt

	.data
	.balign 8
exit_args:
	.quad 7
