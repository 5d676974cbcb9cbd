/*
 * probe_abi.h: the contract between `sigvisor probe` (arch/x86_64/vmm/probe) and its calibration
 * guest (calibrate.S). Preprocessor constants only, so the assembler and the host's
 * C++ read the same numbers.
 *
 * The guest reports with `out` from CPL0 (the one exit that works on every host; see
 * docs/host-notes.md); CPL3 cannot do port I/O, so a report
 * from user code always goes through an exception handler.
 */
#ifndef SIGVISOR_GUEST_KIT_PROBE_PROBE_ABI_H_
#define SIGVISOR_GUEST_KIT_PROBE_PROBE_ABI_H_

/* The parameter block, at the boot-info GPA (rdi at entry). 64-bit fields. */
#define PROBE_PARAMS_GPA 0x7000
#define PROBE_PARAM_CASE 0x00       /* host: PROBE_CASE_* */
#define PROBE_PARAM_ITERATIONS 0x08 /* host: K >= 1 */
#define PROBE_PARAM_BP_COUNT 0x10   /* guest: #BP deliveries to its handler */
#define PROBE_PARAM_DB_COUNT 0x18   /* guest: #DB deliveries to its handler */
#define PROBE_PARAM_DR6 0x20        /* guest: DR6 seen by the last #DB */
#define PROBE_PARAM_SIZE 0x28

/* Where the VMM's boot state lives (arch/x86_64/vmm/machine/boot_layout.h; the host checks
 * these at compile time). The guest edits the boot page tables and TSS in place. */
#define PROBE_BOOT_PML4_GPA 0x1000
#define PROBE_BOOT_PDPT_GPA 0x2000
#define PROBE_BOOT_PD_GPA 0x3000
#define PROBE_BOOT_LOW_PT_GPA 0x4000 /* 4 KiB pages of the first 2 MiB */
#define PROBE_BOOT_TSS_GPA 0x6000

/* Ports. Each `outl %eax` carries the value in eax. */
#define PROBE_PORT_MARKER 0x600  /* eax = PROBE_MARK_* */
#define PROBE_PORT_VECTOR 0x601  /* an exception arrived: eax = vector, rbx = error code,
                                    rcx = faulting rip, rsi = faulting cs. The guest
                                    stops there. */
#define PROBE_PORT_WORK 0x602    /* the measured `out` (io_exit, the pv self-trap) */
#define PROBE_PORT_SYSCALL 0x603 /* the SYSCALL target could do port I/O, i.e. it runs
                                    at CPL0: eax = its %cs. The guest stops there. */

#define PROBE_MARK_BEGIN 1 /* the timed loop starts after this exit */
#define PROBE_MARK_END 2   /* the timed loop is over; the guest stops */
#define PROBE_MARK_BAD_PARAMS 3

/* Cases. Timed cases run K iterations of `<op>; dec %rcx; jnz` between BEGIN and END;
 * the fact cases (SYSCALL, INT80) stop at their first report. */
#define PROBE_CASE_EMPTY 0          /* `dec; jnz` only: the baseline */
#define PROBE_CASE_OUT 1            /* outl to PROBE_PORT_WORK at CPL0 */
#define PROBE_CASE_HLT 2            /* hlt at CPL0, no irqchip */
#define PROBE_CASE_INT3 3           /* int3 at CPL0 */
#define PROBE_CASE_MOV_DR7 4        /* mov %rax,%dr7 at CPL0 under the VMM's DR7.GD */
#define PROBE_CASE_GD_SELF_TRAP 5   /* mov %dr7,%rax at CPL0 with the guest's DR7.GD */
#define PROBE_CASE_GD_SELF_TRAP_PV 6 /* the same, the #DB handler also reports by out */
#define PROBE_CASE_SYSCALL 7        /* SYSCALL from CPL3: where does LSTAR run? */
#define PROBE_CASE_INT80 8          /* int $0x80 from CPL3 through a DPL3 gate */
#define PROBE_CASE_COUNT 9

/* Instructions in one iteration of the empty loop (dec, jnz), and the instructions
 * between the BEGIN exit and the END exit outside the loop (the END marker's
 * mov $MARK, mov $PORT, out). */
#define PROBE_EMPTY_LOOP_INSNS 2
#define PROBE_EMPTY_EXTRA_INSNS 3

/* DR7 values: bit 10 reads as one; GD is bit 13. */
#define PROBE_DR7_CLEAN 0x400
#define PROBE_DR7_GD 0x2400
/* Length of `mov %dr7,%rax` and `mov %rax,%dr7` (0f 21 f8 / 0f 23 f8). */
#define PROBE_MOV_DR_LEN 3

#endif /* SIGVISOR_GUEST_KIT_PROBE_PROBE_ABI_H_ */
