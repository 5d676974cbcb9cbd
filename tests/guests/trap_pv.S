/* Debug-register and segment-base writes through the paravirtual page (--trap=pv),
 * for the trap engine's tests. The guest side of the protocol is the bundled
 * kernel's (arch/x86_64/guest/pv_debugreg.c, the ABI header's "The paravirtual
 * debug-register page"), in assembly so that a test knows every write it makes. With
 * no page in the boot info (--trap=off, patch) the same routines make the native
 * moves, which patch then traps: the console is the same under every mechanism.
 *
 * Phases (ops = the command line's "ops=N"):
 *   dr7         N DR7 writes with no enable bit: N dr_write at dr7_write_return; under
 *               pv no exit, no hypercall, no load
 *   dr7_enable  N DR7 writes that each turn breakpoint 0 on or off: N dr_write, N
 *               hypercalls, N loads
 *   breakpoint  1 op: DR0 and DR7 arm a CPL0 execute breakpoint, it fires (#DB to this
 *               guest's handler), DR6 is read natively, DR6 and DR7 are cleared: 4
 *               dr_write, 3 hypercalls and 3 loads under pv (the DR0 write needs none)
 *   segbase     N wrmsr to GS_BASE: N segment_load at gs_write_return, native wrmsr */
#include "tests/guests/trap_guest.inc"

#define BOOT_PV_PAGE_GPA 296 /* offsetof(struct sigvisor_boot_info, pv_page_gpa) */
#define MSR_GS_BASE 0xc0000101
#define GS_BASE_INDEX 1 /* seg_base_writes[]: FS_BASE, GS_BASE, KERNEL_GS_BASE */
/* SIGVISOR_HC_PV_DEBUGREG_LOAD is 8 (an enum, which assembly cannot see) */
#define PV_HC_PORT (SIGVISOR_HC_PORT_BASE + 8)

	.text
	.globl _start
_start:
	mov	BOOT_PV_PAGE_GPA(%rdi), %rax	/* identity-mapped: the GPA is the address */
	mov	%rax, pv_page(%rip)
	TRAP_GUEST_START

	PHASE_BEGIN dr7, %r15
	xor	%r12, %r12
1:	cmp	%r15, %r12
	je	2f
	mov	%r12, %rsi
	shl	$8, %rsi
	and	$0x300, %rsi		/* LE, GE */
	mov	$7, %edi
	call	pv_set_debugreg
	.globl dr7_write_return
dr7_write_return:
	inc	%r12
	jmp	1b
2:	PHASE_END

	/* Breakpoint 0 (at an address never executed) on, off, ... */
	mov	$0, %edi
	lea	never_executed(%rip), %rsi
	call	pv_set_debugreg
	PHASE_BEGIN dr7_enable, %r15
	xor	%r12, %r12
1:	cmp	%r15, %r12
	je	2f
	mov	%r12, %rsi
	and	$1, %esi
	xor	$1, %esi		/* L0 on for even i, off for odd */
	mov	$7, %edi
	call	pv_set_debugreg
	inc	%r12
	jmp	1b
2:	PHASE_END
	mov	$7, %edi
	xor	%esi, %esi
	call	pv_set_debugreg

	/* A CPL0 execute breakpoint on bp_target fires in this guest. */
	PHASE_BEGIN breakpoint, $1
	mov	$0, %edi
	lea	bp_target(%rip), %rsi
	call	pv_set_debugreg
	mov	$7, %edi
	mov	$1, %esi		/* L0, execute, 1 byte */
	call	pv_set_debugreg
	EXPECT_FAULT 1f
	call	bp_target		/* #DB before its first instruction */
1:	mov	%db6, %rbx
	mov	$6, %edi
	xor	%esi, %esi
	call	pv_set_debugreg
	mov	$7, %edi
	xor	%esi, %esi
	call	pv_set_debugreg
	PHASE_END
	PRINT_BREAKPOINT

	PHASE_BEGIN segbase, %r15
	xor	%r12, %r12
1:	cmp	%r15, %r12
	je	2f
	mov	%r12, %rsi
	shl	$12, %rsi
	call	wrmsr_gs_base
	.globl gs_write_return
gs_write_return:
	inc	%r12
	jmp	1b
2:	PHASE_END
	mov	$MSR_GS_BASE, %ecx
	rdmsr
	shl	$32, %rdx
	or	%rax, %rdx
	PRINT gs_base, %rdx

	xor	%edi, %edi
	call	guest_exit

	BREAKPOINT_TARGETS

/* void pv_set_debugreg(int index, uint64_t value), index 0-3, 6 or 7: into the pv
 * page (value, dr_writes[index], the caller's sites[] entry), with the load
 * hypercall only when the hardware must change; without a page, the native move.
 * Clobbers rax, rcx, rdx, r8-r11. */
	.globl pv_set_debugreg
pv_set_debugreg:
	mov	pv_page(%rip), %r8
	test	%r8, %r8
	jz	native_set_debugreg
	mov	%rsi, SIGVISOR_PV_OFF_DR(%r8, %rdi, 8)
	incq	SIGVISOR_PV_OFF_DR_WRITES(%r8, %rdi, 8)
	mov	(%rsp), %r9		/* the caller's return address: its site */
	mov	$SIGVISOR_PV_SITE_DR_WRITE, %r10d
	call	count_site
	cmp	$6, %edi		/* DR6: the hardware's status bits are the VMM's */
	je	1f
	call	needs_load
	test	%eax, %eax
	jz	2f
1:	mov	%r8, %rax
	mov	$PV_HC_PORT, %dx
	outl	%eax, %dx
2:	ret

/* eax = whether DR`edi` just written changes the hardware: DR7's enable bits differ
 * from what is loaded, or the register is an enabled breakpoint's address. (The
 * kernel also compares RW/LEN; this guest never changes those of an enabled one.)
 * r8 = the page. Clobbers rax, rcx, r9, r10. */
needs_load:
	mov	SIGVISOR_PV_OFF_DR + 7 * 8(%r8), %r9
	mov	SIGVISOR_PV_OFF_LOADED + 7 * 8(%r8), %r10
	mov	%r9, %rax
	xor	%r10, %rax
	test	$0xff, %al
	jnz	1f
	cmp	$3, %edi
	ja	2f
	lea	(%rdi, %rdi), %ecx	/* L/G bits of breakpoint edi */
	mov	%r9, %rax
	shr	%cl, %rax
	test	$3, %al
	jnz	1f
2:	xor	%eax, %eax
	ret
1:	mov	$1, %eax
	ret

/* One more write of kind r10d from site r9 in the page at r8: its sites[] entry, a
 * free one for a new site. Clobbers rax, rcx. */
count_site:
	lea	SIGVISOR_PV_OFF_SITES(%r8), %rax
	mov	$SIGVISOR_PV_SITES, %ecx
1:	cmpl	$0, 8(%rax)
	jne	2f
	mov	%r9, (%rax)		/* free: this site's entry from now on */
	mov	%r10d, 8(%rax)
2:	cmp	%r9, (%rax)
	jne	3f
	cmp	%r10d, 8(%rax)
	jne	3f
	incq	16(%rax)
	ret
3:	add	$SIGVISOR_PV_SITE_BYTES, %rax
	dec	%ecx
	jnz	1b
	ret

/* The same register moves without a page (patch traps each one). */
native_set_debugreg:
	cmp	$7, %edi
	je	7f
	cmp	$6, %edi
	je	6f
	test	%edi, %edi
	jnz	1f
	mov	%rsi, %db0
	ret
1:	ret				/* DR1-DR3: this guest writes none */
6:	mov	%rsi, %db6
	ret
7:	mov	%rsi, %db7
	ret

/* void wrmsr_gs_base(uint64_t value): a native wrmsr, counted in the pv page first
 * when there is one. Clobbers rax, rcx, rdx, r8-r10. */
wrmsr_gs_base:
	mov	pv_page(%rip), %r8
	test	%r8, %r8
	jz	1f
	incq	SIGVISOR_PV_OFF_SEG_BASE_WRITES + GS_BASE_INDEX * 8(%r8)
	mov	(%rsp), %r9
	mov	$SIGVISOR_PV_SITE_SEGMENT_BASE, %r10d
	call	count_site
1:	mov	$MSR_GS_BASE, %ecx
	mov	%esi, %eax
	mov	%rsi, %rdx
	shr	$32, %rdx
	wrmsr
	ret

	.data
	.balign 8
pv_page:
	.quad	0
