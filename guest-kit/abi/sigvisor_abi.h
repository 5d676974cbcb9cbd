/*
 * sigvisor_abi.h: the one contract between the sigvisor VMM and its guests.
 *
 * Included by the guest kernel (freestanding C, CPL0) and by the host (C++). It holds
 * only fixed-width types, constants and plain structs, so both sides agree on every
 * byte. Guest pointers in these structs are guest-physical addresses: the host treats
 * them as opaque numbers and reads them only through its bounds-checked GuestMemory.
 *
 * Bump SIGVISOR_ABI_VERSION on any incompatible change. Every image carries the
 * version it was built against in an ELF note (SIGVISOR_ABI_NOTE below); the VMM
 * refuses an image whose version differs from its own.
 *
 * Assembly includes it too (the constants only: structs and enums are C).
 */
#ifndef SIGVISOR_GUEST_KIT_ABI_SIGVISOR_ABI_H_
#define SIGVISOR_GUEST_KIT_ABI_SIGVISOR_ABI_H_

#ifndef __ASSEMBLER__
#include <stdint.h>
#define SIGVISOR_U(x) x##u
#define SIGVISOR_ULL(x) x##ull
#else
#define SIGVISOR_U(x) x
#define SIGVISOR_ULL(x) x
#endif

/* 4: the paravirtual debug-register page (sigvisor_boot_info.pv_page_gpa,
 *    SIGVISOR_HC_PV_DEBUGREG_LOAD).
 * 5: the quiescent point: the kernel asks the VMM for its orders (init's command
 *    line) once booted (SIGVISOR_HC_ORDERS); it is now the guest's first hypercall.
 * 6: signal frames built by the VMM (signal=pv: SIGVISOR_HC_SIGNAL_FRAME,
 *    SIGVISOR_HC_SIGRETURN). */
#define SIGVISOR_ABI_VERSION SIGVISOR_U(6)

/* ------------------------------------------------------------------------------
 * Hypercalls.
 *
 * The guest kernel (CPL0) makes hypercall NR by writing the 32-bit guest-physical
 * address of the call's argument struct to I/O port SIGVISOR_HC_PORT_BASE + NR:
 *
 *     outl %eax, $(SIGVISOR_HC_PORT_BASE + NR)     # eax = GPA of the args
 *
 * Why port I/O: on hosts where guest CPL0 is emulated (PVM) `vmcall` livelocks the
 * vCPU and KVM_EXIT_HYPERCALL is never produced, while `out` from CPL0 is a plain
 * KVM_EXIT_IO everywhere (8-12 us here). CPL3 code cannot do port I/O; user programs
 * reach the VMM only through the guest kernel's syscalls.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_HC_PORT_BASE SIGVISOR_U(0x500)
/* The block is 32 ports (0x500-0x51f). Under QEMU, whose fw_cfg sits at 0x510-0x51b,
 * the kernel makes only calls below SIGVISOR_HC_CPU_UP (the SMP calls are made only
 * when sigvisor's boot info says there are several CPUs), and those end by 0x50f. */
#define SIGVISOR_HC_PORTS SIGVISOR_U(32)

#ifndef __ASSEMBLER__
enum sigvisor_hypercall_nr {
  SIGVISOR_HC_CONSOLE_WRITE = 1, /* struct sigvisor_hc_console_write */
  SIGVISOR_HC_EXIT = 2,          /* struct sigvisor_hc_exit */
  SIGVISOR_HC_PHASE_BEGIN = 3,   /* struct sigvisor_hc_phase_begin */
  SIGVISOR_HC_PHASE_END = 4,     /* struct sigvisor_hc_phase_end */
  SIGVISOR_HC_TIME_REPORT = 5,   /* struct sigvisor_hc_time_report */
  SIGVISOR_HC_PANIC = 6,         /* struct sigvisor_hc_panic */
  SIGVISOR_HC_EVENT = 7,         /* struct sigvisor_hc_event */
  SIGVISOR_HC_PV_DEBUGREG_LOAD = 8, /* struct sigvisor_pv_page (see below) */
  SIGVISOR_HC_ORDERS = 9,        /* struct sigvisor_hc_orders */
  SIGVISOR_HC_SIGNAL_FRAME = 10, /* struct sigvisor_hc_signal_frame */
  SIGVISOR_HC_SIGRETURN = 11,    /* struct sigvisor_hc_sigreturn */
  SIGVISOR_HC_CPU_UP = 12,       /* struct sigvisor_hc_cpu_up (SMP, below) */
  SIGVISOR_HC_SEND_IPI = 13,     /* struct sigvisor_hc_send_ipi (SMP, below) */
  SIGVISOR_HC_COUNT = 14         /* first unused number */
};
#endif

/* The most the VMM copies out of one console write; longer writes are truncated
 * and counted as such. */
#define SIGVISOR_CONSOLE_MAX_WRITE SIGVISOR_U(4096)

#ifndef __ASSEMBLER__
struct sigvisor_hc_console_write {
  uint64_t data_gpa; /* bytes to print */
  uint64_t len;      /* at most SIGVISOR_CONSOLE_MAX_WRITE is taken */
};
#endif

#ifndef __ASSEMBLER__
struct sigvisor_hc_exit {
  int64_t status; /* the VMM exits with status & 0xff */
};
#endif

#define SIGVISOR_PHASE_NAME_MAX SIGVISOR_U(32)

/* BEGIN and END cut the exit ledger into a measured phase. The VMM takes its
 * counters and KVM's stats at both markers and reports the difference divided by
 * `ops`. The markers' own exits are not counted in the phase.
 *
 * What the markers themselves cost in the guest (the kernel path from BEGIN's
 * hypercall back to user mode and from the END call to its hypercall) is measured by
 * a calibration phase: an empty phase flagged SIGVISOR_PHASE_CALIBRATION, made right
 * before the real one (several in a row: phase_begin() in guest-kit/user makes five).
 * The VMM subtracts their deltas from the phases that follow, so that per-op counts
 * are exact whatever `ops` is: the first calibration's counts, each clock's fastest
 * calibration time; a phase whose time does not stand clear of the calibrations'
 * spread has no time (docs/json.md). */
#define SIGVISOR_PHASE_CALIBRATION (SIGVISOR_U(1) << 0)

#ifndef __ASSEMBLER__
struct sigvisor_hc_phase_begin {
  char name[SIGVISOR_PHASE_NAME_MAX]; /* NUL-terminated unless all 32 bytes used */
  uint64_t ops;                       /* operations the phase will perform */
  uint64_t tsc;                       /* guest rdtsc at the start */
  uint32_t flags;                     /* SIGVISOR_PHASE_* */
  /* The system call each operation of the phase makes once (its number + 1; 0 =
   * none): fault injection counts operations by the kernel's entries into it. */
  uint32_t op_syscall_plus1;
};
#endif

#ifndef __ASSEMBLER__
struct sigvisor_hc_phase_end {
  uint64_t tsc; /* guest rdtsc at the end */
};
#endif

/* A measurement the guest made itself (e.g. TSC cycles of one loop). */
#ifndef __ASSEMBLER__
struct sigvisor_hc_time_report {
  char name[SIGVISOR_PHASE_NAME_MAX];
  uint64_t tsc_cycles;
  uint64_t count;
};
#endif

/* The guest kernel gave up: the VMM reports the message and exits non-zero. */
#ifndef __ASSEMBLER__
struct sigvisor_hc_panic {
  uint64_t message_gpa;
  uint64_t message_len;
  uint64_t rip;    /* where it happened, 0 if unknown */
  uint64_t vector; /* exception vector, or ~0 for a software panic */
};
#endif

/* ------------------------------------------------------------------------------
 * The quiescent point: SIGVISOR_HC_ORDERS.
 *
 * The kernel asks the VMM for its orders, init's command line ("workload=... ops=...
 * warmup=..."), with this call, once: booted (its tables, per-CPU data and page
 * allocator set up) and before it creates any user task or executes any FPU/SSE
 * instruction. A VM stopped at this exit therefore holds no user state and its FPU
 * is in its reset state: it can be saved there and restored many times, each restore
 * given different orders. The call is also the end of boot as the VMM measures it
 * (the guest's first hypercall).
 *
 * The guest puts SIGVISOR_ORDERS_NONE in `len` before the call. The VMM writes the
 * orders, NUL-terminated, at buf_gpa and their length in `len`; it refuses (fails the
 * run) orders that do not fit the buffer rather than truncate them. Where no VMM
 * answers (QEMU), `len` stays SIGVISOR_ORDERS_NONE and the kernel takes the boot
 * info's cmdline.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_ORDERS_NONE SIGVISOR_U(0xffffffff)

#ifndef __ASSEMBLER__
struct sigvisor_hc_orders {
  uint64_t buf_gpa; /* where the VMM writes the orders: a command line, NUL-terminated */
  uint32_t buf_len; /* the buffer's size in bytes (at most SIGVISOR_CMDLINE_MAX is used) */
  uint32_t len;     /* set by the VMM: the orders' length without the NUL; the guest
                       puts SIGVISOR_ORDERS_NONE here first, and it stays so where no VMM
                       answers (QEMU): the guest then takes the boot info's cmdline */
};
#endif

