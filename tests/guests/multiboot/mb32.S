/*
 * A Multiboot v1 test kernel as people build them for `qemu-system-x86_64 -kernel`:
 * ELF32, 32-bit code, loaded by its program headers. It checks the loader magic,
 * programs COM1 through the divisor latch and polls LSR, prints the Multiboot
 * memory sizes, its command line (the words after the image name) and each module
 * (string and contents), reads fw_cfg (signature, CPU count, RAM size), masks the
 * PICs, reads PCI configuration space (all-ones: no PCI), writes a string with one
 * `rep outsb`, and exits through isa-debug-exit with 0x21: status (0x21 << 1) | 1 = 67.
 */
#include "mb_lib32.inc"

#define MB_FLAGS ((1 << 0) | (1 << 1))	/* modules page aligned; memory info */

	MULTIBOOT_HEADER MB_FLAGS

	.text
	.globl	_start
_start:
	mov	$stack_top, %esp
	mov	%ebx, mbi
	mov	%eax, magic
	call	serial_init
	PUTS(s_hello)
	mov	magic, %eax
	cmp	$MB_LOADER_MAGIC, %eax
	je	1f
	PUTS(s_badmagic)
	mov	$0x7f, %al
	jmp	debug_exit
1:
	mov	mbi, %ebx
	PUTS(s_mem)
	mov	4(%ebx), %eax		/* mem_lower */
	call	putdec
	PUTS(s_upper)
	mov	mbi, %ebx
	mov	8(%ebx), %eax		/* mem_upper */
	call	putdec
	PUTS(s_nl)

	/* cmdline: "<image> <args>"; print what follows the first space */
	PUTS(s_cmdline)
	mov	mbi, %ebx
	mov	16(%ebx), %esi
2:	lodsb
	test	%al, %al
	jz	3f
	cmp	$' ', %al
	jne	2b
	call	puts
3:	PUTS(s_nl)

	/* modules */
	PUTS(s_mods)
	mov	mbi, %ebx
	mov	20(%ebx), %eax		/* mods_count */
	call	putdec
	PUTS(s_nl)
	mov	mbi, %ebx
	mov	20(%ebx), %eax
	mov	%eax, mods_left
	mov	24(%ebx), %eax
	mov	%eax, mod_ptr
4:	cmpl	$0, mods_left
	je	6f
	PUTS(s_modstr)
	mov	mod_ptr, %ebx
	mov	8(%ebx), %esi		/* string */
	call	puts
	PUTS(s_modbody)
	mov	mod_ptr, %ebx
	mov	(%ebx), %esi		/* mod_start */
	mov	4(%ebx), %eax		/* mod_end */
	mov	%eax, mod_end
	test	$0xfff, %esi
	jz	5f
	PUTS(s_unaligned)
5:	cmp	mod_end, %esi
	jae	55f
	lodsb
	call	putc
	jmp	5b
55:	addl	$16, mod_ptr
	decl	mods_left
	jmp	4b
6:
	/* fw_cfg */
	PUTS(s_fwcfg)
	xor	%ax, %ax		/* signature */
	call	fw_cfg_select
	mov	$FW_CFG_DATA, %dx
	mov	$4, %ecx
7:	in	%dx, %al
	push	%ecx
	push	%edx
	call	putc
	pop	%edx
	pop	%ecx
	dec	%ecx
	jnz	7b
	PUTS(s_cpus)
	mov	$5, %ax
	call	fw_cfg_select
	call	fw_cfg_read32
	and	$0xffff, %eax
	call	putdec
	PUTS(s_ram)
	mov	$3, %ax
	call	fw_cfg_select
	call	fw_cfg_read32
	shr	$20, %eax
	call	putdec
	PUTS(s_mib)

	/* PIC masks, then PCI configuration space */
	mov	$0xff, %al
	out	%al, $0x21
	out	%al, $0xa1
	PUTS(s_pci)
	mov	$0xcf8, %dx
	mov	$0x8000ff00, %eax	/* 00:1f.7: no device there under QEMU either */
	out	%eax, %dx
	mov	$0xcfc, %dx
	in	%dx, %eax
	call	puthex
	PUTS(s_nl)

	/* string I/O: one rep outsb */
	mov	$s_rep, %esi
	mov	$s_rep_end - s_rep, %ecx
	mov	$COM1, %dx
	cld
	rep outsb

	PUTS(s_bye)
	mov	$0x21, %al
	jmp	debug_exit

	.section .rodata
s_hello:	.asciz "mb32: hello from a Multiboot ELF32 kernel\n"
s_badmagic:	.asciz "mb32: bad loader magic\n"
s_mem:		.asciz "mem_lower="
s_upper:	.asciz " mem_upper="
s_nl:		.asciz "\n"
s_cmdline:	.asciz "cmdline:"
s_mods:		.asciz "mods_count="
s_modstr:	.asciz "module '"
s_modbody:	.asciz "': "
s_unaligned:	.asciz "(not page aligned) "
s_fwcfg:	.asciz "fw_cfg signature="
s_cpus:		.asciz " cpus="
s_ram:		.asciz " ram_mib="
s_mib:		.asciz "\n"
s_pci:		.asciz "pci 00:1f.7 id="
s_rep:		.ascii "rep outsb: string I/O from one instruction\n"
s_rep_end:
s_bye:		.asciz "mb32: bye\n"

	.bss
	.balign 16
magic:		.long 0
mbi:		.long 0
mods_left:	.long 0
mod_ptr:	.long 0
mod_end:	.long 0
	.balign 16
stack:		.skip 4096
stack_top:
