#include "guest-kit/linux/marker.h"

#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/linux/lrt.h"

/* As many calibration phases as the bundled kernel's init makes (guest-kit/user/ulib.c):
 * the VMM takes the first's counts and judges time from the five. */
#define PHASE_CALIBRATIONS 5

/* Whether markers go to the port; set once by marker_init before any marker. */
static int through_port;

void marker_init(int guest_init) {
  const char *mode = env_get("SIGVISOR_MARKER");
  if (mode && strcmp(mode, "trap") == 0) {
    /* For a tracer (arch/x86_64/vmm/machine/linux_marker_gate_test.cc): the port is
     * never granted, so each marker faults (SIGSEGV) at its `out` with the protocol's
     * registers; ORDERS too, whose buffer the tracer leaves empty. */
    through_port = 1;
    printf("sigvisor init: phase markers as faulting port writes, for a tracer\n");
  } else if (guest_init && !(mode && strcmp(mode, "none") == 0) &&
             sys_ioperm(SIGVISOR_LINUX_MARKER_PORT, SIGVISOR_LINUX_MARKER_PORTS, 1) == 0) {
    through_port = 1;
    printf("sigvisor init: phase markers through port %#x\n", SIGVISOR_LINUX_MARKER_PORT);
  } else {
    printf("sigvisor init: no marker port, markers printed\n");
  }
}

/* One marker: the command in eax, the port in dx, the arguments where the ABI says. */
static void marker_out(uint32_t command, const uint64_t name[4], uint64_t r8_value,
                       uint64_t r9_value, uint64_t r10_value, uint64_t r11_value) {
  register uint64_t r8 __asm__("r8") = r8_value;
  register uint64_t r9 __asm__("r9") = r9_value;
  register uint64_t r10 __asm__("r10") = r10_value;
  register uint64_t r11 __asm__("r11") = r11_value;
  __asm__ volatile("outl %%eax, %%dx"
                   :
                   : "a"(SIGVISOR_LINUX_MARKER_MAGIC | command),
                     "d"(SIGVISOR_LINUX_MARKER_PORT), "b"(name[0]), "c"(name[1]), "S"(name[2]),
                     "D"(name[3]), "r"(r8), "r"(r9), "r"(r10), "r"(r11)
                   : "memory");
}

static void begin_one(const uint64_t name[4], unsigned long ops, uint32_t flags,
                      int op_syscall) {
  marker_out(SIGVISOR_LINUX_MARKER_PHASE_BEGIN, name, ops, flags, rdtsc(),
             (uint64_t)(op_syscall + 1));
}

static void end_one(void) {
  static const uint64_t no_name[4];
  marker_out(SIGVISOR_LINUX_MARKER_PHASE_END, no_name, 0, 0, rdtsc(), 0);
}

void phase_begin(const char *name, unsigned long ops, int op_syscall, unsigned long sample) {
  if (!through_port) {
    if (sample == 0) printf("marker: %d calibrations\n", PHASE_CALIBRATIONS);
    printf("marker: phase %s sample %lu begins, %lu ops\n", name, sample + 1, ops);
    return;
  }
  /* The name as the registers carry it: x86-64 is little-endian, so the bytes in
   * memory order are each register's low byte first. */
  uint64_t packed[4] = {0, 0, 0, 0};
  memcpy(packed, name, strnlen(name, SIGVISOR_PHASE_NAME_MAX));
  for (int i = 0; sample == 0 && i < PHASE_CALIBRATIONS; ++i) {
    begin_one(packed, 0, SIGVISOR_PHASE_CALIBRATION, -1);
    end_one();
  }
  begin_one(packed, ops, 0, op_syscall);
}

void phase_end(void) {
  if (!through_port) {
    printf("marker: phase ends\n");
    return;
  }
  end_one();
}

/* Where the VMM writes the orders: in .bss, every page written before the request so
 * that each is mapped, present and writable when the VMM writes it. */
static char orders[SIGVISOR_LINUX_ORDERS_MAX];

/* init's FPU state across the quiescent point (SIGVISOR_LINUX_ORDERS_FPU_HELD): the
 * only FPU state live in the vCPU's registers there (every other task's is in its
 * kernel memory), so with it in init's own memory a snapshot needs none from the
 * host. xsave's standard form where the kernel turned XSAVE on, fxsave's 512 bytes
 * where it did not ("noxsave", as on a PVM host). In .bss: zero, so the header's
 * reserved bytes are 0 as xrstor demands, and 64-byte aligned as xsave demands. */
static uint8_t fpu_area[4096] __attribute__((aligned(64)));

static void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t out[4]) {
  __asm__ volatile("cpuid"
                   : "=a"(out[0]), "=b"(out[1]), "=c"(out[2]), "=d"(out[3])
                   : "a"(leaf), "c"(subleaf));
}

enum fpu_save { FPU_NOT_HELD, FPU_FXSAVE, FPU_XSAVE };

/* How init holds its FPU state: xsave when the kernel enabled it (CPUID.1:ECX.OSXSAVE)
 * and the enabled components fit the area (CPUID.(0xD,0):EBX), else fxsave.
 * SIGVISOR_FPU_SAVE=fxsave takes fxsave anyway, as a kernel booted with "noxsave"
 * makes it: its host test checks that path on a host with XSAVE. */
static enum fpu_save fpu_save_kind(void) {
  const char *forced = env_get("SIGVISOR_FPU_SAVE");
  if (forced && strcmp(forced, "fxsave") == 0) return FPU_FXSAVE;
  uint32_t r[4];
  cpuid(1, 0, r);
  if (!(r[2] & (1u << 27))) return FPU_FXSAVE;
  cpuid(0xd, 0, r);
  return r[1] <= sizeof(fpu_area) ? FPU_XSAVE : FPU_NOT_HELD;
}

/* The ORDERS marker between init's FPU save and restore, in one asm statement so that
 * no compiled code runs between the `out` and the restore. xsave and xrstor take their
 * component mask in edx:eax (all ones: every component the kernel enabled), the `out`
 * its word and port there. */
#define ORDERS_WORD (SIGVISOR_LINUX_MARKER_MAGIC | SIGVISOR_LINUX_MARKER_ORDERS)
#define ORDERS_OUT          \
  "movl %[word], %%eax\n\t" \
  "movl %[port], %%edx\n\t" \
  "outl %%eax, %%dx\n\t"
#define ORDERS_OPERANDS                                                                  \
  [area] "r"(fpu_area), [word] "i"(ORDERS_WORD), [port] "i"(SIGVISOR_LINUX_MARKER_PORT), \
      "b"(0), "c"(0), "S"(0), "D"(0), "r"(r8), "r"(r9), "r"(r10), "r"(r11)

static void orders_out(enum fpu_save kind) {
  static const uint64_t no_name[4];
  if (kind == FPU_NOT_HELD) {
    marker_out(SIGVISOR_LINUX_MARKER_ORDERS, no_name, (uint64_t)orders, sizeof(orders), 0, 0);
    return;
  }
  register uint64_t r8 __asm__("r8") = (uint64_t)orders;
  register uint64_t r9 __asm__("r9") = sizeof(orders);
  register uint64_t r10 __asm__("r10") = SIGVISOR_LINUX_ORDERS_FPU_HELD;
  register uint64_t r11 __asm__("r11") = 0;
  uint32_t eax = 0xffffffffu, edx = 0xffffffffu;
  if (kind == FPU_XSAVE) {
    __asm__ volatile("xsave64 (%[area])\n\t" ORDERS_OUT
                     "movl $0xffffffff, %%eax\n\t"
                     "movl $0xffffffff, %%edx\n\t"
                     "xrstor64 (%[area])"
                     : "+a"(eax), "+d"(edx)
                     : ORDERS_OPERANDS
                     : "memory");
  } else {
    __asm__ volatile("fxsave64 (%[area])\n\t" ORDERS_OUT "fxrstor64 (%[area])"
                     : "+a"(eax), "+d"(edx)
                     : ORDERS_OPERANDS
                     : "memory");
  }
}

static uint32_t mxcsr_read(void) {
  uint32_t value;
  __asm__ volatile("stmxcsr %0" : "=m"(value));
  return value;
}

static void mxcsr_write(uint32_t value) { __asm__ volatile("ldmxcsr %0" : : "m"(value)); }

/* xmm15's low half: init's code never touches the XMM registers (it is built
 * -mgeneral-regs-only), so only the probe below writes it. */
static uint64_t xmm15_read(void) {
  uint64_t value;
  __asm__ volatile("movq %%xmm15, %0" : "=r"(value));
  return value;
}

static void xmm15_write(uint64_t value) { __asm__ volatile("movq %0, %%xmm15" : : "r"(value)); }

/* XCR0, which components the kernel enabled: xrstor restores only those, so a restore
 * must give it back too. Readable at CPL3 where XSAVE is on. */
static uint64_t xcr0_read(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* MXCSR's invalid-operation flag: sticky and masked, so setting it changes nothing but
 * what stmxcsr reads; and a value in xmm15 that nothing else puts there. A restore that
 * lost init's FPU state gives their reset values (MXCSR without the flag, xmm15 zero);
 * one that lost the XCRs gives XCR0's, x87 alone. */
#define MXCSR_PROBE 0x1u
#define XMM_PROBE 0x53494756495a4f52ull /* "ROZIVGIS" in memory order */

int marker_orders(void) {
  if (!through_port) return 0;
  memset(orders, 0, sizeof(orders));
  const enum fpu_save kind = fpu_save_kind();
  static const char *const kHeld[] = {"left to the VMM (too large to hold)",
                                       "held by init (fxsave)", "held by init (xsave)"};
  printf("sigvisor init: FPU state across the quiescent point: %s\n", kHeld[kind]);
  /* Probes that init's FPU state outlives the point: a snapshot restored elsewhere
   * must give it back exactly (docs/snapshots.md). */
  const uint32_t mxcsr = mxcsr_read();
  const uint64_t xmm15 = xmm15_read();
  const uint64_t xcr0 = kind == FPU_XSAVE ? xcr0_read() : 0;
  mxcsr_write(mxcsr | MXCSR_PROBE);
  xmm15_write(XMM_PROBE);
  orders_out(kind);
  const uint32_t mxcsr_after = mxcsr_read();
  const uint64_t xmm15_after = xmm15_read();
  const uint64_t xcr0_after = kind == FPU_XSAVE ? xcr0_read() : 0;
  mxcsr_write(mxcsr);
  xmm15_write(xmm15);
  if (mxcsr_after != (mxcsr | MXCSR_PROBE) || xmm15_after != XMM_PROBE || xcr0_after != xcr0) {
    printf("sigvisor init: the FPU state did not outlive the quiescent point (MXCSR %#x, "
           "was %#x; xmm15 %#lx, was %#lx; XCR0 %#lx, was %#lx)\n",
           mxcsr_after, mxcsr | MXCSR_PROBE, (unsigned long)xmm15_after,
           (unsigned long)XMM_PROBE, (unsigned long)xcr0_after, (unsigned long)xcr0);
    return -1;
  }
  orders[sizeof(orders) - 1] = 0;
  if (orders[0]) env_set_orders(orders);
  return 0;
}

void marker_exit(int status) {
  if (!through_port) {
    printf("marker: exit %d\n", status);
    return;
  }
  static const uint64_t no_name[4];
  marker_out(SIGVISOR_LINUX_MARKER_EXIT, no_name, (uint64_t)(int64_t)status, 0, 0, 0);
}