/* ------------------------------------------------------------------------------
 * Signal frames built by the VMM (x86-64 kernels built with signal=pv,
 * CONFIG_SIGNAL_PV; docs/pv-signals.md).
 *
 * SIGVISOR_HC_SIGNAL_FRAME: where the kernel would write a handler's rt frame on the
 * user stack (setup_rt_frame), it hands the VMM the signal, its action and the
 * task's saved user registers instead. The VMM writes the frame, byte for byte what
 * the kernel would write (Linux x86-64's rt_sigframe: the restorer's address, the
 * ucontext with the saved registers and mask, `info_bytes` of the siginfo), and
 * sets the registers the handler starts with in the task's struct pt_regs
 * (white_box.h).
 *
 * SIGVISOR_HC_SIGRETURN: rt_sigreturn's restore. The VMM reads the frame the
 * handler returned from (8 bytes below the user rsp), puts the saved registers back
 * into pt_regs (the flags through the kernel's FIX_EFLAGS) and returns the saved
 * mask in `mask`; the kernel sets it (masks, queues and delivery stay the kernel's).
 *
 * `result`, set by the VMM:
 *   SIGVISOR_SIGNAL_PV_DONE      the frame is written (restored) and pt_regs set;
 *   SIGVISOR_SIGNAL_PV_DECLINED  nothing was touched: the kernel does it itself, as
 *       it does where no VMM answers (QEMU; the kernel puts DECLINED in `result`
 *       before the call). The VMM declines whenever the kernel's own path could
 *       decide otherwise than "write it": a frame outside the user range, a page not
 *       present, user-accessible and writable at every level, no SA_RESTORER, a
 *       malformed request. What becomes of a bad frame (SIGSEGV) is the kernel's
 *       decision, made by its own code;
 *   SIGVISOR_SIGNAL_PV_CHECK     (a VMM run with --check-signal-frames) the VMM has
 *       computed what it would write but left it to the kernel, which does it and
 *       then makes the same call again with `phase` SIGVISOR_SIGNAL_PV_BUILT and
 *       `kernel_result` (its own path's return, 0 or -EFAULT): the VMM compares the
 *       kernel's frame and registers with its own, byte for byte.
 * Every pointer here is untrusted: the VMM reads and writes only through the
 * page-table root given, within guest RAM and the user range, and declines
 * otherwise; it never fails the run for what a guest asks.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_SIGNAL_PV_DONE 0
#define SIGVISOR_SIGNAL_PV_DECLINED 1
#define SIGVISOR_SIGNAL_PV_CHECK 2
#define SIGVISOR_SIGNAL_PV_ASK SIGVISOR_U(0)   /* phase: the first call */
#define SIGVISOR_SIGNAL_PV_BUILT SIGVISOR_U(1) /* phase: the kernel did it (CHECK) */

#ifndef __ASSEMBLER__
struct sigvisor_hc_signal_frame {
  uint64_t regs_gpa;       /* the task's struct pt_regs: read, and set for the handler */
  uint64_t page_table_gpa; /* the task's page-table root (its CR3) */
  uint64_t info_gpa;       /* the siginfo to copy into the frame (kernel memory) */
  uint64_t info_bytes;     /* how many of its bytes the kernel copies (at most 128) */
  uint64_t handler;        /* sa_handler */
  uint64_t restorer;       /* sa_restorer */
  uint64_t action_flags;   /* sa_flags */
  uint64_t saved_mask;     /* the mask the frame saves (uc_sigmask, sigcontext.oldmask) */
  uint64_t fault_address;  /* sigcontext.cr2 */
  int32_t signo;
  uint32_t phase;          /* SIGVISOR_SIGNAL_PV_ASK or _BUILT */
  int32_t result;          /* VMM: SIGVISOR_SIGNAL_PV_* */
  int32_t kernel_result;   /* kernel, with _BUILT: what its own setup_rt_frame returned */
};

struct sigvisor_hc_sigreturn {
  uint64_t regs_gpa;       /* the task's struct pt_regs at rt_sigreturn's entry */
  uint64_t page_table_gpa; /* the task's page-table root */
  uint64_t mask;           /* VMM: the frame's uc_sigmask; kernel, with _BUILT: its own */
  uint32_t phase;          /* SIGVISOR_SIGNAL_PV_ASK or _BUILT */
  int32_t result;          /* VMM: SIGVISOR_SIGNAL_PV_* */
  int32_t kernel_result;   /* kernel, with _BUILT: 0, or -EFAULT where it found a bad frame */
  uint32_t reserved;
};
#endif

/* ------------------------------------------------------------------------------
 * The Linux marker protocol (docs/linux-workloads.md).
 *
 * A Linux guest's user processes have no guest-physical argument blocks and cannot
 * reach the hypercall ports; the embedded init (guest-kit/linux) marks its phases and
 * its end with one 4-byte port write whose arguments travel in registers. As root it
 * first calls ioperm(SIGVISOR_LINUX_MARKER_PORT, 4, 1): Linux then sets the port's
 * bits in the TSS I/O bitmap, so that the `out` below exits to the VMM from CPL3 (on
 * hardware KVM natively; on a PVM host KVM's emulator checks the same bitmap and
 * exits, measured). Then, for each marker:
 *
 *     outl %eax, (%dx)        # dx = SIGVISOR_LINUX_MARKER_PORT
 *
 *   eax  SIGVISOR_LINUX_MARKER_MAGIC | command (SIGVISOR_LINUX_MARKER_*)
 *   rbx, rcx, rsi, rdi   PHASE_BEGIN: the phase name, 32 bytes
 *        (SIGVISOR_PHASE_NAME_MAX) in that order, each register little-endian (its
 *        low byte first), NUL-padded; NUL-terminated unless all 32 are used
 *   r8   PHASE_BEGIN: ops; EXIT: the exit status (the VMM takes status & 0xff)
 *   r9   PHASE_BEGIN: flags (SIGVISOR_PHASE_*, as the hypercall's)
 *   r10  PHASE_BEGIN, PHASE_END: the guest's rdtsc just before the `out`
 *   r11  PHASE_BEGIN: the Linux x86-64 system call each operation makes once, + 1
 *        (0 = none), as op_syscall_plus1
 * Registers a command does not name are ignored. The port is neither read nor
 * written otherwise; DX holds the port, which is above 0xff, so it is not an
 * argument. The VMM reads the registers at the exit and answers as it does the
 * phase_begin, phase_end and exit hypercalls; a write that is not 4 bytes, lacks the
 * magic or names an unknown command fails the run as a bad device access.
 *
 * ORDERS (the quiescent point, docs/snapshots.md): once booted, with the port granted
 * and before its first workload (no child forked yet), init asks for its orders:
 *   r8   the address of a buffer in init's own memory (a user virtual address), every
 *        page of it already written by init (so mapped, present and writable)
 *   r9   its size in bytes (the VMM uses at most SIGVISOR_LINUX_ORDERS_MAX)
 *   r10  flags (SIGVISOR_LINUX_ORDERS_*); a bit the VMM does not know fails the run
 * The VMM writes the orders, the run's command-line words ("sigvisor_workload=divzero
 * sigvisor_ops=16 ..."), NUL-terminated, into the buffer, checked as the guest kernel
 * would check a write to user memory (every level present, user, writable), before
 * the `out` completes; orders that do not fit, or a buffer that is not so mapped, fail
 * the run. init takes each key=value word as it takes a boot parameter, before its
 * environment. A booted run answers at once with the kernel command line's own words
 * (the same workload either way); `sigvisor snapshot` saves the VM at this exit, and a
 * restore writes its own orders into the saved buffer before the vCPU runs again.
 * SIGVISOR_LINUX_ORDERS_FPU_HELD: init has put its FPU state (the only one live in the
 * vCPU's registers then) in its own memory just before the `out` (xsave, or fxsave
 * where the kernel left XSAVE off) and puts it back just after, before anything else
 * runs: a snapshot then needs no FPU state from the host, which a PVM host refuses.
 *
 * Why 0x520: outside the hypercall block (0x500-0x51f) and QEMU's fw_cfg
 * (0x510-0x51b), and no PC device Linux probes is there.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_LINUX_MARKER_PORT SIGVISOR_U(0x520)
#define SIGVISOR_LINUX_MARKER_PORTS SIGVISOR_U(4) /* the ioperm range: one 4-byte access */
#define SIGVISOR_LINUX_MARKER_MAGIC SIGVISOR_U(0x53560000) /* "SV" in the high half */
#define SIGVISOR_LINUX_MARKER_MAGIC_MASK SIGVISOR_U(0xffff0000)
#define SIGVISOR_LINUX_MARKER_PHASE_BEGIN SIGVISOR_U(1)
#define SIGVISOR_LINUX_MARKER_PHASE_END SIGVISOR_U(2)
#define SIGVISOR_LINUX_MARKER_EXIT SIGVISOR_U(3)
#define SIGVISOR_LINUX_MARKER_ORDERS SIGVISOR_U(4)
/* The most of an ORDERS buffer the VMM writes: Linux's own command-line limit. */
#define SIGVISOR_LINUX_ORDERS_MAX SIGVISOR_U(2048)
#define SIGVISOR_LINUX_ORDERS_FPU_HELD SIGVISOR_U(1)

/* ------------------------------------------------------------------------------
 * Fault injection (see docs/inject.md).
 *
 * When the VMM injects (boot flag SIGVISOR_BOOT_INJECT_EVENTS), the guest kernel
 * reports what came of it with SIGVISOR_HC_EVENT: a signal reaching a handler, a
 * task killed by a signal (each with the signal's si_code and si_addr), a page paged
 * back in. Without the flag it never does, so measured runs are not disturbed.
 *
 * A signal from the host: the VMM fills the mailbox at SIGVISOR_HOST_MAILBOX_GPA and
 * raises interrupt SIGVISOR_HOST_REQUEST_VECTOR when the guest is interruptible
 * (user mode); the kernel sends the signal as kill() from outside would.
 *
 * A page the host took away: a user page-table entry with Present clear and
 * SIGVISOR_PTE_EVICTED set may be restored by the guest (set Present, clear the bit):
 * demand paging of a page that was swapped out.
 * ------------------------------------------------------------------------------ */
#ifndef __ASSEMBLER__
enum sigvisor_event_kind {
  SIGVISOR_EVENT_SIGNAL_DELIVERED = 1, /* a handler for `signo` is about to run */
  SIGVISOR_EVENT_TASK_KILLED = 2,      /* task `pid` ended by `signo`'s default action */
  SIGVISOR_EVENT_PAGE_REPAIRED = 3,    /* the evicted page at `addr` was paged in */
  SIGVISOR_EVENT_HOST_SIGNAL = 4,      /* the host's signal request was sent (or not: code<0) */
};
#endif

#ifndef __ASSEMBLER__
struct sigvisor_hc_event {
  uint32_t kind; /* enum sigvisor_event_kind */
  int32_t signo;
  int32_t code; /* the signal's si_code, or an -errno (HOST_SIGNAL) */
  int32_t pid;
  uint64_t addr; /* the signal's si_addr, or the page's address */
  uint64_t rip;  /* the user rip of the task concerned */
};
#endif

#define SIGVISOR_HOST_REQUEST_VECTOR SIGVISOR_U(0x41)
#define SIGVISOR_HOST_MAILBOX_GPA SIGVISOR_U(0x7800)
#define SIGVISOR_HOST_REQUEST_SIGNAL SIGVISOR_U(1)

#ifndef __ASSEMBLER__
struct sigvisor_host_mailbox {
  uint32_t kind;  /* SIGVISOR_HOST_REQUEST_*, 0 = empty (the guest clears it) */
  int32_t signo;
  int32_t pid;    /* 0 = the task that was interrupted */
  uint32_t seq;   /* increases with every request, for the guest's event */
};
#endif

#define SIGVISOR_PTE_EVICTED (SIGVISOR_ULL(1) << 9)

/* ------------------------------------------------------------------------------
 * Boot.
 *
 * The VMM starts the guest in 64-bit long mode at CPL0 at the ELF entry point with
 *   rdi = GPA of struct sigvisor_boot_info (also at SIGVISOR_BOOT_INFO_GPA),
 *   paging on: guest RAM identity-mapped, supervisor-only, the first page left
 *   not present so that null dereferences fault,
 *   a flat boot GDT (SIGVISOR_SEL_*), a busy TSS, and an IDT of limit 0 (an early
 *   exception triple-faults and the VMM reports where).
 * The kernel installs its own GDT, IDT and TSS before it takes any exception.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_BOOT_INFO_MAGIC SIGVISOR_U(0x73766269) /* "ibvs" */
#define SIGVISOR_BOOT_INFO_GPA SIGVISOR_U(0x7000)
#define SIGVISOR_CMDLINE_MAX SIGVISOR_U(256)

/* Boot-info flags. */
#define SIGVISOR_BOOT_CPL0_EMULATED (SIGVISOR_U(1) << 0) /* guest CPL0 code is emulated (PVM) */
#define SIGVISOR_BOOT_INJECT_EVENTS (SIGVISOR_U(1) << 1) /* report SIGVISOR_HC_EVENTs (fault injection) */

#ifndef __ASSEMBLER__
struct sigvisor_boot_info {
  uint32_t magic;       /* SIGVISOR_BOOT_INFO_MAGIC */
  uint32_t abi_version; /* SIGVISOR_ABI_VERSION */
  uint64_t mem_bytes;   /* guest RAM: [0, mem_bytes) */
  uint64_t free_gpa;    /* first page-aligned byte not used by the image or boot data */
  uint64_t tsc_khz;     /* guest TSC frequency, 0 if unknown */
  uint32_t flags;       /* SIGVISOR_BOOT_* */
  /* Guest-physical address of the VMM's vdso page (below), 0 when the VMM supplies
   * none. This word was `reserved` and written as 0 by every writer before, so the
   * layout and the ABI version are unchanged: 0 still means what it always did. */
  uint32_t vdso_gpa;
  /* "key=value key=value", NUL-terminated, e.g. "workload=hello ops=10". */
  char cmdline[SIGVISOR_CMDLINE_MAX];
  /* Guest-physical address of vCPU 0's paravirtual debug-register page (below), 0
   * when the VMM supplies none (any --trap other than pv, and QEMU): the kernel then
   * moves to its debug registers itself. vCPU n's page is at pv_page_gpa + n * 4096.
   * After cmdline so that the fields before it keep their offsets. */
  uint64_t pv_page_gpa;
  /* The machine's CPUs (vCPUs), 1 to SIGVISOR_MAX_CPUS; vCPU n has APIC ID n. 0 from
   * a writer older than these fields means 1. A kernel without the SMP note (below)
   * only ever runs on one. */
  uint32_t cpus;
  /* How this machine wants inter-processor interrupts sent: SIGVISOR_IPI_* (0 with
   * one CPU). After pv_page_gpa so that the fields before them keep their offsets. */
  uint32_t ipi;
};
#endif

/* ------------------------------------------------------------------------------
 * SMP (a kernel built with smp=on, CONFIG_SMP; docs/smp.md).
 *
 * Such an image carries a second note (SIGVISOR_NOTE_TYPE_SMP: the most CPUs it
 * supports); the VMM boots any other on one vCPU only. vCPU 0 boots as above; the
 * others (application processors) wait until the kernel starts each once with
 * SIGVISOR_HC_CPU_UP: the VMM then enters it in the calling vCPU's state (CR0, CR3,
 * CR4, EFER, the GDT, IDT and segment registers, TR included: the AP must load its
 * own GDT and TSS before it takes an exception) at `rip` with `rsp`, rdi = `arg`,
 * rflags 0x2 (interrupts off), the other general registers 0.
 *
 * Each vCPU has a local APIC (KVM's, in the kernel) at its reset state. The kernel
 * sends IPIs the way sigvisor_boot_info.ipi says:
 *   SIGVISOR_IPI_X2APIC  x2APIC mode, ICR MSR 0x830 (an MSR write: no VMM exit)
 *   SIGVISOR_IPI_XAPIC   xAPIC mode, ICR at MMIO 0xfee00300/0xfee00310
 *   SIGVISOR_IPI_PV      SIGVISOR_HC_SEND_IPI: one hypercall names every target
 *                        (KVM's PV send-IPI is the model); EOI as in x2APIC mode
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_MAX_CPUS SIGVISOR_U(8)
#define SIGVISOR_IPI_NONE SIGVISOR_U(0)
#define SIGVISOR_IPI_X2APIC SIGVISOR_U(1)
#define SIGVISOR_IPI_XAPIC SIGVISOR_U(2)
#define SIGVISOR_IPI_PV SIGVISOR_U(3)
#define SIGVISOR_XAPIC_GPA SIGVISOR_U(0xfee00000)
/* Vectors a kernel may send (below 0x20 are exceptions). */
#define SIGVISOR_IPI_VECTOR_MIN SIGVISOR_U(0x20)

#ifndef __ASSEMBLER__
struct sigvisor_hc_cpu_up {
  uint32_t cpu;      /* 1 .. cpus-1, each at most once */
  uint32_t reserved; /* 0 */
  uint64_t rip;      /* where the AP starts (a virtual address of the caller's space) */
  uint64_t rsp;      /* its stack */
  uint64_t arg;      /* its rdi */
};
#endif

/* An IPI through the VMM: `vector` to every vCPU whose bit is set in `cpu_mask`
 * (bit n = vCPU n; the caller's own bit may be set). A bit past the machine's CPUs,
 * an empty mask or a vector below SIGVISOR_IPI_VECTOR_MIN is the guest's error: the
 * run ends, reported. */
#ifndef __ASSEMBLER__
struct sigvisor_hc_send_ipi {
  uint64_t cpu_mask;
  uint32_t vector;
  uint32_t reserved; /* 0 */
};
#endif

/* The kernel's own count of its reschedule IPIs, every CPU's since boot: those it sent
 * and those sent to it, by the IPI rule (one per wake-up or kick that needs one),
 * counted by the sender as it sends. An
 * SMP kernel's phase markers carry them after their own block, so that the VMM has
 * the guest's exact IPIs per phase beside KVM's injections (which count a
 * re-injection again): PHASE_BEGIN's argument is a sigvisor_hc_phase_begin_smp,
 * PHASE_END's a sigvisor_hc_phase_end_smp, from a kernel with the SMP note only. */
#ifndef __ASSEMBLER__
struct sigvisor_ipi_counts {
  uint64_t sent[SIGVISOR_MAX_CPUS];     /* by this CPU */
  uint64_t received[SIGVISOR_MAX_CPUS]; /* to this CPU */
};

struct sigvisor_hc_phase_begin_smp {
  struct sigvisor_hc_phase_begin phase;
  struct sigvisor_ipi_counts ipis;
};

struct sigvisor_hc_phase_end_smp {
  struct sigvisor_hc_phase_end phase;
  struct sigvisor_ipi_counts ipis;
};
#endif

/* ------------------------------------------------------------------------------
 * The vdso page (MIPS under sigvisor's interpreter; docs/mips-platform.md, "The vdso
 * page").
 *
 * The VMM of an emulated MIPS machine supplies one page of host memory, mapped
 * read-only into guest-physical memory outside RAM at sigvisor_boot_info.vdso_gpa and
 * shared by every core. It holds the signal-return trampoline at
 * SIGVISOR_VDSO_RT_SIGRETURN_OFFSET and zeros elsewhere. The guest kernel maps it
 * read-only into every process and returns signal handlers into it (seed 004,
 * CONFIG_TRAMP_VDSO). A kernel booted without one (vdso_gpa 0, e.g. under QEMU)
 * maps a copy of its own, made of the same words: these macros are the one
 * definition of the page's contents, for the VMM, the kernel's copy and the
 * stack trampoline of tramp=stack alike.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_VDSO_PAGE_BYTES SIGVISOR_U(4096)
#define SIGVISOR_VDSO_RT_SIGRETURN_OFFSET SIGVISOR_U(0)
/* The system call the trampoline makes: the guest's SYS_rt_sigreturn
 * (guest-kit/uapi/syscalls.h, which the VMM does not see; the MIPS kernel asserts
 * that the two agree). */
#define SIGVISOR_VDSO_SYS_RT_SIGRETURN SIGVISOR_U(15)
/* MIPS32 encodings: `li v0, n` (addiu v0, zero, n) and `syscall`. */
#define SIGVISOR_MIPS_INSN_LI_V0(n) (SIGVISOR_U(0x24020000) | (n))
#define SIGVISOR_MIPS_INSN_SYSCALL SIGVISOR_U(0x0000000c)
/* The trampoline, word by word: `li v0, SYS_rt_sigreturn; syscall`. */
#define SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN0 \
  SIGVISOR_MIPS_INSN_LI_V0(SIGVISOR_VDSO_SYS_RT_SIGRETURN)
#define SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN1 SIGVISOR_MIPS_INSN_SYSCALL

/* ------------------------------------------------------------------------------
 * The paravirtual debug-register page (--trap=pv; a kernel built with
 * debugreg=pv, CONFIG_DEBUGREG_PV).
 *
 * One page of guest RAM per vCPU, shared by the VMM and the kernel, at
 * sigvisor_boot_info.pv_page_gpa. The VMM fills it in before the first guest
 * instruction (magic, version, `loaded`: what the hardware holds). Then:
 *
 *   - The kernel's writes to DR0-DR3, DR6 and DR7 go to the page instead of the
 *     registers: the value into dr[n], one more in dr_writes[n], and one more in the
 *     sites[] entry of the caller (the return address of the kernel's
 *     pv_set_debugreg() call). No exit.
 *   - Only when the effective hardware state must change (an enable bit L0-L3/G0-G3
 *     of DR7, the address or RW/LEN of an enabled breakpoint, compared with
 *     `loaded`; and every DR6 write, since DR6 status bits the hardware set behind the
 *     kernel's back are the VMM's to know) does the kernel make hypercall
 *     SIGVISOR_HC_PV_DEBUGREG_LOAD with the page's own address. The VMM's shadow of
 *     the debug registers then decides whether to load them, loads at most once, and
 *     writes back `loaded`.
 *   - Segment-base writes through wrmsr (FS_BASE, GS_BASE, KERNEL_GS_BASE) stay
 *     native instructions (their effect must be immediate and KVM completes them
 *     without an exit), but are counted the same way: seg_base_writes[msr - 0xc0000100]
 *     and the caller's sites[] entry. swapgs and segment-register loads are not
 *     covered: they run natively, untrapped and uncounted.
 *   - DR7.GD has no meaning here (no access traps); DR reads are native.
 *
 * The VMM reads the counters at every phase boundary and at the end. It trusts
 * nothing in the page: counters that go backwards count nothing, site entries past
 * SIGVISOR_PV_SITES or of an unknown kind are ignored, and writes no site entry
 * accounts for are reported under no site. A kernel whose sites[] is full counts the
 * write in dr_writes/seg_base_writes only.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_PV_PAGE_MAGIC SIGVISOR_U(0x76707673) /* "svpv" */
#define SIGVISOR_PV_PAGE_BYTES SIGVISOR_U(4096)
#define SIGVISOR_PV_SITES SIGVISOR_U(64)
#define SIGVISOR_PV_SITE_DR_WRITE SIGVISOR_U(1)
#define SIGVISOR_PV_SITE_SEGMENT_BASE SIGVISOR_U(2)
#define SIGVISOR_PV_MSR_FS_BASE SIGVISOR_U(0xc0000100)

#ifndef __ASSEMBLER__
struct sigvisor_pv_site {
  uint64_t address; /* the caller: return address of the kernel's call */
  uint32_t kind;    /* SIGVISOR_PV_SITE_*; 0 = free entry */
  uint32_t reserved;
  uint64_t count;   /* writes made from here */
};

struct sigvisor_pv_page {
  uint32_t magic;            /* VMM: SIGVISOR_PV_PAGE_MAGIC */
  uint32_t abi_version;      /* VMM: SIGVISOR_ABI_VERSION */
  uint64_t dr[8];            /* kernel: the value last written to DRn (4, 5 unused) */
  uint64_t dr_writes[8];     /* kernel: writes to DRn */
  uint64_t loaded[8];        /* VMM: DRn as the hardware holds it (0-3, 6, 7) */
  uint64_t seg_base_writes[3]; /* kernel: wrmsr to FS_BASE, GS_BASE, KERNEL_GS_BASE */
  uint64_t reserved;
  struct sigvisor_pv_site sites[SIGVISOR_PV_SITES];
};
#endif

/* Byte offsets for assembly guests (checked against the struct by the VMM). */
#define SIGVISOR_PV_OFF_DR SIGVISOR_U(8)
#define SIGVISOR_PV_OFF_DR_WRITES SIGVISOR_U(72)
#define SIGVISOR_PV_OFF_LOADED SIGVISOR_U(136)
#define SIGVISOR_PV_OFF_SEG_BASE_WRITES SIGVISOR_U(200)
#define SIGVISOR_PV_OFF_SITES SIGVISOR_U(232)
#define SIGVISOR_PV_SITE_BYTES SIGVISOR_U(24)

/* ------------------------------------------------------------------------------
 * Segment selectors. At CPL3 the PVM host runs the guest on its own GDT, so the
 * user selectors must be exactly the host's (0x2b data, 0x33 64-bit code); the
 * layout is Linux x86-64's.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_SEL_KERNEL_CS32 SIGVISOR_U(0x08)
#define SIGVISOR_SEL_KERNEL_CS SIGVISOR_U(0x10)
#define SIGVISOR_SEL_KERNEL_DS SIGVISOR_U(0x18)
#define SIGVISOR_SEL_USER_CS32 SIGVISOR_U(0x23)
#define SIGVISOR_SEL_USER_DS SIGVISOR_U(0x2b)
#define SIGVISOR_SEL_USER_CS SIGVISOR_U(0x33)
#define SIGVISOR_SEL_TSS SIGVISOR_U(0x40)

/* ------------------------------------------------------------------------------
 * The image's ABI note: section ".note.sigvisor", owner "sigvisor", type
 * SIGVISOR_NOTE_TYPE_ABI, descriptor = one uint32_t, the ABI version.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_NOTE_NAME "sigvisor"
#define SIGVISOR_NOTE_TYPE_ABI SIGVISOR_U(1)
/* An SMP kernel's note: descriptor = one uint32_t, the most CPUs it runs on. */
#define SIGVISOR_NOTE_TYPE_SMP SIGVISOR_U(2)

#endif /* SIGVISOR_GUEST_KIT_ABI_SIGVISOR_ABI_H_ */
