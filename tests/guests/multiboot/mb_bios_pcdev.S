/*
 * A Multiboot kernel for the interrupt state a PC's firmware leaves behind (`sigvisor
 * run --irqchip`; under QEMU, SeaBIOS's): it never reprograms the 8259 PICs or the PIT.
 * It prints the PICs' masks as found, takes IRQ 0 (the PIT the firmware left ticking)
 * at the BIOS's master vector base 0x08 and a slave line (IRQ 12, raised through
 * pc-testdev's port 0x200c) at its slave base 0x70, then drops to real mode and waits,
 * with the IVT at 0, until the firmware's timer handler has advanced the BIOS data
 * area's tick count (0x46c) twice. Exits with 0x33 (status 103).
 */
#include "mb_lib32.inc"

#define MB_FLAGS (1 << 1)
#define TESTDEV_IRQ_BASE 0x2000
#define SLAVE_IRQ 12
#define BIOS_MASTER_BASE 0x08
#define BIOS_SLAVE_BASE 0x70
#define BDA_TICKS 0x46c
#define REAL_MODE_AT 0x8000	/* where the real-mode part is copied: below 1 MiB */

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.globl	_start
_start:
	mov	$stack_top, %esp
	call	serial_init
	PUTS(s_hello)

	/* (a) the masks as the firmware left them */
	PUTS(s_masks)
	in	$0x21, %al
	mov	%al, firmware_mask
	call	puthex2
	PUTS(s_slave)
	in	$0xa1, %al
	call	puthex2
	PUTS(s_nl)

	/* (b) IRQ 0 at the firmware's vector: only IRQ 0 unmasked; every gate but the
	 * two expected ones says "unexpected" (e.g. vector 0x20, a reprogrammed PIC's) */
	mov	$0, %ebx
1:	mov	$unexpected_isr, %eax
	mov	%ebx, %ecx
	mov	$idt, %edi
	call	set_gate
	inc	%ebx
	cmp	$256, %ebx
	jb	1b
	mov	$irq0_isr, %eax
	mov	$BIOS_MASTER_BASE, %ecx
	mov	$idt, %edi
	call	set_gate
	mov	$slave_isr, %eax
	mov	$BIOS_SLAVE_BASE + SLAVE_IRQ - 8, %ecx
	mov	$idt, %edi
	call	set_gate
	lidt	idt_desc
	mov	$0xfe, %al		/* OCW1, master: all but IRQ 0 masked */
	out	%al, $0x21
	mov	$0xff, %al
	out	%al, $0xa1
	sti
2:	hlt				/* the handler does not return here */
	jmp	2b
irq0_done:
	PUTS(s_irq0)

	/* (c) the slave's line 12 at 0x70 + 4: the master passes only the cascade */
	mov	$0xfb, %al
	out	%al, $0x21
	mov	$0xef, %al		/* OCW1, slave: all but IRQ 12 masked */
	out	%al, $0xa1
	sti
	mov	$TESTDEV_IRQ_BASE + SLAVE_IRQ, %dx
	mov	$1, %al			/* the line up: an edge on the slave's input 4 */
	out	%al, %dx
3:	hlt
	jmp	3b
slave_done:
	mov	$TESTDEV_IRQ_BASE + SLAVE_IRQ, %dx
	xor	%al, %al
	out	%al, %dx
	PUTS(s_irq12)

	/* (d) real mode with the firmware's IVT: its masks back, then the copy below
	 * 1 MiB entered through a 16-bit protected-mode segment */
	mov	firmware_mask, %al
	out	%al, $0x21
	mov	$0xff, %al
	out	%al, $0xa1
	PUTS(s_real)
	mov	$real_mode, %esi
	mov	$REAL_MODE_AT, %edi
	mov	$(real_mode_end - real_mode), %ecx
	cld
	rep movsb
	lgdt	gdt16_desc
	ljmp	$0x08, $(REAL_MODE_AT + pm16 - real_mode)

/* The handlers do not return: a 32-bit `iret` fails in KVM's instruction emulator on
 * this project's PVM hosts (see mb_lapic.S); each sends its EOI, drops its frame and
 * goes on. */
irq0_isr:
	mov	$0x20, %al		/* OCW2: non-specific EOI to the master */
	out	%al, $0x20
	mov	$0xff, %al		/* no more ticks in protected mode */
	out	%al, $0x21
	add	$12, %esp		/* eip, cs, eflags */
	jmp	irq0_done

slave_isr:
	mov	$0x20, %al		/* EOI to the slave, then to the master */
	out	%al, $0xa0
	out	%al, $0x20
	add	$12, %esp
	jmp	slave_done

unexpected_isr:
	PUTS(s_unexpected)
	mov	$0x7f, %al
	jmp	debug_exit

/* The real-mode part, position-independent but for its own addresses (REAL_MODE_AT +
 * label - real_mode): 16-bit protected mode, PE off, then real mode at segment 0. */
	.code16
real_mode:
pm16:
	mov	$0x10, %ax		/* 16-bit data: 64 KiB limits for real mode */
	mov	%ax, %ds
	mov	%ax, %es
	mov	%ax, %ss
	mov	%cr0, %eax
	and	$~1, %eax
	mov	%eax, %cr0
	ljmp	$0, $(REAL_MODE_AT + rm - real_mode)
rm:
	xor	%ax, %ax
	mov	%ax, %ds
	mov	%ax, %es
	mov	%ax, %ss
	mov	$REAL_MODE_AT, %sp
	lidt	(REAL_MODE_AT + ivt_desc - real_mode)
	mov	(BDA_TICKS), %ebx
	sti
4:	hlt				/* the firmware's IRQ 0 handler irets here */
	mov	(BDA_TICKS), %eax
	sub	%ebx, %eax
	cmp	$2, %eax
	jb	4b
	cli
	mov	$(REAL_MODE_AT + s_ticks - real_mode), %si
5:	lodsb
	test	%al, %al
	jz	7f
	mov	%al, %ah
	mov	$COM1 + 5, %dx
6:	in	%dx, %al
	test	$0x20, %al
	jz	6b
	mov	%ah, %al
	mov	$COM1, %dx
	out	%al, %dx
	jmp	5b
7:	mov	$0x33, %al
	out	%al, $DEBUG_EXIT
8:	hlt
	jmp	8b
ivt_desc:
	.word	0x3ff
	.long	0
s_ticks:
	.asciz	"real mode: the IVT's IRQ 0 handler advanced the BIOS tick count twice\nmb_bios_pcdev: bye\n"
real_mode_end:
	.code32

	.section .rodata
s_hello:	.asciz "mb_bios_pcdev: what the firmware leaves\n"
s_masks:	.asciz "pic: masks as found: master="
s_slave:	.asciz " slave="
s_irq0:		.asciz "pic: IRQ 0 at vector 0x08 (PIT ticking)\n"
s_irq12:	.asciz "pic: IRQ 12 at vector 0x74\n"
s_real:		.asciz "real mode: waiting for 2 BIOS ticks\n"
s_unexpected:	.asciz "unexpected interrupt vector\n"
s_nl:		.asciz "\n"
	.balign 8
idt_desc:
	.word	256 * 8 - 1
	.long	idt
/* 0x08: 16-bit code, 0x10: 16-bit data, both base 0 limit 64 KiB. */
gdt16:
	.quad	0
	.quad	0x00009a000000ffff
	.quad	0x000092000000ffff
gdt16_desc:
	.word	3 * 8 - 1
	.long	gdt16

	.data
firmware_mask:	.byte 0

	.bss
	.balign 16
idt:	.skip 256 * 8
stack:	.skip 4096
stack_top:
