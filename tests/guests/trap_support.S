/* Support for the trap test guests (trap_dr, trap_seg): a stack, an IDT whose
 * handler records a fault and resumes where the guest said, hex output through the
 * console hypercall, phase markers, the ops count from the command line, and exit.
 * None of it is a trap site: every instruction a test counts is in the guest itself.
 *
 * Calling convention: System V registers; every routine may clobber rax, rcx, rdx,
 * rsi, rdi, r8-r11 and keeps rbx, rbp, r12-r15. */
#define GUEST_NO_NOTE
#include "tests/guests/guest.inc"

#define IDT_VECTORS 32
#define STUB_SIZE 16

	.text
/* void trap_guest_init(void): the stack is set by the caller's first instruction
 * (see TRAP_GUEST_START); this builds and loads the IDT. */
	.globl trap_guest_init
trap_guest_init:
	lea	idt(%rip), %rdi
	lea	fault_stubs(%rip), %rsi
	xor	%ecx, %ecx
1:	mov	%rsi, %rax
	mov	%ax, (%rdi)		/* offset 15:0 */
	movw	$0x10, 2(%rdi)		/* kernel code selector */
	movw	$0x8e00, 4(%rdi)	/* present, DPL0, 64-bit interrupt gate */
	shr	$16, %rax
	mov	%ax, 6(%rdi)		/* offset 31:16 */
	shr	$16, %rax
	mov	%eax, 8(%rdi)		/* offset 63:32 */
	movl	$0, 12(%rdi)
	add	$16, %rdi
	add	$STUB_SIZE, %rsi
	inc	%ecx
	cmp	$IDT_VECTORS, %ecx
	jne	1b
	lidt	idt_pointer(%rip)
	ret

/* One stub per vector: push a zero error code where the CPU pushes none, then the
 * vector. */
.macro FAULT_STUB vector
	.balign STUB_SIZE
	.if (\vector == 8) || (\vector >= 10 && \vector <= 14) || (\vector == 17) || (\vector == 21)
	.else
	pushq	$0
	.endif
	pushq	$\vector
	jmp	fault_common
.endm

	.balign STUB_SIZE
fault_stubs:
	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	FAULT_STUB \v
	.endr

/* Records vector, error code and RIP, and returns to fault_resume (or exits with
 * status 99 when the guest expected no fault). */
fault_common:
	popq	fault_vector(%rip)
	popq	fault_error(%rip)
	mov	(%rsp), %rax
	mov	%rax, fault_rip(%rip)
	mov	fault_resume(%rip), %rax
	test	%rax, %rax
	jz	2f
	mov	%rax, (%rsp)
	movq	$0, fault_resume(%rip)
	iretq
2:	mov	$99, %edi
	jmp	guest_exit

/* void print_hex(const char *label, uint64_t value): "label=0x<16 digits>\n". */
	.globl print_hex
print_hex:
	lea	line(%rip), %r8
	mov	%r8, %r9
1:	movzbl	(%rdi), %eax
	test	%eax, %eax
	jz	2f
	mov	%al, (%r9)
	inc	%rdi
	inc	%r9
	jmp	1b
2:	movb	$'=', (%r9)
	movb	$'0', 1(%r9)
	movb	$'x', 2(%r9)
	add	$3, %r9
	mov	$16, %ecx
	lea	hex_digits(%rip), %rdx
3:	rol	$4, %rsi
	mov	%esi, %eax
	and	$0xf, %eax
	movzbl	(%rdx,%rax), %eax
	mov	%al, (%r9)
	inc	%r9
	dec	%ecx
	jnz	3b
	movb	$'\n', (%r9)
	inc	%r9
	sub	%r8, %r9
	mov	%r8, console_args(%rip)
	mov	%r9, console_args+8(%rip)
	HYPERCALL 1, console_args
	ret

/* uint64_t parse_ops(const struct sigvisor_boot_info *info): "ops=N" -> N. */
	.globl parse_ops
parse_ops:
	PARSE_OPS
	mov	%rcx, %rax
	ret

/* void phase_begin(const char name[32], uint64_t ops) / void phase_end(void). */
	.globl phase_begin
phase_begin:
	lea	phase_args(%rip), %rdx
	mov	$4, %ecx
1:	mov	(%rdi), %rax		/* the name: 32 bytes */
	mov	%rax, (%rdx)
	add	$8, %rdi
	add	$8, %rdx
	dec	%ecx
	jnz	1b
	mov	%rsi, phase_args+32(%rip)
	movq	$0, phase_args+40(%rip)	/* tsc: not measured here */
	movq	$0, phase_args+48(%rip)	/* flags */
	HYPERCALL 3, phase_args
	ret

	.globl phase_end
phase_end:
	HYPERCALL 4, phase_end_args
	ret

/* void guest_exit(int status) */
	.globl guest_exit
guest_exit:
	mov	%rdi, exit_args(%rip)
	HYPERCALL 2, exit_args
	hlt

	.section .rodata
hex_digits:
	.ascii "0123456789abcdef"
idt_pointer:
	.word IDT_VECTORS * 16 - 1
	.quad idt

	.data
	.balign 8
	.globl fault_vector, fault_error, fault_rip, fault_resume
fault_vector:	.quad 0
fault_error:	.quad 0
fault_rip:	.quad 0
fault_resume:	.quad 0
console_args:	.quad 0, 0
phase_args:	.fill 56, 1, 0
phase_end_args:	.quad 0
exit_args:	.quad 0
line:		.fill 128, 1, 0

	.bss
	.balign 16
idt:	.fill IDT_VECTORS * 16, 1, 0
	.balign 16
	.globl trap_guest_stack_top
trap_guest_stack:
	.fill 8192, 1, 0
trap_guest_stack_top:
