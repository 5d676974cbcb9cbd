/*
 * calibrate.S: the calibration guest of `sigvisor probe`.
 *
 * Entered at CPL0 in long mode with rdi = the parameter block (probe_abi.h). It runs
 * one case and reports by `out` (probe_abi.h lists the ports). On a PVM host every
 * CPL0 instruction is emulated at about 1 us each, so each path here is as short as
 * it can be: a case sets up only what it needs (an IDT only for cases that trap, user
 * pages only for the CPL3 cases), and the timed loops are `<op>; dec; jnz`.
 *
 * Never `vmcall` (it livelocks the vCPU on PVM), and no `int3` outside case INT3
 * (at CPL0 on PVM it is an emulation failure the VMM has to skip).
 */
#include "guest-kit/probe/probe_abi.h"

#define SEL_KERNEL_CS 0x10
#define SEL_USER_DS 0x2b
#define SEL_USER_CS 0x33
#define MSR_LSTAR 0xc0000082
#define PTE_USER 0x4
#define TSS_RSP0 4
#define IDT_VECTORS 0x81 /* up to and including 0x80 */

/* Interrupt gates: present, DPL0 or DPL3 (a DPL3 gate may be the target of INT n
 * from CPL3). */
#define GATE_DPL0 0x8e
#define GATE_DPL3 0xee

/* Reports marker `m`: three instructions, the last one exits. */
.macro MARK m
	mov $\m, %eax
	mov $PROBE_PORT_MARKER, %edx
	out %eax, %dx
.endm

/* Points IDT vector `vec` at `handler` (a register or $symbol below 4 GiB). The
 * upper half of the gate stays zero from .bss. */
.macro GATE vec, handler, attr
	mov \handler, %eax
	mov %ax, idt + \vec * 16
	shr $16, %eax
	mov %ax, idt + \vec * 16 + 6
	movl $(SEL_KERNEL_CS | (\attr << 24)), idt + \vec * 16 + 2 /* selector, ist 0, attr */
.endm

	.code64
	.section .text.entry, "ax"
	.globl _start
_start:
	mov $kstack_top, %esp          /* the VMM leaves rsp = 0 */
	mov PROBE_PARAM_ITERATIONS(%rdi), %r13
	test %r13, %r13
	jz bad_params
	mov PROBE_PARAM_CASE(%rdi), %rax
	cmp $PROBE_CASE_COUNT, %rax
	jae bad_params
	jmp *case_table(, %rax, 8)

bad_params:
	MARK PROBE_MARK_BAD_PARAMS
	jmp stop

	.text
/* ---- timed cases: r13 = K ---------------------------------------------------- */

case_empty:
	mov %r13, %rcx
	MARK PROBE_MARK_BEGIN
1:	dec %rcx
	jnz 1b
	MARK PROBE_MARK_END
	jmp stop

case_out:
	mov %r13, %rcx
	MARK PROBE_MARK_BEGIN
	mov $PROBE_PORT_WORK, %edx
1:	out %eax, %dx
	dec %rcx
	jnz 1b
	MARK PROBE_MARK_END
	jmp stop

case_hlt:
	mov %r13, %rcx
	MARK PROBE_MARK_BEGIN
1:	hlt                            /* no irqchip: KVM_EXIT_HLT, rip already past it */
	dec %rcx
	jnz 1b
	MARK PROBE_MARK_END
	jmp stop

case_int3:
	/* On PVM the int3 is an emulation failure the VMM skips; on hardware it reaches
	 * the #BP handler, which counts it. */
	mov $db_self_trap, %edi
	call setup_idt
	mov %r13, %rcx
	MARK PROBE_MARK_BEGIN
1:	int3
	dec %rcx
	jnz 1b
	MARK PROBE_MARK_END
	jmp stop

