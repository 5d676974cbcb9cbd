/*
 * Kernel entry points on MIPS: boot, the exception vectors, the return to user mode
 * and the context switch.
 *
 * Every core starts at _start. Under sigvisor a0 = SIGVISOR_BOOT_INFO_MAGIC and a2 =
 * the core's number: core 0 boots the kernel, the others park in `wait` serving
 * IPIs (smp.c). Under QEMU Malta a0 is argc and there is one core.
 *
 * An exception saves every register as a struct pt_regs (asm/ptrace.h): on the
 * current stack when it came from kernel mode, at the top of the task's kernel stack
 * (mips_kernel_sp) when it came from user mode. The handler then clears EXL, so
 * that a TLB miss on a user access inside the kernel takes the refill vector and
 * keeps its own EPC; interrupts stay off in the kernel.
 */
#include "asm/mipsregs.h"
#include "asm/ptrace.h"
#include "asm/regdef.h"

/* SIGVISOR_BOOT_INFO_MAGIC (guest-kit/abi/sigvisor_abi.h is C; setup.c checks that
 * the two agree). */
#define BOOT_INFO_MAGIC 0x73766269

#define BOOT_STACK_SIZE 16384
#define PARK_STACK_SIZE 1024
#define MAX_PARKED_CORES 31 /* 32 cores in all, as `--cores` allows */

	.set	noreorder

/* ---- Exception vectors, linked at EBase (0x80000000: kernel.ld) ------------- */
	.section .vectors, "ax"
	.set	noat
	.globl	mips_tlb_refill
mips_tlb_refill:		/* EBase + 0x000: TLB refill with EXL = 0 */
	mfc0	k0, $8
	lui	k1, %hi(current_pgd)
	lw	k1, %lo(current_pgd)(k1)
	srl	k0, k0, 22		/* directory index */
	sll	k0, k0, 2
	addu	k1, k1, k0
	mfc0	k0, $8
	lw	k1, 0(k1)		/* the page table (or the all-zero one) */
	srl	k0, k0, 10
	andi	k0, k0, 0xff8		/* the even/odd PTE pair of this VPN2 */
	addu	k1, k1, k0
	lw	k0, 0(k1)
	lw	k1, 4(k1)
	mtc0	k0, $2
	mtc0	k1, $3
	ehb
	tlbwr
	eret

	.org	0x180
mips_general_vector:		/* EBase + 0x180: everything else */
	j	mips_handle_exception
	nop
	.set	at

/* ---- Boot ---------------------------------------------------------------------- */
	.section .text.entry, "ax"
	.globl	_start
_start:
	/* Kernel mode, EXL/ERL/BEV/IE clear (QEMU's loader leaves ERL set). */
	li	t0, ST0_CU0
	mtc0	t0, $12
	ehb
	li	t0, BOOT_INFO_MAGIC
	bne	a0, t0, 1f
	nop
	bnez	a2, secondary_start
	nop
1:	la	sp, boot_stack_top - 16	/* the o32 argument save area */
	jal	mips_boot		/* (a0, a1, a2, a3) as the loader left them */
	nop
2:	wait
	b	2b
	nop

secondary_start:
	sltiu	t0, a2, MAX_PARKED_CORES + 1
	beqz	t0, 2b			/* more cores than park stacks: stay off */
	nop
	la	sp, park_stacks
	li	t0, PARK_STACK_SIZE
	mul	t0, t0, a2		/* core n's stack: (n - 1) * SIZE .. n * SIZE */
	addu	sp, sp, t0
	addiu	sp, sp, -16
	move	a0, a2
	jal	mips_secondary_main	/* does not return */
	nop
	b	2b
	nop

/* ---- The general exception handler ---------------------------------------------- */
	.text
	.set	noat
	.globl	mips_handle_exception
mips_handle_exception:
	mfc0	k0, $12
	andi	k0, k0, ST0_KSU_USER
	beqz	k0, 1f
	move	k1, sp			/* from kernel mode: stay on this stack */
	lui	k1, %hi(mips_kernel_sp)
	lw	k1, %lo(mips_kernel_sp)(k1)
