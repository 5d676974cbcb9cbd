/* int3 at CPL0 with a #BP handler in the IDT: the handler must run with the frame's
 * RIP just past the int3, as a CPU delivers #BP (a trap). On hardware KVM the CPU does
 * it; on a PVM host, whose emulator cannot run int3 at CPL0, sigvisor completes it
 * (arch/x86_64/vmm/cpu/cpl0_completion.h). Exits 7 when the frame is right, 9 if not. */
#include "tests/guests/guest.inc"

	.text
	.globl _start
_start:
	lea	stack_top(%rip), %rsp
	lea	bp_handler(%rip), %rax	/* IDT gate 3: 64-bit interrupt gate, DPL 0 */
	lea	idt+3*16(%rip), %rdi
	mov	%ax, (%rdi)
	movw	$SIGVISOR_SEL_KERNEL_CS, 2(%rdi)
	movw	$0x8e00, 4(%rdi)
	shr	$16, %rax
	mov	%ax, 6(%rdi)
	shr	$16, %rax
	mov	%eax, 8(%rdi)
	movl	$0, 12(%rdi)
	lidt	idt_descriptor(%rip)
	.globl breakpoint_here
breakpoint_here:
	int3
after_int3:
	hlt				/* not reached: the handler exits */

bp_handler:
	lea	after_int3(%rip), %rax
	cmp	%rax, (%rsp)		/* the frame's RIP */
	jne	1f
	HYPERCALL 2, exit_right
	hlt
1:	HYPERCALL 2, exit_wrong
	hlt

	.data
	.balign 16
idt:
	.fill 4*16, 1, 0
idt_descriptor:
	.word 4*16 - 1
	.quad idt
	.balign 8
exit_right:
	.quad 7
exit_wrong:
	.quad 9
	.bss
	.balign 16
	.skip 4096
stack_top:
