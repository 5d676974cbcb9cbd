/* Segment-register loads at CPL0, for the trap engine's tests: every form (mov from a
 * register and from memory, pop, lfs/lgs/lss, swapgs, wrfsbase/wrgsbase, wrmsr to the
 * base MSRs), null selectors, and the faults of bad selectors. Prints the selectors,
 * bases (through rdmsr and through an %fs:/%gs: read) and descriptors it ends up with
 * (the same with --trap=off and with a trap mechanism) and exits 0.
 *
 * Phase segload (ops = "ops=N"): N x `mov %eax, %fs`, N segment_load traps. */
#include "tests/guests/trap_guest.inc"

#define MSR_FS_BASE 0xc0000100
#define MSR_GS_BASE 0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102
#define MSR_LSTAR 0xc0000082
#define FS_AREA 0x345000	/* base of selector 0x50 */
#define GS_AREA 0x346000	/* base of selector 0x58 */

/* Prints a segment register's selector, its base (rdmsr) and the quadword at its
 * offset 0. */
.macro PRINT_FS
	mov	%fs, %eax
	PRINT fs, %rax
	mov	$MSR_FS_BASE, %ecx
	rdmsr
	shl	$32, %rdx
	or	%rdx, %rax
	PRINT fs_base, %rax
.endm
.macro PRINT_GS
	mov	%gs, %eax
	PRINT gs, %rax
	mov	$MSR_GS_BASE, %ecx
	rdmsr
	shl	$32, %rdx
	or	%rdx, %rax
	PRINT gs_base, %rax
.endm

	.text
	.globl _start
_start:
	TRAP_GUEST_START
	lgdt	gdt_pointer(%rip)
	mov	$0x1111111111111111, %rax
	mov	%rax, FS_AREA
	mov	$0x2222222222222222, %rax
	mov	%rax, GS_AREA

	/* mov to a segment register from a general register. */
	mov	$0x50, %eax
	.globl mov_fs_site
mov_fs_site:
	mov	%eax, %fs
	PRINT_FS
	mov	%fs:0, %rax
	PRINT fs_0, %rax
	mov	$0x58, %r9d
	mov	%r9d, %gs
	PRINT_GS
	mov	%gs:0, %rax
	PRINT gs_0, %rax
	mov	$0x2b, %ebx
	mov	%bx, %es
	mov	%es, %eax
	PRINT es, %rax
	mov	$0x18, %edx
	mov	%edx, %ss
	mov	%ss, %eax
	PRINT ss, %rax

	/* ... and from memory. */
	mov	sel_68(%rip), %ds
	mov	%ds, %eax
	PRINT ds, %rax
	lea	sel_50(%rip), %rbx
	mov	(%rbx), %fs
	PRINT_FS

	/* pop. */
	push	$0x68
	pop	%fs
	PRINT_FS
	pushw	$0x58
	popw	%gs
	PRINT_GS
	lea	trap_guest_stack_top(%rip), %rax
	sub	%rsp, %rax
	PRINT stack_depth, %rax

	/* Far pointers: m16:32 and m16:16. */
	lfs	far32(%rip), %ecx
	PRINT lfs_offset, %rcx
	PRINT_FS
	mov	$-1, %rdx
	lss	far16(%rip), %dx
	PRINT lss_offset, %rdx
	mov	%ss, %eax
	PRINT ss, %rax
	lgs	far32_gs(%rip), %r8d
	PRINT lgs_offset, %r8
	PRINT_GS

	/* A null selector. */
	xor	%eax, %eax
	mov	%eax, %fs
	PRINT_FS

	/* The GS bases through wrmsr, then swapgs twice. */
	mov	$MSR_GS_BASE, %ecx
	mov	$0x1000, %eax
	xor	%edx, %edx
	wrmsr
	mov	$MSR_KERNEL_GS_BASE, %ecx
	mov	$0x2000, %eax
	wrmsr
	swapgs
	PRINT_GS
	mov	$MSR_KERNEL_GS_BASE, %ecx
	rdmsr
	PRINT kernel_gs_base, %rax
	swapgs
	PRINT_GS

	/* wrfsbase / wrgsbase (CR4.FSGSBASE on first). */
	mov	%cr4, %rax
	bts	$16, %rax
	mov	%rax, %cr4
	mov	$FS_AREA, %eax
	wrfsbase %rax
	PRINT_FS
	mov	%fs:0, %rax
	PRINT fs_0, %rax
	mov	$GS_AREA, %r11d
	wrgsbase %r11
	PRINT_GS

	/* A wrmsr that loads no segment (LSTAR): an msr_write trap. */
	mov	$MSR_LSTAR, %ecx
	mov	$0x123000, %eax
	xor	%edx, %edx
	wrmsr
	rdmsr
	PRINT lstar, %rax

	/* The loads marked the descriptors accessed. */
	PRINT gdt_50, gdt+0x50(%rip)
	PRINT gdt_68, gdt+0x68(%rip)

	/* Bad selectors: not present (#NP; #SS for SS), beyond the GDT (#GP). */
	mov	$0x60, %eax
	EXPECT_FAULT 1f
	mov	%eax, %ds
1:	PRINT_FAULT
	mov	$0x60, %eax
	EXPECT_FAULT 1f
	mov	%eax, %ss
1:	PRINT_FAULT
	mov	$0x78, %eax
	EXPECT_FAULT 1f
	mov	%eax, %gs
1:	PRINT_FAULT
	mov	%ds, %eax
	PRINT ds, %rax

	/* Phase segload. */
	PHASE_BEGIN segload, %r15
	xor	%r12, %r12
	mov	$0x50, %eax
1:	cmp	%r15, %r12
	je	2f
	mov	%eax, %fs
	xor	$0x08, %eax		/* 0x50 <-> 0x58 */
	inc	%r12
	jmp	1b
2:	PHASE_END
	PRINT_FS

	xor	%edi, %edi
	call	guest_exit

	.data
	.balign 16
gdt:
	.quad 0
	.quad 0x00cf9b000000ffff	/* 0x08 kernel CS32 */
	.quad 0x00af9b000000ffff	/* 0x10 kernel CS */
	.quad 0x00cf93000000ffff	/* 0x18 kernel DS */
	.quad 0x00cffb000000ffff	/* 0x20 user CS32 */
	.quad 0x00cff3000000ffff	/* 0x28 user DS */
	.quad 0x00affb000000ffff	/* 0x30 user CS */
	.quad 0				/* 0x38 */
	.quad 0, 0			/* 0x40 TSS: TR stays as the VMM loaded it */
	.quad 0x00cf92345000ffff	/* 0x50 data, base FS_AREA, not yet accessed */
	.quad 0x00cf92346000ffff	/* 0x58 data, base GS_AREA */
	.quad 0x00cf12000000ffff	/* 0x60 data, not present */
	.quad 0x1240923456780fff	/* 0x68 data, base 0x12345678, limit 0xfff */
gdt_end:
gdt_pointer:
	.word gdt_end - gdt - 1
	.quad gdt
far32:
	.long 0xdeadbeef
	.word 0x50
far16:
	.word 0x1234
	.word 0x18
far32_gs:
	.long 0xcafe0000
	.word 0x58
sel_50:	.word 0x50
sel_68:	.word 0x68
