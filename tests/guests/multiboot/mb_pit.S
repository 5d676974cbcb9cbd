/*
 * A Multiboot kernel for the PC's CMOS RTC and 8254 PIT (`sigvisor run --irqchip`:
 * the RTC is sigvisor's, the PIT and PICs KVM's; under QEMU, its own): it reads the
 * RTC's status registers (never the clock or the memory sizes, which differ from run
 * to run or between the two), programs both 8259 PICs (vector base 0x20) and PIT
 * channel 0 as a ~1 kHz rate generator, counts 3 timer interrupts on IRQ 0 with
 * `sti; hlt`, and exits with 0x32 (status 101).
 */
#include "mb_lib32.inc"

#define MB_FLAGS (1 << 1)
#define CMOS_INDEX 0x70
#define CMOS_DATA 0x71
#define PIT_CH0 0x40
#define PIT_CMD 0x43
#define PIT_COUNT 1193		/* 1.193182 MHz / 1193: ~1 kHz */
#define VECTOR 0x20		/* IRQ 0 at the master PIC's vector base */
#define TICKS 3

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.globl	_start
_start:
	mov	$stack_top, %esp
	call	serial_init
	PUTS(s_hello)

	/* (a) the CMOS: status B (QEMU's reset value 0x02: 24-hour, BCD; SeaBIOS keeps
	 * it), D (bit 7: the RAM is valid) and A without its update-in-progress bit,
	 * which a real clock sets for ~2 ms each second */
	PUTS(s_status_b)
	mov	$0x0b, %al
	call	cmos_read
	call	puthex2
	PUTS(s_status_d)
	mov	$0x0d, %al
	call	cmos_read
	call	puthex2
	PUTS(s_status_a)
	mov	$0x0a, %al
	call	cmos_read
	and	$0x7f, %al
	call	puthex2
	PUTS(s_nl)

	/* (b) the PIT: the PICs reinitialized, only IRQ 0 unmasked, one gate */
	call	pic_init
	mov	$0xfe, %al		/* OCW1, master: all but IRQ 0 masked */
	out	%al, $0x21
	mov	$0xff, %al		/* OCW1, slave: all masked */
	out	%al, $0xa1
	mov	$timer_isr, %eax
	mov	$VECTOR, %ecx
	mov	$idt, %edi
	call	set_gate
	lidt	idt_desc
	mov	$0x34, %al		/* channel 0, lobyte/hibyte, mode 2, binary */
	out	%al, $PIT_CMD
	mov	$PIT_COUNT & 0xff, %al
	out	%al, $PIT_CH0
	mov	$PIT_COUNT >> 8, %al
	out	%al, $PIT_CH0
	PUTS(s_pit)
	/* The wait: each tick's handler drops its frame and comes back to wait_tick with
	 * IF clear (an interrupt gate), so the count is checked with interrupts off and
	 * `sti; hlt` re-entered until it is reached: sti's one-instruction shadow makes
	 * the tick land on (or wake) the hlt, never between the check and it. */
wait_tick:
	cmpl	$TICKS, ticks
	jae	ticks_done
	sti
	hlt
	cli				/* a wake-up that was not our tick: check again */
	jmp	wait_tick
ticks_done:
	mov	$0xff, %al		/* IRQ 0 masked again: no more ticks */
	out	%al, $0x21
	PUTS(s_ticks)
	PUTS(s_bye)
	mov	$0x32, %al
	jmp	debug_exit

/* The handler does not return: a 32-bit `iret` fails in KVM's instruction emulator
 * on this project's PVM hosts (see mb_lapic.S), so it counts the tick, sends the EOI,
 * drops its frame and goes back to the wait, which re-arms or finishes. */
timer_isr:
	incl	ticks
	mov	$0x20, %al		/* OCW2: non-specific EOI to the master */
	out	%al, $0x20
	add	$12, %esp		/* eip, cs, eflags */
	jmp	wait_tick

/* cmos_read: CMOS register %al into %al (index at 0x70 with the NMI bit clear). */
cmos_read:
	out	%al, $CMOS_INDEX
	in	$CMOS_DATA, %al
	ret

	.section .rodata
s_hello:	.asciz "mb_pit: CMOS RTC and 8254 PIT\n"
s_status_b:	.asciz "cmos: status B="
s_status_d:	.asciz " status D="
s_status_a:	.asciz " status A&7f="
s_pit:		.asciz "pit: channel 0, mode 2, count 1193, IRQ 0 at vector 0x20\n"
s_ticks:	.asciz "pit: 3 ticks\n"
s_bye:		.asciz "mb_pit: bye\n"
s_nl:		.asciz "\n"
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
