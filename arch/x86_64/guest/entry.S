/*
 * Kernel entry points: boot, exception vectors, and the return to user mode.
 *
 * Every CPL0 instruction costs about a microsecond on a PVM host, so these paths are
 * written to be short: one stub per vector pushes the vector number (and a zero
 * error code where the CPU pushes none), the common path saves the general
 * registers as a struct pt_regs and calls x86_trap(regs) in C, which also delivers
 * pending signals before a return to user mode.
 */
#include "arch/x86_64/guest/apic.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"

#define PT_REGS_CS 144 /* offsetof(struct pt_regs, cs) */

/* Seed 001: with %gs-based per-CPU data the kernel's GS base is swapped in on every
 * entry from user mode and swapped out on the way back. */
.macro SWAPGS_IF_USER
#if !CONFIG_PDA_DIRECT
	testb	$3, PT_REGS_CS(%rsp)
	jz	1f
	swapgs
1:
#endif
.endm

#define KERNEL_STACK_SIZE 16384

	.section .text.entry, "ax"
	.globl _start
_start:
	/* rdi = boot info GPA (the ABI); keep it for kernel_main. */
	lea	boot_stack_top(%rip), %rsp
	call	kernel_main
1:	cli
	hlt
	jmp	1b

/* Vector stubs: 16 bytes each so that the IDT set-up can compute their addresses. */
.macro STUB vector, has_error_code
	.balign 16
	.if \has_error_code == 0
	pushq	$0
	.endif
	pushq	$\vector
	jmp	trap_common
.endm

	.text
	/* 512: the 22 exception stubs (352 bytes) then never cross a 64 KiB boundary, so
	 * their IDT gates differ only in offset_low (cpu_init copies one gate that way). */
	.balign 512
	.globl x86_vector_stubs
x86_vector_stubs:
	STUB 0, 0	/* #DE */
	STUB 1, 0	/* #DB */
	STUB 2, 0	/* NMI */
	STUB 3, 0	/* #BP */
	STUB 4, 0	/* #OF */
	STUB 5, 0	/* #BR */
	STUB 6, 0	/* #UD */
	STUB 7, 0	/* #NM */
	STUB 8, 1	/* #DF */
	STUB 9, 0
	STUB 10, 1	/* #TS */
	STUB 11, 1	/* #NP */
	STUB 12, 1	/* #SS */
	STUB 13, 1	/* #GP */
	STUB 14, 1	/* #PF */
	STUB 15, 0
	STUB 16, 0	/* #MF */
	STUB 17, 1	/* #AC */
	STUB 18, 0	/* #MC */
	STUB 19, 0	/* #XM */
	STUB 20, 0	/* #VE */
	STUB 21, 1	/* #CP */
	.globl x86_syscall_stub
x86_syscall_stub:
	STUB 0x80, 0	/* int $0x80, where the host delivers it (hardware KVM) */
	.globl x86_host_request_stub
x86_host_request_stub:
	STUB SIGVISOR_HOST_REQUEST_VECTOR, 0	/* the host's signal request (fault injection) */
#if CONFIG_SMP
	.globl x86_reschedule_stub
x86_reschedule_stub:
	STUB RESCHEDULE_VECTOR, 0	/* another CPU's wake-up or kick (smp=on) */
	/* The APICs' spurious vector: no EOI, nothing to do. */
	.globl x86_spurious_stub
x86_spurious_stub:
	iretq
#endif

trap_common:
	/* The stack now holds vector, error code and the hardware frame: complete
	 * struct pt_regs (see pt_regs.h, last member pushed first). */
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	pushq	%rax
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	pushq	%rbx
	pushq	%rbp
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	SWAPGS_IF_USER
	mov	%rsp, %rdi
	call	x86_trap
	/* fall through: return to whatever the frame says (user or kernel) */

	.globl x86_return_from_trap
x86_return_from_trap:
	SWAPGS_IF_USER
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rax
	popq	%rcx
	popq	%rdx
	popq	%rsi
	popq	%rdi
	addq	$16, %rsp	/* vector, error code */
	iretq

/* void x86_enter_user(struct pt_regs *regs): leave the kernel through a prepared
 * frame (the first task's first entry to user mode). */
	.globl x86_enter_user
x86_enter_user:
	mov	%rdi, %rsp
	jmp	x86_return_from_trap

/* void x86_switch_to(uint64_t *prev_rsp, uint64_t next_rsp): saves the callee-saved
 * registers on the current kernel stack, switches stacks, restores the next task's
 * and returns into it (into x86_ret_from_spawn for a task that never ran). */
	.globl x86_switch_to
x86_switch_to:
	pushq	%rbx
	pushq	%rbp
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	mov	%rsp, (%rdi)
	mov	%rsi, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	ret

/* A spawned task's first run: its kernel stack holds the pt_regs exec prepared. */
	.globl x86_ret_from_spawn
x86_ret_from_spawn:
	mov	%rsp, %rdi
#if CONFIG_SMP
	call	x86_ret_from_spawn_unlock	/* exit_to_user_mode, then the kernel lock */
#else
	call	exit_to_user_mode
#endif
	jmp	x86_return_from_trap

#if CONFIG_SMP
/* An application processor's first instruction (SIGVISOR_HC_CPU_UP, smp.c): rdi = its
 * number, rsp = the top of its idle stack, interrupts off, the boot CPU's tables. */
	.globl x86_ap_entry
x86_ap_entry:
	call	x86_ap_start
2:	cli
	hlt
	jmp	2b

/* void x86_idle_halt(void): the idle loop's halt (asm/smp.h). Nothing else may sit
 * between the `sti` and the `hlt`: the reschedule handler resumes an interrupt that
 * came at x86_idle_hlt past it. */
	.globl x86_idle_halt
	.globl x86_idle_hlt
x86_idle_halt:
	sti
x86_idle_hlt:
	hlt
	cli
	ret

/* CPU 0's idle task's first run (copy_idle_thread): the idle loop. */
	.globl x86_idle_entry
x86_idle_entry:
	call	cpu_idle
	jmp	2b
#endif

	.bss
	.balign 16
boot_stack:
	.skip KERNEL_STACK_SIZE
	.globl boot_stack_top
boot_stack_top:

	.section .note.GNU-stack, "", @progbits
