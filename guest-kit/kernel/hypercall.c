/*
 * Hypercalls: one `outl` of the argument block's guest-physical address to the
 * call's port. Kernel memory is identity-mapped, so a kernel pointer is its GPA.
 * The argument blocks are static: there is one CPU, and a hypercall completes
 * before the `outl` retires.
 */
#include "guest-kit/kernel/hypercall.h"

#include "arch/x86_64/guest/x86.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/lib/string.h"

static void hypercall(enum sigvisor_hypercall_nr nr, const void *args) {
  outl((uint16_t)(SIGVISOR_HC_PORT_BASE + nr), (uint32_t)(uint64_t)args);
}

void hc_console_write(const char *data, size_t len) {
  static struct sigvisor_hc_console_write args;
  args.data_gpa = (uint64_t)data;
  args.len = len;
  hypercall(SIGVISOR_HC_CONSOLE_WRITE, &args);
}

void hc_phase_begin(const char *name, uint64_t ops, uint32_t flags) {
  static struct sigvisor_hc_phase_begin args;
  size_t n = strnlen(name, SIGVISOR_PHASE_NAME_MAX);
  memcpy(args.name, name, n);
  if (n < SIGVISOR_PHASE_NAME_MAX) args.name[n] = '\0';
  args.ops = ops;
  args.flags = flags;
  args.tsc = rdtsc();
  hypercall(SIGVISOR_HC_PHASE_BEGIN, &args);
}

void hc_phase_end(void) {
  static struct sigvisor_hc_phase_end args;
  args.tsc = rdtsc();
  hypercall(SIGVISOR_HC_PHASE_END, &args);
}

void hc_exit(int64_t status) {
  static struct sigvisor_hc_exit args;
  args.status = status;
  hypercall(SIGVISOR_HC_EXIT, &args);
  halt_forever(); /* not reached: the VMM stops the vCPU */
}

void hc_panic(const char *message, size_t len, uint64_t rip, uint64_t vector) {
  static struct sigvisor_hc_panic args;
  args.message_gpa = (uint64_t)message;
  args.message_len = len;
  args.rip = rip;
  args.vector = vector;
  hypercall(SIGVISOR_HC_PANIC, &args);
  halt_forever();
}
