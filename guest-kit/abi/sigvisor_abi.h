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
 */
#ifndef SIGVISOR_GUEST_KIT_ABI_SIGVISOR_ABI_H_
#define SIGVISOR_GUEST_KIT_ABI_SIGVISOR_ABI_H_

#include <stdint.h>

#define SIGVISOR_ABI_VERSION 2u

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
#define SIGVISOR_HC_PORT_BASE 0x500u

enum sigvisor_hypercall_nr {
  SIGVISOR_HC_CONSOLE_WRITE = 1, /* struct sigvisor_hc_console_write */
  SIGVISOR_HC_EXIT = 2,          /* struct sigvisor_hc_exit */
  SIGVISOR_HC_PHASE_BEGIN = 3,   /* struct sigvisor_hc_phase_begin */
  SIGVISOR_HC_PHASE_END = 4,     /* struct sigvisor_hc_phase_end */
  SIGVISOR_HC_TIME_REPORT = 5,   /* struct sigvisor_hc_time_report */
  SIGVISOR_HC_PANIC = 6,         /* struct sigvisor_hc_panic */
  SIGVISOR_HC_COUNT = 7          /* first unused number */
};

/* The most the VMM copies out of one console write; longer writes are truncated
 * and counted as such. */
#define SIGVISOR_CONSOLE_MAX_WRITE 4096u

struct sigvisor_hc_console_write {
  uint64_t data_gpa; /* bytes to print */
  uint64_t len;      /* at most SIGVISOR_CONSOLE_MAX_WRITE is taken */
};

struct sigvisor_hc_exit {
  int64_t status; /* the VMM exits with status & 0xff */
};

#define SIGVISOR_PHASE_NAME_MAX 32u

/* BEGIN and END cut the exit ledger into a measured phase. The VMM takes its
 * counters and KVM's stats at both markers and reports the difference divided by
 * `ops`. The markers' own exits are not counted in the phase.
 *
 * What the markers themselves cost in the guest (the kernel path from BEGIN's
 * hypercall back to user mode and from the END call to its hypercall) is measured by
 * a calibration phase: an empty phase flagged SIGVISOR_PHASE_CALIBRATION, made right
 * before the real one. The VMM subtracts its deltas from the phases that follow, so
 * that per-op counts are exact whatever `ops` is. */
#define SIGVISOR_PHASE_CALIBRATION (1u << 0)

struct sigvisor_hc_phase_begin {
  char name[SIGVISOR_PHASE_NAME_MAX]; /* NUL-terminated unless all 32 bytes used */
  uint64_t ops;                       /* operations the phase will perform */
  uint64_t tsc;                       /* guest rdtsc at the start */
  uint32_t flags;                     /* SIGVISOR_PHASE_* */
  uint32_t reserved;
};

struct sigvisor_hc_phase_end {
  uint64_t tsc; /* guest rdtsc at the end */
};

/* A measurement the guest made itself (e.g. TSC cycles of one loop). */
struct sigvisor_hc_time_report {
  char name[SIGVISOR_PHASE_NAME_MAX];
  uint64_t tsc_cycles;
  uint64_t count;
};

/* The guest kernel gave up: the VMM reports the message and exits non-zero. */
struct sigvisor_hc_panic {
  uint64_t message_gpa;
  uint64_t message_len;
  uint64_t rip;    /* where it happened, 0 if unknown */
  uint64_t vector; /* exception vector, or ~0 for a software panic */
};

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
#define SIGVISOR_BOOT_INFO_MAGIC 0x73766269u /* "ibvs" */
#define SIGVISOR_BOOT_INFO_GPA 0x7000u
#define SIGVISOR_CMDLINE_MAX 256u

/* Boot-info flags. */
#define SIGVISOR_BOOT_CPL0_EMULATED (1u << 0) /* guest CPL0 code is emulated (PVM) */

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

/* ------------------------------------------------------------------------------
 * Segment selectors. At CPL3 the PVM host runs the guest on its own GDT, so the
 * user selectors must be exactly the host's (0x2b data, 0x33 64-bit code); the
 * layout is Linux x86-64's.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_SEL_KERNEL_CS32 0x08u
#define SIGVISOR_SEL_KERNEL_CS 0x10u
#define SIGVISOR_SEL_KERNEL_DS 0x18u
#define SIGVISOR_SEL_USER_CS32 0x23u
#define SIGVISOR_SEL_USER_DS 0x2bu
#define SIGVISOR_SEL_USER_CS 0x33u
#define SIGVISOR_SEL_TSS 0x40u

/* ------------------------------------------------------------------------------
 * The image's ABI note: section ".note.sigvisor", owner "sigvisor", type
 * SIGVISOR_NOTE_TYPE_ABI, descriptor = one uint32_t, the ABI version.
 * ------------------------------------------------------------------------------ */
#define SIGVISOR_NOTE_NAME "sigvisor"
#define SIGVISOR_NOTE_TYPE_ABI 1u

#endif /* SIGVISOR_GUEST_KIT_ABI_SIGVISOR_ABI_H_ */
