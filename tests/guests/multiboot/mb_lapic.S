/*
 * A Multiboot kernel that needs an in-kernel LAPIC (`sigvisor run --irqchip`): it
 * reads the LAPIC version register at 0xfee00030 (paging off: physical MMIO), installs
 * a 32-bit IDT, arms a one-shot LAPIC timer on vector 0x40, waits with `sti; hlt`,
 * and exits with 0x40 (status 129) once the interrupt arrived. Without an irqchip the
 * first LAPIC access is an MMIO exit to a device sigvisor does not have.
 */
#include "mb_lib32.inc"

#define MB_FLAGS (1 << 1)
#define LAPIC 0xfee00000
#define VECTOR 0x40

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.globl	_start
_start:
	mov	$stack_top, %esp
	call	serial_init
	PUTS(s_hello)
	.globl	lapic_version_read
lapic_version_read:
	mov	LAPIC + 0x30, %eax
	and	$0xff, %eax
	mov	%eax, %ebx
	PUTS(s_version)
	mov	%ebx, %eax
	call	puthex
	PUTS(s_nl)
	/* the IDT: one interrupt gate, for the timer vector */
	mov	$timer_isr, %eax
	mov	%ax, idt + VECTOR * 8
	movw	$0x08, idt + VECTOR * 8 + 2
	movw	$0x8e00, idt + VECTOR * 8 + 4
	shr	$16, %eax
	mov	%ax, idt + VECTOR * 8 + 6
	lidt	idt_desc
	/* the PICs masked; the LAPIC on (SVR), a one-shot timer */
	mov	$0xff, %al
	out	%al, $0x21
	out	%al, $0xa1
	movl	$0x1ff, LAPIC + 0xf0	/* SVR: enabled, spurious vector 0xff */
	movl	$0xb, LAPIC + 0x3e0	/* divide by 1 */
	movl	$VECTOR, LAPIC + 0x320	/* LVT timer: one-shot, VECTOR */
	movl	$100000, LAPIC + 0x380	/* initial count */
1:	sti
	hlt
	cli
	cmpl	$0, ticks
	je	1b
timer_done:
	PUTS(s_fired)
	mov	$VECTOR, %al
	jmp	debug_exit

/* The handler does not return: a 32-bit `iret` fails in KVM's instruction emulator
 * on this project's PVM hosts (emulation failure at the iret; QEMU with KVM stops
 * there the same way), so it drops its frame and continues after the wait. */
timer_isr:
	incl	ticks
	movl	$0, LAPIC + 0xb0	/* EOI */
	add	$12, %esp		/* eip, cs, eflags */
	jmp	timer_done

	.section .rodata
s_hello:	.asciz "mb_lapic: reading the LAPIC\n"
s_version:	.asciz "lapic version="
s_nl:		.asciz "\n"
s_fired:	.asciz "mb_lapic: the LAPIC timer interrupt arrived\n"
	.balign 8
idt_desc:
	.word	256 * 8 - 1
	.long	idt

	.bss
	.balign 16
ticks:	.long 0
idt:	.skip 256 * 8
stack:	.skip 4096
stack_top:
