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

#define SIGVISOR_ABI_VERSION SIGVISOR_U(3)

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

#ifndef __ASSEMBLER__
enum sigvisor_hypercall_nr {
  SIGVISOR_HC_CONSOLE_WRITE = 1, /* struct sigvisor_hc_console_write */
  SIGVISOR_HC_EXIT = 2,          /* struct sigvisor_hc_exit */
  SIGVISOR_HC_PHASE_BEGIN = 3,   /* struct sigvisor_hc_phase_begin */
  SIGVISOR_HC_PHASE_END = 4,     /* struct sigvisor_hc_phase_end */
  SIGVISOR_HC_TIME_REPORT = 5,   /* struct sigvisor_hc_time_report */
  SIGVISOR_HC_PANIC = 6,         /* struct sigvisor_hc_panic */
  SIGVISOR_HC_EVENT = 7,         /* struct sigvisor_hc_event */
  SIGVISOR_HC_COUNT = 8          /* first unused number */
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
 * spread has no time (docs: README.md, "JSON output"). */
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
  uint32_t reserved;
  /* "key=value key=value", NUL-terminated, e.g. "workload=hello ops=10". */
  char cmdline[SIGVISOR_CMDLINE_MAX];
};
#endif

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

#endif /* SIGVISOR_GUEST_KIT_ABI_SIGVISOR_ABI_H_ */
