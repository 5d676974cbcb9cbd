/*
 * A Multiboot v1 test kernel in an ELF64 container, loaded by its program headers:
 * entered in 32-bit protected mode with paging off like any Multiboot kernel, it
 * checks CPUID for long mode (sigvisor must set CPUID), identity-maps the first GiB
 * with 2 MiB pages, enables PAE, EFER.LME and paging, far-jumps to 64-bit code, prints
 * from long mode and exits through isa-debug-exit with 0x42: status 133.
 */
#include "mb_lib32.inc"

#define MB_FLAGS (1 << 1)	/* memory info; no address fields: program headers */

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.code32
	.globl	_start
_start:
	mov	$stack_top, %esp
	mov	%eax, %ebp
	call	serial_init
	PUTS(s_hello)
	cmp	$MB_LOADER_MAGIC, %ebp
	je	1f
	PUTS(s_badmagic)
	mov	$0x7f, %al
	jmp	debug_exit
1:	mov	$0x80000001, %eax
	cpuid
	bt	$29, %edx
	jc	2f
	PUTS(s_nolm)
	mov	$0x7e, %al
	jmp	debug_exit
2:	/* PML4[0] -> PDPT[0] -> PD: 512 x 2 MiB */
	mov	$pdpt, %eax
	or	$3, %eax
	mov	%eax, pml4
	mov	$pd, %eax
	or	$3, %eax
	mov	%eax, pdpt
	xor	%ecx, %ecx
3:	mov	%ecx, %eax
	shl	$21, %eax
	or	$0x83, %eax
	mov	%eax, pd(,%ecx,8)
	inc	%ecx
	cmp	$512, %ecx
	jne	3b
	mov	%cr4, %eax
	or	$(1 << 5), %eax		/* PAE */
	mov	%eax, %cr4
	mov	$pml4, %eax
	mov	%eax, %cr3
	mov	$0xc0000080, %ecx	/* EFER.LME */
	rdmsr
	or	$(1 << 8), %eax
	wrmsr
	mov	%cr0, %eax
	or	$0x80000001, %eax	/* PG | PE */
	mov	%eax, %cr0
	lgdt	gdt_desc
	ljmp	$0x08, $long_mode

	.code64
long_mode:
	mov	$0x10, %ax
	mov	%ax, %ds
	mov	%ax, %es
	mov	%ax, %ss
	lea	s_long(%rip), %rsi
	call	puts64
	mov	%cr0, %rax		/* prove we are here: CR0.PG set, CS.L=1 */
	bt	$31, %rax
	jnc	9f
	lea	s_paging(%rip), %rsi
	call	puts64
9:	mov	$0x42, %al
	mov	$DEBUG_EXIT, %dx
	out	%al, %dx
10:	hlt
	jmp	10b

puts64:
1:	lodsb
	test	%al, %al
	jz	3f
	mov	%al, %bl
	mov	$COM1 + 5, %dx
2:	in	%dx, %al
	test	$0x20, %al
	jz	2b
	mov	%bl, %al
	mov	$COM1, %dx
	out	%al, %dx
	jmp	1b
3:	ret

	.section .rodata
	.balign 8
gdt:	.quad	0
	.quad	0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad	0x00cf92000000ffff	/* 0x10: data */
gdt_desc:
	.word	gdt_desc - gdt - 1
	.long	gdt
s_hello:	.asciz "mb64: hello from 32-bit code in an ELF64 container\n"
s_badmagic:	.asciz "mb64: bad loader magic\n"
s_nolm:		.asciz "mb64: CPUID says no long mode\n"
s_long:		.asciz "mb64: in long mode\n"
s_paging:	.asciz "mb64: paging on, bye\n"

	.bss
	.balign 4096
pml4:	.skip 4096
pdpt:	.skip 4096
pd:	.skip 4096
stack:	.skip 4096
stack_top:
