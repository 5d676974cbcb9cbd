/*
 * A Multiboot kernel for QEMU's pc-testdev, as kvm-unit-tests-style kernels use it
 * (`qemu-system-x86_64 -device pc-testdev`; `sigvisor run --irqchip`): the 32-bit
 * latch at 0xe0 (a dword, then one byte into it), the same latch read a byte at a
 * time at 0xe8, a page flush at 0xe4, the 64 KiB of MMIO memory at 0xff000000 (paging
 * off: physical addresses), and IRQ line 5 (port 0x2005) through the 8259 PICs, which
 * it programs itself (vector base 0x20). Exits with 0x31 (status 99) once the
 * interrupt arrived. Every value printed is one it wrote: the console is the same
 * under QEMU and sigvisor.
 */
#include "mb_lib32.inc"

#define MB_FLAGS (1 << 1)
#define TESTDEV_LATCH 0xe0
#define TESTDEV_FLUSH 0xe4
#define TESTDEV_BYTE_LATCH 0xe8
#define TESTDEV_IRQ_BASE 0x2000
#define TESTDEV_MEM 0xff000000
#define IRQ 5
#define VECTOR (0x20 + IRQ)	/* the master PIC's vector base is 0x20 */

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.globl	_start
_start:
	mov	$stack_top, %esp
	call	serial_init
	PUTS(s_hello)

	/* (a) the latch: a dword written and read back, then one byte written into it
	 * at 0xe2 (its third byte) and the dword read again */
	mov	$TESTDEV_LATCH, %dx
	mov	$0x12345678, %eax
	out	%eax, %dx
	in	%dx, %eax
	mov	%eax, %ebx
	PUTS(s_latch)
	mov	%ebx, %eax
	call	puthex
	PUTS(s_nl)
	mov	$TESTDEV_LATCH + 2, %dx
	mov	$0xab, %al
	out	%al, %dx
	mov	$TESTDEV_LATCH, %dx
	in	%dx, %eax
	mov	%eax, %ebx
	PUTS(s_latch_byte)
	mov	%ebx, %eax
	call	puthex
	PUTS(s_nl)

	/* (b) the byte latch: the same four bytes, one `inb` each, lowest first; then a
	 * dword `inl` there, which the device takes as four byte reads */
	PUTS(s_byte_latch)
	mov	$TESTDEV_BYTE_LATCH, %ebx
1:	cmp	$TESTDEV_BYTE_LATCH, %ebx
	je	2f
	mov	$' ', %al		/* a space between bytes */
	call	putc
2:	mov	%bx, %dx
	in	%dx, %al
	call	puthex2
	inc	%ebx
	cmp	$TESTDEV_BYTE_LATCH + 4, %ebx
	jb	1b
	PUTS(s_byte_latch_dword)
	mov	$TESTDEV_BYTE_LATCH, %dx
	in	%dx, %eax
	call	puthex
	PUTS(s_nl)

	/* (c) page flush: QEMU re-protects the page written to 0xe4 (for KVM's sake); the
	 * page's contents must survive it. Nothing to read back from the port itself. */
	movl	$0x600dcafe, flush_page
	mov	$TESTDEV_FLUSH, %dx
	mov	$flush_page, %eax
	out	%eax, %dx
	PUTS(s_flush)
	mov	flush_page, %eax
	call	puthex
	PUTS(s_nl)

	/* (d) the MMIO memory: its first and last dwords, and a byte write over the
	 * first dword's second byte (any access width is plain memory) */
	movl	$0xdeadbeef, TESTDEV_MEM
	movl	$0x0badf00d, TESTDEV_MEM + 0xfffc
	movb	$0x5a, TESTDEV_MEM + 1
	PUTS(s_mem0)
	mov	TESTDEV_MEM, %eax
	call	puthex
	PUTS(s_memend)
	mov	TESTDEV_MEM + 0xfffc, %eax
	call	puthex
	PUTS(s_nl)

	/* (e) IRQ line 5: the PICs reinitialized (the firmware's vectors overlap the CPU's
	 * exceptions), only IRQ 5 unmasked, one gate for its vector */
	call	pic_init
	mov	$0xdf, %al		/* OCW1, master: all but IRQ 5 masked */
	out	%al, $0x21
	mov	$0xff, %al		/* OCW1, slave: all masked */
	out	%al, $0xa1
	mov	$irq_isr, %eax
	mov	$VECTOR, %ecx
	mov	$idt, %edi
	call	set_gate
	lidt	idt_desc
	PUTS(s_irq)
	sti
	mov	$TESTDEV_IRQ_BASE + IRQ, %dx
	mov	$1, %al			/* the line up: an edge on the PIC's IRQ 5 */
	out	%al, %dx
	/* The interrupt may come right after the `out`; the handler never returns here,
	 * so anything past the loop is reached only through it. */
1:	hlt
	jmp	1b
irq_done:
	mov	$TESTDEV_IRQ_BASE + IRQ, %dx
	xor	%al, %al		/* the line down again */
	out	%al, %dx
	mov	$0xff, %al		/* everything masked */
	out	%al, $0x21
	PUTS(s_irq_count)
	mov	irqs, %eax
	call	putdec
	PUTS(s_nl)
	PUTS(s_bye)
	mov	$0x31, %al
	jmp	debug_exit

/* The handler does not return: a 32-bit `iret` fails in KVM's instruction emulator
 * on this project's PVM hosts (see mb_lapic.S), so it sends the EOI, drops its frame
 * and continues after the wait. The interrupt gate left IF clear. */
irq_isr:
	incl	irqs
	mov	$0x20, %al		/* OCW2: non-specific EOI to the master */
	out	%al, $0x20
	add	$12, %esp		/* eip, cs, eflags */
	jmp	irq_done

	.section .rodata
s_hello:		.asciz "mb_pcdev: pc-testdev\n"
s_latch:		.asciz "latch: outl 12345678 to 0xe0, inl="
s_latch_byte:		.asciz "latch: outb ab to 0xe2, inl="
s_byte_latch:		.asciz "byte latch: inb 0xe8..0xeb="
s_byte_latch_dword:	.asciz "; inl 0xe8="
s_flush:		.asciz "flush: page address written to 0xe4, page word="
s_mem0:			.asciz "mmio: ff000000="
s_memend:		.asciz " ff00fffc="
s_irq:			.asciz "irq: raising line 5 (vector 0x25)\n"
s_irq_count:		.asciz "irq: the interrupt arrived, count="
s_bye:			.asciz "mb_pcdev: bye\n"
s_nl:			.asciz "\n"
	.balign 8
idt_desc:
	.word	256 * 8 - 1
	.long	idt

	.bss
	.balign 4096
flush_page:	.skip 4096
irqs:		.long 0
	.balign 16
idt:		.skip 256 * 8
stack:		.skip 4096
stack_top:
