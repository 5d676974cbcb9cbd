/*
 * Booting under QEMU: a Multiboot v1 header and a 32-bit entry that sets up long mode
 * itself, so that `qemu-system-x86_64 -kernel kernel.elf` runs the same image that
 * sigvisor runs (sigvisor enters at _start, already in long mode).
 *
 * QEMU loads 64-bit ELF images only through the header's address fields (the "a.out
 * kludge", flag bit 16), which work because the image's loadable segments sit in the
 * file in address order with no gaps (kernel.ld).
 */
#define MULTIBOOT_MAGIC 0x1badb002
#define MULTIBOOT_FLAGS ((1 << 1) | (1 << 16)) /* memory info; address fields */
#define MULTIBOOT_LOADER_MAGIC 0x2badb002
#define MSR_EFER 0xc0000080
#define EFER_LME (1 << 8)
#define EFER_NXE (1 << 11)
#define CR0_PE 1
#define CR0_WP (1 << 16)
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define PAGE_PRESENT_WRITABLE 0x3
#define PAGE_LARGE 0x80

	.section .multiboot, "a"
	.balign 4
multiboot_header:
	.long	MULTIBOOT_MAGIC
	.long	MULTIBOOT_FLAGS
	.long	-(MULTIBOOT_MAGIC + MULTIBOOT_FLAGS)
	.long	multiboot_header	/* header_addr */
	.long	__kernel_start		/* load_addr */
	.long	__data_end		/* load_end_addr: the file-backed part */
	.long	__bss_end		/* bss_end_addr: zeroed by the loader */
	.long	multiboot_entry		/* entry_addr */

	.text
	.code32
	.globl multiboot_entry
multiboot_entry:
	cli
	cmp	$MULTIBOOT_LOADER_MAGIC, %eax
	jne	1f
	mov	%ebx, %edi			/* the Multiboot info, for later */
	mov	$boot_stack_top, %esp
	/* The firmware left the legacy PIC routing IRQ0-7 to vectors 8-15, where the
	 * kernel has its exception handlers: mask every line (sigvisor has no PIC). */
	mov	$0xff, %al
	out	%al, $0x21
	out	%al, $0xa1

	/* Identity-map the first GiB, supervisor-only, as sigvisor's boot tables do:
	 * PML4[0] -> PDPT[0] -> PD[1..511] of 2 MiB pages, and PD[0] -> 4 KiB pages with
	 * page 0 left not present, so that a null pointer faults here too. */
	mov	$multiboot_pdpt, %eax
	or	$PAGE_PRESENT_WRITABLE, %eax
	mov	%eax, multiboot_pml4
	mov	$multiboot_pd, %eax
	or	$PAGE_PRESENT_WRITABLE, %eax
	mov	%eax, multiboot_pdpt
	xor	%ecx, %ecx
2:	mov	%ecx, %eax
	shl	$21, %eax
	or	$(PAGE_PRESENT_WRITABLE | PAGE_LARGE), %eax
	mov	%eax, multiboot_pd(, %ecx, 8)
	inc	%ecx
	cmp	$512, %ecx
	jne	2b
	mov	$multiboot_low_pt, %eax
	or	$PAGE_PRESENT_WRITABLE, %eax
	mov	%eax, multiboot_pd
	mov	$1, %ecx
4:	mov	%ecx, %eax
	shl	$12, %eax
	or	$PAGE_PRESENT_WRITABLE, %eax
	mov	%eax, multiboot_low_pt(, %ecx, 8)
	inc	%ecx
	cmp	$512, %ecx
	jne	4b

	mov	%cr4, %eax
	or	$CR4_PAE, %eax
	mov	%eax, %cr4
	mov	$multiboot_pml4, %eax
	mov	%eax, %cr3
	mov	$MSR_EFER, %ecx
	rdmsr
	or	$(EFER_LME | EFER_NXE), %eax
	wrmsr
	mov	%cr0, %eax
	or	$(CR0_PE | CR0_WP | CR0_PG), %eax
	mov	%eax, %cr0
	lgdt	multiboot_gdt_pointer
	ljmp	$0x10, $multiboot_entry64
1:	hlt
	jmp	1b

	.code64
multiboot_entry64:
	mov	$0x18, %eax
	mov	%eax, %ds
	mov	%eax, %es
	mov	%eax, %ss
	lea	boot_stack_top(%rip), %rsp
	/* rdi = the Multiboot info: turn it into sigvisor's boot info, then boot as
	 * sigvisor would. */
	call	multiboot_boot_info
	mov	%rax, %rdi
	call	kernel_main
3:	cli
	hlt
	jmp	3b

	.section .rodata
	.balign 8
multiboot_gdt:
	.quad	0
	.quad	0x00cf9b000000ffff	/* 0x08 kernel CS32 */
	.quad	0x00af9b000000ffff	/* 0x10 kernel CS64 */
	.quad	0x00cf93000000ffff	/* 0x18 kernel DS */
multiboot_gdt_pointer:
	.word	4 * 8 - 1
	.long	multiboot_gdt

	.bss
	.balign 4096
multiboot_pml4:
	.skip	4096
multiboot_pdpt:
	.skip	4096
multiboot_pd:
	.skip	4096
multiboot_low_pt:
	.skip	4096

	.section .note.GNU-stack, "", @progbits
