/*
 * A Multiboot kernel that starts its application processors the way PC kernels do
 * (`sigvisor run --vcpus N`, `qemu-system-x86_64 -smp N`): it reads the CPU count
 * from fw_cfg (key 0x05), copies a real-mode trampoline to 0x8000, enables its xAPIC
 * and sends INIT then two Startup IPIs (vector 0x08) to all other CPUs. Each AP runs
 * the trampoline: real mode -> a 32-bit GDT -> protected mode, sets its APIC ID's bit
 * in ap_mask, writes the fw_cfg selector once (an exit on the AP's own vCPU), counts
 * itself in ap_count and halts. The BSP waits for N-1 check-ins
 * (bounded: a guest that never sees its APs exits with 0x3e after printing what it
 * saw) and exits through isa-debug-exit with 0x30 (status 97).
 */
#include "mb_lib32.inc"

#define MB_FLAGS (1 << 1)
#define LAPIC 0xfee00000
#define TRAMPOLINE 0x8000	/* SIPI vector 0x08 */
#define WAIT_LOOPS 4000000

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.globl	_start
_start:
	mov	$stack_top, %esp
	call	serial_init
	PUTS(s_hello)
	mov	$5, %ax			/* fw_cfg: the number of CPUs */
	call	fw_cfg_select
	call	fw_cfg_read32
	and	$0xffff, %eax
	mov	%eax, ncpus
	PUTS(s_cpus)
	mov	ncpus, %eax
	call	putdec
	PUTS(s_nl)
	cmpl	$1, ncpus
	jbe	all_in

	/* the trampoline, below 1 MiB where a SIPI can start it */
	mov	$ap_trampoline, %esi
	mov	$TRAMPOLINE, %edi
	mov	$(ap_trampoline_end - ap_trampoline), %ecx
	cld
	rep movsb
	/* the PICs masked; the xAPIC enabled (SVR) */
	mov	$0xff, %al
	out	%al, $0x21
	out	%al, $0xa1
	movl	$0x1ff, LAPIC + 0xf0
	mov	LAPIC + 0x20, %eax	/* the BSP's own APIC ID */
	shr	$24, %eax
	mov	$1, %edx
	mov	%eax, %ecx
	shl	%cl, %edx
	mov	%edx, bsp_bit
	.globl	send_init_sipi
send_init_sipi:
	movl	$0, LAPIC + 0x310
	movl	$0x000c4500, LAPIC + 0x300	/* INIT, all excluding self */
	call	icr_wait
	movl	$0, LAPIC + 0x310
	movl	$0x000c4600 | (TRAMPOLINE >> 12), LAPIC + 0x300	/* SIPI */
	call	icr_wait
	movl	$0, LAPIC + 0x310
	movl	$0x000c4600 | (TRAMPOLINE >> 12), LAPIC + 0x300	/* the second SIPI */
	call	icr_wait

	/* wait for the APs */
	mov	ncpus, %ebx
	dec	%ebx
	mov	$WAIT_LOOPS, %ecx
1:	cmp	%ebx, ap_count
	je	all_in
	pause
	dec	%ecx
	jnz	1b
	PUTS(s_missing)
	mov	ap_count, %eax
	call	putdec
	PUTS(s_of)
	mov	%ebx, %eax
	call	putdec
	PUTS(s_nl)
	mov	$0x3e, %al
	jmp	debug_exit

all_in:
	PUTS(s_all)
	mov	ncpus, %eax
	call	putdec
	PUTS(s_mask)
	mov	ap_mask, %eax
	or	bsp_bit, %eax
	call	puthex
	PUTS(s_nl)
	PUTS(s_bye)
	mov	$0x30, %al
	jmp	debug_exit

/* Waits until the ICR's delivery-status bit is clear. */
icr_wait:
1:	testl	$0x1000, LAPIC + 0x300
	jnz	1b
	ret

/* The AP trampoline: copied to TRAMPOLINE and entered there in real mode with
 * CS = TRAMPOLINE >> 4, IP = 0. Only position-independent references below. */
	.code16
ap_trampoline:
	cli
	mov	%cs, %ax
	mov	%ax, %ds
	lgdtl	ap_gdtr - ap_trampoline
	mov	%cr0, %eax
	or	$1, %eax
	mov	%eax, %cr0
	ljmpl	$0x08, $(TRAMPOLINE + ap_pm - ap_trampoline)
	.code32
ap_pm:
	mov	$0x10, %ax
	mov	%ax, %ds
	mov	%ax, %es
	mov	%ax, %ss
	mov	LAPIC + 0x20, %eax	/* this AP's APIC ID */
	shr	$24, %eax
	mov	%eax, %ecx
	mov	$1, %edx
	shl	%cl, %edx
	lock orl %edx, ap_mask
	mov	$FW_CFG_SELECTOR, %dx	/* one port write per AP (item 0: harmless) */
	xor	%eax, %eax
	out	%ax, %dx
	lock incl ap_count
1:	cli
	hlt
	jmp	1b
	.balign 8
ap_gdt:
	.quad	0
	.quad	0x00cf9b000000ffff	/* 0x08 flat code32 */
	.quad	0x00cf93000000ffff	/* 0x10 flat data */
ap_gdtr:
	.word	3 * 8 - 1
	.long	TRAMPOLINE + ap_gdt - ap_trampoline
ap_trampoline_end:

	.section .rodata
s_hello:	.asciz "mb_smp: starting the application processors\n"
s_cpus:		.asciz "fw_cfg cpus="
s_nl:		.asciz "\n"
s_missing:	.asciz "mb_smp: APs checked in: "
s_of:		.asciz " of "
s_all:		.asciz "mb_smp: all "
s_mask:		.asciz " CPUs checked in, APIC ID mask="
s_bye:		.asciz "mb_smp: bye\n"

	.data
	.balign 4
ap_count:	.long 0
ap_mask:	.long 0
bsp_bit:	.long 1	/* APIC ID 0 until read (only with more than one CPU) */
ncpus:		.long 0

	.bss
	.balign 16
stack:	.skip 4096
stack_top:
