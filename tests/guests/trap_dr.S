/* Debug-register accesses at CPL0, for the trap engine's tests. Prints every value
 * it reads back (the same with --trap=off and with a trap mechanism; only the counts
 * differ) and exits 0.
 *
 * Phases (ops = the command line's "ops=N"):
 *   dr7         N x (write DR7 with no enable bit, read it back): N dr_write, N dr_read,
 *               no hardware load
 *   dr7_enable  N DR7 writes that each turn breakpoint 0 on or off: N dr_write, N loads
 *   breakpoint  1 op: DR0/DR7 arm a CPL0 execute breakpoint, it fires (#DB to this
 *               guest's handler), the handler's code reads DR6, clears DR6 and DR7:
 *               4 dr_write, 1 dr_read, 3 loads
 * Between them: DR0-DR3/DR6 round trips through REX registers, DR4/DR5 aliases, and
 * general detection (DR7.GD: the next DR access raises #DB with DR6.BD). */
#include "tests/guests/trap_guest.inc"

	.text
	.globl _start
_start:
	TRAP_GUEST_START

	/* Phase dr7: no enable bits, only LE/GE toggled. */
	PHASE_BEGIN dr7, %r15
	xor	%r12, %r12		/* i */
	xor	%r13, %r13		/* mismatches */
1:	cmp	%r15, %r12
	je	2f
	mov	%r12, %rax
	shl	$8, %rax
	and	$0x300, %rax		/* LE, GE */
	.globl dr7_write_site
dr7_write_site:
	mov	%rax, %db7
	.globl dr7_read_site
dr7_read_site:
	mov	%db7, %rbx
	or	$0x400, %rax
	cmp	%rax, %rbx
	je	3f
	inc	%r13
3:	inc	%r12
	jmp	1b
2:	PHASE_END
	PRINT dr7_mismatches, %r13
	PRINT dr7_last, %rbx

	/* Phase dr7_enable: breakpoint 0 (at an address never executed) on, off, ... */
	lea	never_executed(%rip), %rax
	mov	%rax, %db0
	PHASE_BEGIN dr7_enable, %r15
	xor	%r12, %r12
1:	cmp	%r15, %r12
	je	2f
	mov	%r12, %rax
	and	$1, %eax
	xor	$1, %eax		/* L0 on for even i, off for odd */
	mov	%rax, %db7
	inc	%r12
	jmp	1b
2:	PHASE_END
	xor	%eax, %eax
	mov	%rax, %db7

	/* DR0-DR3 through REX.B registers, read back through others. */
	mov	$0x0000111111111000, %r8
	mov	$0x0000222222222000, %r9
	mov	$0x0000333333333000, %r10
	mov	$0xffff800000004000, %r15
	mov	%r8, %db0
	mov	%r9, %db1
	mov	%r10, %db2
	mov	%r15, %db3
	mov	%db0, %r11
	PRINT dr0, %r11
	mov	%db1, %r14
	PRINT dr1, %r14
	mov	%db2, %rcx
	PRINT dr2, %rcx
	mov	%db3, %r13
	PRINT dr3, %r13
	/* DR6: only B0-B3, BD, BS, BT can be written. */
	xor	%eax, %eax
	mov	%rax, %db6
	mov	%db6, %rbx
	PRINT dr6_zero, %rbx
	mov	$0xf00f, %eax
	mov	%rax, %db6
	mov	%db6, %rbx
	PRINT dr6_status, %rbx
	xor	%eax, %eax
	mov	%rax, %db6
	/* DR4 and DR5 are DR6 and DR7 while CR4.DE is clear. */
	mov	$0x100, %eax
	mov	%rax, %db5
	mov	%db7, %rbx
	PRINT dr7_via_dr5, %rbx
	mov	%db4, %rbx
	PRINT dr6_via_dr4, %rbx

	/* General detection: with DR7.GD the next DR access raises #DB (DR6.BD) and GD is
	 * cleared; the access then runs normally. */
	mov	$0x2000, %eax
	mov	%rax, %db7
	EXPECT_FAULT 1f
	.globl gd_faulting_site
gd_faulting_site:
	mov	%db0, %rbx
1:	PRINT_FAULT
	mov	%db6, %rbx
	PRINT dr6_after_gd, %rbx
	mov	%db7, %rbx
	PRINT dr7_after_gd, %rbx
	xor	%eax, %eax
	mov	%rax, %db6

	/* Phase breakpoint: a CPL0 execute breakpoint on bp_target fires in this guest. */
	PHASE_BEGIN breakpoint, $1
	lea	bp_target(%rip), %rax
	mov	%rax, %db0
	mov	$1, %eax		/* L0, execute, 1 byte */
	mov	%rax, %db7
	EXPECT_FAULT 1f
	call	bp_target		/* #DB before its first instruction */
1:	mov	%db6, %rbx
	xor	%eax, %eax
	mov	%rax, %db6
	mov	%rax, %db7
	PHASE_END
	PRINT_BREAKPOINT

	xor	%edi, %edi
	call	guest_exit

	BREAKPOINT_TARGETS