1:	addiu	k1, k1, -PT_SIZE
	sw	sp, PT_R(29)(k1)
	move	sp, k1
	sw	$1, PT_R(1)(sp)
	sw	$2, PT_R(2)(sp)
	sw	$3, PT_R(3)(sp)
	sw	$4, PT_R(4)(sp)
	sw	$5, PT_R(5)(sp)
	sw	$6, PT_R(6)(sp)
	sw	$7, PT_R(7)(sp)
	sw	$8, PT_R(8)(sp)
	sw	$9, PT_R(9)(sp)
	sw	$10, PT_R(10)(sp)
	sw	$11, PT_R(11)(sp)
	sw	$12, PT_R(12)(sp)
	sw	$13, PT_R(13)(sp)
	sw	$14, PT_R(14)(sp)
	sw	$15, PT_R(15)(sp)
	sw	$16, PT_R(16)(sp)
	sw	$17, PT_R(17)(sp)
	sw	$18, PT_R(18)(sp)
	sw	$19, PT_R(19)(sp)
	sw	$20, PT_R(20)(sp)
	sw	$21, PT_R(21)(sp)
	sw	$22, PT_R(22)(sp)
	sw	$23, PT_R(23)(sp)
	sw	$24, PT_R(24)(sp)
	sw	$25, PT_R(25)(sp)
	sw	$28, PT_R(28)(sp)
	sw	$30, PT_R(30)(sp)
	sw	$31, PT_R(31)(sp)
	mflo	t0
	sw	t0, PT_LO(sp)
	mfhi	t0
	sw	t0, PT_HI(sp)
	mfc0	t0, $14
	sw	t0, PT_EPC(sp)
	mfc0	t0, $8
	sw	t0, PT_BADVADDR(sp)
	mfc0	t0, $13
	sw	t0, PT_CAUSE(sp)
	mfc0	t0, $12
	sw	t0, PT_STATUS(sp)
	li	t1, ~(ST0_KSU_USER | ST0_ERL | ST0_EXL | ST0_IE)
	and	t0, t0, t1
	mtc0	t0, $12		/* kernel mode, EXL clear, interrupts off */
	ehb
	.set	at
	move	a0, sp
	jal	mips_trap
	nop
	/* fall through: return to whatever the frame says (user or kernel) */

	.globl	mips_return_from_trap
mips_return_from_trap:
	.set	noat
	lw	t0, PT_STATUS(sp)	/* EXL set again: kernel mode until eret */
	mtc0	t0, $12
	ehb
	lw	t0, PT_EPC(sp)
	mtc0	t0, $14
	lw	t0, PT_LO(sp)
	mtlo	t0
	lw	t0, PT_HI(sp)
	mthi	t0
	lw	$1, PT_R(1)(sp)
	lw	$2, PT_R(2)(sp)
	lw	$3, PT_R(3)(sp)
	lw	$4, PT_R(4)(sp)
	lw	$5, PT_R(5)(sp)
	lw	$6, PT_R(6)(sp)
	lw	$7, PT_R(7)(sp)
	lw	$8, PT_R(8)(sp)
	lw	$9, PT_R(9)(sp)
	lw	$10, PT_R(10)(sp)
	lw	$11, PT_R(11)(sp)
	lw	$12, PT_R(12)(sp)
	lw	$13, PT_R(13)(sp)
	lw	$14, PT_R(14)(sp)
	lw	$15, PT_R(15)(sp)
	lw	$16, PT_R(16)(sp)
	lw	$17, PT_R(17)(sp)
	lw	$18, PT_R(18)(sp)
	lw	$19, PT_R(19)(sp)
	lw	$20, PT_R(20)(sp)
	lw	$21, PT_R(21)(sp)
	lw	$22, PT_R(22)(sp)
	lw	$23, PT_R(23)(sp)
	lw	$24, PT_R(24)(sp)
	lw	$25, PT_R(25)(sp)
	lw	$28, PT_R(28)(sp)
	lw	$30, PT_R(30)(sp)
	lw	$31, PT_R(31)(sp)
	lw	sp, PT_R(29)(sp)
	eret
	.set	at

/* void mips_enter_user(struct pt_regs *regs): leave the kernel through a prepared
 * frame (the first task's first entry to user mode). */
	.globl	mips_enter_user
mips_enter_user:
	j	mips_return_from_trap
	move	sp, a0

/* void mips_switch_to(uintptr_t *prev_sp, uintptr_t next_sp): saves the callee-saved
 * registers on the current kernel stack, switches stacks, restores the next task's
 * and returns into it (into mips_ret_from_spawn for a task that never ran). The
 * frame is SWITCH_FRAME_WORDS (asm/switch_to.h) words: s0-s8, gp, ra, a pad. */
	.globl	mips_switch_to
mips_switch_to:
	addiu	sp, sp, -48
	sw	s0, 0(sp)
	sw	s1, 4(sp)
	sw	s2, 8(sp)
	sw	s3, 12(sp)
	sw	s4, 16(sp)
	sw	s5, 20(sp)
	sw	s6, 24(sp)
	sw	s7, 28(sp)
	sw	s8, 32(sp)
	sw	gp, 36(sp)
	sw	ra, 40(sp)
	sw	sp, 0(a0)
	move	sp, a1
	lw	s0, 0(sp)
	lw	s1, 4(sp)
	lw	s2, 8(sp)
	lw	s3, 12(sp)
	lw	s4, 16(sp)
	lw	s5, 20(sp)
	lw	s6, 24(sp)
	lw	s7, 28(sp)
	lw	s8, 32(sp)
	lw	gp, 36(sp)
	lw	ra, 40(sp)
	jr	ra
	addiu	sp, sp, 48

/* A spawned task's first run: sp is at the pt_regs exec prepared. */
	.globl	mips_ret_from_spawn
mips_ret_from_spawn:
	jal	exit_to_user_mode
	move	a0, sp
	j	mips_return_from_trap
	nop

	.bss
	.balign	8
boot_stack:
	.skip	BOOT_STACK_SIZE
	.globl	boot_stack_top
boot_stack_top:
park_stacks:
	.skip	PARK_STACK_SIZE * MAX_PARKED_CORES
