/*
 * A Multiboot v1 test kernel that is a flat binary: its header carries the address
 * fields (flag bit 16, the "a.out kludge"), which say where the file goes, where its
 * bss ends and where to enter. It checks that its bss came up zeroed, prints, and
 * exits through isa-debug-exit with 0x11: status 35.
 */
#include "mb_lib32.inc"

#define MB_FLAGS ((1 << 1) | (1 << 16))

	.section .multiboot, "a"
	.balign 4
header:
	.long	0x1badb002
	.long	MB_FLAGS
	.long	-(0x1badb002 + MB_FLAGS)
	.long	header			/* header_addr */
	.long	__load_start		/* load_addr */
	.long	__data_end		/* load_end_addr */
	.long	__bss_end		/* bss_end_addr */
	.long	entry			/* entry_addr */

	.text
	.globl	_start	/* the linker's entry symbol; the loader uses entry_addr */
_start:
entry:
	mov	$stack_top, %esp
	mov	%eax, %ebp
	call	serial_init
	PUTS(s_hello)
	cmp	$MB_LOADER_MAGIC, %ebp
	je	1f
	PUTS(s_badmagic)
	mov	$0x7f, %al
	jmp	debug_exit
1:	cmpl	$0, canary
	je	2f
	PUTS(s_dirty)
	mov	$0x7d, %al
	jmp	debug_exit
2:	PUTS(s_bye)
	mov	$0x11, %al
	jmp	debug_exit

	.section .rodata
s_hello:	.asciz "mb_aout: hello from a flat binary loaded by its address fields\n"
s_badmagic:	.asciz "mb_aout: bad loader magic\n"
s_dirty:	.asciz "mb_aout: bss not zeroed\n"
s_bye:		.asciz "mb_aout: bss zeroed, bye\n"

	.bss
	.balign 16
canary:	.long 0
stack:	.skip 4096
stack_top:
