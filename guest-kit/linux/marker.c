#include "guest-kit/linux/marker.h"

#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/linux/lrt.h"

/* As many calibration phases as the bundled kernel's init makes (guest-kit/user/ulib.c):
 * the VMM takes the first's counts and judges time from the five. */
#define PHASE_CALIBRATIONS 5

/* Whether markers go to the port; set once by marker_init before any marker. */
static int through_port;
/* SIGVISOR_MARKER=trap: the port is not granted, so no orders are asked for. */
static int trapping;

void marker_init(int guest_init) {
  const char *mode = env_get("SIGVISOR_MARKER");
  if (mode && strcmp(mode, "trap") == 0) {
    /* For a tracer (vmm/run/linux_marker_test.cc): the port is never granted, so each
     * marker faults (SIGSEGV) at its `out` with the protocol's registers. */
    through_port = 1;
    trapping = 1;
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

void marker_orders(void) {
  if (!through_port || trapping) return;
  memset(orders, 0, sizeof(orders));
  static const uint64_t no_name[4];
  marker_out(SIGVISOR_LINUX_MARKER_ORDERS, no_name, (uint64_t)orders, sizeof(orders), 0, 0);
  orders[sizeof(orders) - 1] = 0;
  if (orders[0]) env_set_orders(orders);
}

void marker_exit(int status) {
  if (!through_port) {
    printf("marker: exit %d\n", status);
    return;
  }
  static const uint64_t no_name[4];
  marker_out(SIGVISOR_LINUX_MARKER_EXIT, no_name, (uint64_t)(int64_t)status, 0, 0, 0);
}
