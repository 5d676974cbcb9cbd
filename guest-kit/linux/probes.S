/* The self-test's faulting instructions, each a function: PROBE_fault is the
 * instruction that faults and PROBE_after the one after it, where the test's
 * handler resumes (guest-kit/linux/selftest.c). */

	.text
	.macro EXPORT name
	.globl \name, \name\()_fault, \name\()_after
	.endm

	EXPORT probe_divide        /* #DE: SIGFPE FPE_INTDIV at the div; divzero's operation */
probe_divide:
	xor %edx, %edx
	xor %ecx, %ecx
	mov $1, %eax
probe_divide_fault:
	divq %rcx
probe_divide_after:
	ret

	EXPORT probe_unmapped      /* #PF: SIGSEGV SEGV_MAPERR at 0x10 */
probe_unmapped:
	mov $0x10, %ecx
probe_unmapped_fault:
	mov (%rcx), %rax
probe_unmapped_after:
	ret

	EXPORT probe_text_write    /* #PF on a read-only page: SEGV_ACCERR */
probe_text_write:
	lea probe_text_write_after(%rip), %rcx
probe_text_write_fault:
	movb $0, (%rcx)
probe_text_write_after:
	ret

	EXPORT probe_int3          /* #BP from CPL3: SIGTRAP SI_KERNEL, rip past it */
probe_int3:
probe_int3_fault:
	int3
probe_int3_after:
	ret

	EXPORT probe_ud2           /* #UD: SIGILL ILL_ILLOPN at the ud2 */
probe_ud2:
probe_ud2_fault:
	ud2
probe_ud2_after:
	ret

	EXPORT probe_hlt           /* privileged at CPL3, #GP(0): SIGSEGV SI_KERNEL */
probe_hlt:
probe_hlt_fault:
	hlt
probe_hlt_after:
	ret

/* void registers_across_sigill(const uint64_t in[15], uint64_t out[15]):
 * loads rax, rbx, rcx, rdx, rsi, rdi, rbp, r8-r15 from in[], executes ud2 (the
 * test's SIGILL handler steps over it), and stores the same registers to out[]. */
	.globl registers_across_sigill
registers_across_sigill:
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push %rsi                  /* out */
	mov 0(%rdi), %rax
	mov 8(%rdi), %rbx
	mov 16(%rdi), %rcx
	mov 24(%rdi), %rdx
	mov 32(%rdi), %rsi
	mov 48(%rdi), %rbp
	mov 56(%rdi), %r8
	mov 64(%rdi), %r9
	mov 72(%rdi), %r10
	mov 80(%rdi), %r11
	mov 88(%rdi), %r12
	mov 96(%rdi), %r13
	mov 104(%rdi), %r14
	mov 112(%rdi), %r15
	mov 40(%rdi), %rdi
	ud2
	push %rax
	mov 8(%rsp), %rax          /* out */
	mov %rbx, 8(%rax)
	mov %rcx, 16(%rax)
	mov %rdx, 24(%rax)
	mov %rsi, 32(%rax)
	mov %rdi, 40(%rax)
	mov %rbp, 48(%rax)
	mov %r8, 56(%rax)
	mov %r9, 64(%rax)
	mov %r10, 72(%rax)
	mov %r11, 80(%rax)
	mov %r12, 88(%rax)
	mov %r13, 96(%rax)
	mov %r14, 104(%rax)
	mov %r15, 112(%rax)
	pop %rcx                   /* the rax that came back */
	mov %rcx, 0(%rax)
	add $8, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret

	.section .note.GNU-stack, "", @progbits