case_mov_dr7:
	/* The VMM set DR7.GD through KVM_SET_GUEST_DEBUG; if that works, each write
	 * exits with KVM_EXIT_DEBUG and the VMM skips it. */
	mov $db_self_trap, %edi
	call setup_idt
	mov %r13, %rcx
	MARK PROBE_MARK_BEGIN
	mov $PROBE_DR7_CLEAN, %eax
1:	mov %rax, %dr7
	dec %rcx
	jnz 1b
	MARK PROBE_MARK_END
	jmp stop

case_gd_self_trap:
	mov $db_self_trap, %edi
	jmp gd_self_trap
case_gd_self_trap_pv:
	mov $db_self_trap_pv, %edi
gd_self_trap:
	call setup_idt
	mov $PROBE_DR7_GD, %eax
	mov %rax, %dr7                 /* from now on any DR access raises #DB (DR6.BD) */
	mov %r13, %rcx
	MARK PROBE_MARK_BEGIN
1:	mov %dr7, %rax                 /* #DB; the handler skips these 3 bytes */
	dec %rcx
	jnz 1b
	MARK PROBE_MARK_END
	jmp stop

/* ---- fact cases: the first report ends the run ------------------------------- */

case_syscall:
	mov $db_self_trap, %edi        /* (#DB is not expected here) */
	call setup_idt
	call setup_user
	mov $MSR_LSTAR, %ecx
	mov $syscall_target, %eax
	xor %edx, %edx
	wrmsr
	mov $user_syscall, %eax
	jmp to_user

case_int80:
	mov $db_self_trap, %edi
	call setup_idt
	call setup_user
	mov $user_int80, %eax
	jmp to_user

/* Drops to CPL3 at rax with the user stack and interrupts off. */
to_user:
	pushq $SEL_USER_DS
	pushq $ustack_top
	pushq $0x2
	pushq $SEL_USER_CS
	push %rax
	iretq

stop:
	hlt                            /* the VMM does not resume after END or a report */
	jmp stop

/* ---- setup ------------------------------------------------------------------- */

/* Installs the IDT: #DB -> rdi, #BP -> the counting handler (DPL3), and reporting
 * stubs for the vectors a case may meet. Clobbers rax. */
setup_idt:
	GATE 1, %edi, GATE_DPL0
	GATE 3, $bp_handler, GATE_DPL3
	GATE 6, $vec_ud, GATE_DPL0
	GATE 8, $vec_df, GATE_DPL0
	GATE 13, $vec_gp, GATE_DPL0
	GATE 14, $vec_pf, GATE_DPL0
	GATE 0x80, $vec_int80, GATE_DPL3
	lidt idt_descriptor
	ret

/* Lets CPL3 run the image: the boot tables map it supervisor-only, so set U on the
 * path PML4[0] -> PDPT[0] -> PD[0] -> the image's 4 KiB PTEs, then flush the TLB;
 * and give the TSS a ring-0 stack for the way back. Clobbers rax, rcx, rdx. */
setup_user:
	orq $PTE_USER, PROBE_BOOT_PML4_GPA
	orq $PTE_USER, PROBE_BOOT_PDPT_GPA
	orq $PTE_USER, PROBE_BOOT_PD_GPA
	mov $__probe_image_start, %ecx
	shr $9, %ecx                   /* (address >> 12) * 8: byte offset of the PTE */
	add $PROBE_BOOT_LOW_PT_GPA, %ecx
	mov $__probe_image_end, %edx
	shr $9, %edx
	add $PROBE_BOOT_LOW_PT_GPA, %edx
1:	orq $PTE_USER, (%rcx)
	add $8, %ecx
	cmp %edx, %ecx
	jb 1b
	mov %cr3, %rax
	mov %rax, %cr3
	movq $kstack_top, PROBE_BOOT_TSS_GPA + TSS_RSP0
	ret

/* ---- CPL3 code --------------------------------------------------------------- */

user_syscall:
	syscall
	ud2

/* SYSCALL lands here. At CPL0 the out reaches the VMM; at CPL3 it raises #GP, which
 * the #GP stub reports with the faulting cs. */
syscall_target:
	mov %cs, %eax
	mov $PROBE_PORT_SYSCALL, %edx
	out %eax, %dx
	jmp stop

user_int80:
	int $0x80                      /* vector 0x80 through the DPL3 gate, or #UD */
	ud2

/* ---- handlers (CPL0) --------------------------------------------------------- */

/* #BP: count and return (rip is already past the int3). */
bp_handler:
	incq PROBE_PARAMS_GPA + PROBE_PARAM_BP_COUNT
	iretq

/* #DB from DR7.GD: delivery cleared GD, so DR accesses are allowed here. Record and
 * clear DR6, re-arm GD, skip the 3-byte mov-dr that faulted. */
db_self_trap:
	push %rax
	mov %dr6, %rax
	mov %rax, PROBE_PARAMS_GPA + PROBE_PARAM_DR6
	xor %eax, %eax
	mov %rax, %dr6
	mov $PROBE_DR7_GD, %eax
	mov %rax, %dr7
	addq $PROBE_MOV_DR_LEN, 8(%rsp)
	incq PROBE_PARAMS_GPA + PROBE_PARAM_DB_COUNT
	pop %rax
	iretq

/* The same, and one `out` to tell the VMM (a paravirtual report). */
db_self_trap_pv:
	push %rax
	push %rdx
	mov %dr6, %rax
	mov %rax, PROBE_PARAMS_GPA + PROBE_PARAM_DR6
	xor %eax, %eax
	mov %rax, %dr6
	mov $PROBE_DR7_GD, %eax
	mov %rax, %dr7
	addq $PROBE_MOV_DR_LEN, 16(%rsp)
	incq PROBE_PARAMS_GPA + PROBE_PARAM_DB_COUNT
	mov $PROBE_PORT_WORK, %edx
	out %eax, %dx
	pop %rdx
	pop %rax
	iretq

/* Reporting stubs: push a dummy error code where the CPU pushes none, then the
 * vector. */
vec_ud:
	pushq $0
	pushq $6
	jmp report_vector
vec_df:
	pushq $8
	jmp report_vector
vec_gp:
	pushq $13
	jmp report_vector
vec_pf:
	pushq $14
	jmp report_vector
vec_int80:
	pushq $0
	pushq $0x80
	jmp report_vector

/* Stack: vector, error code, rip, cs, rflags, rsp, ss. */
report_vector:
	mov (%rsp), %eax
	mov 8(%rsp), %rbx
	mov 16(%rsp), %rcx
	mov 24(%rsp), %rsi
	mov $PROBE_PORT_VECTOR, %edx
	out %eax, %dx
	jmp stop

/* ---- data -------------------------------------------------------------------- */

	.section .rodata
	.balign 8
case_table:
	.quad case_empty            /* PROBE_CASE_EMPTY */
	.quad case_out              /* PROBE_CASE_OUT */
	.quad case_hlt              /* PROBE_CASE_HLT */
	.quad case_int3             /* PROBE_CASE_INT3 */
	.quad case_mov_dr7          /* PROBE_CASE_MOV_DR7 */
	.quad case_gd_self_trap     /* PROBE_CASE_GD_SELF_TRAP */
	.quad case_gd_self_trap_pv  /* PROBE_CASE_GD_SELF_TRAP_PV */
	.quad case_syscall          /* PROBE_CASE_SYSCALL */
	.quad case_int80            /* PROBE_CASE_INT80 */
	.if (. - case_table) != PROBE_CASE_COUNT * 8
	.error "case_table does not match PROBE_CASE_COUNT"
	.endif

	.data
idt_descriptor:                 /* 2-byte limit, 8-byte base */
	.word IDT_VECTORS * 16 - 1
	.quad idt

	.bss
	.balign 4096
idt:
	.skip 4096
kstack:
	.skip 4096
kstack_top:
ustack:
	.skip 4096
ustack_top:

	.section .note.GNU-stack, "", @progbits
