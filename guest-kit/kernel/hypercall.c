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

/* The PC devices QEMU offers (-serial, -device isa-debug-exit,iobase=0xf4). */
#define COM1 0x3f8
#define COM1_LSR (COM1 + 5)
#define LSR_THR_EMPTY 0x20
#define DEBUG_EXIT_PORT 0xf4

static int use_pc_devices;

void hypercalls_use_pc_devices(void) { use_pc_devices = 1; }

static void hypercall(enum sigvisor_hypercall_nr nr, const void *args) {
  outl((uint16_t)(SIGVISOR_HC_PORT_BASE + nr), (uint32_t)(uint64_t)args);
}

static void com1_write(const char *data, size_t len) {
  for (size_t i = 0; i < len; i++) {
    while (!(inb(COM1_LSR) & LSR_THR_EMPTY)) {
    }
    outb(COM1, (uint8_t)data[i]);
  }
}

/* isa-debug-exit: QEMU exits with (value << 1) | 1. */
static void __attribute__((noreturn)) debug_exit(uint32_t value) {
  outl(DEBUG_EXIT_PORT, value);
  halt_forever();
}

void hc_console_write(const char *data, size_t len) {
  if (use_pc_devices) {
    com1_write(data, len);
    return;
  }
  static struct sigvisor_hc_console_write args;
  args.data_gpa = (uint64_t)data;
  args.len = len;
  hypercall(SIGVISOR_HC_CONSOLE_WRITE, &args);
}

void hc_phase_begin(const char *name, uint64_t ops, uint32_t flags, int op_syscall) {
  if (use_pc_devices) return;
  static struct sigvisor_hc_phase_begin args;
  size_t n = strnlen(name, SIGVISOR_PHASE_NAME_MAX);
  memcpy(args.name, name, n);
  if (n < SIGVISOR_PHASE_NAME_MAX) args.name[n] = '\0';
  args.ops = ops;
  args.flags = flags;
  args.op_syscall_plus1 = op_syscall >= 0 ? (uint32_t)op_syscall + 1 : 0;
  args.tsc = rdtsc();
  hypercall(SIGVISOR_HC_PHASE_BEGIN, &args);
}

void hc_phase_end(void) {
  if (use_pc_devices) return;
  static struct sigvisor_hc_phase_end args;
  args.tsc = rdtsc();
  hypercall(SIGVISOR_HC_PHASE_END, &args);
}

void hc_event(uint32_t kind, int signo, int code, int pid, uint64_t addr, uint64_t rip) {
  if (use_pc_devices) return;
  static struct sigvisor_hc_event args;
  args.kind = kind;
  args.signo = signo;
  args.code = code;
  args.pid = pid;
  args.addr = addr;
  args.rip = rip;
  hypercall(SIGVISOR_HC_EVENT, &args);
}

void hc_exit(int64_t status) {
  if (use_pc_devices) debug_exit((uint32_t)status);
  static struct sigvisor_hc_exit args;
  args.status = status;
  hypercall(SIGVISOR_HC_EXIT, &args);
  halt_forever(); /* not reached: the VMM stops the vCPU */
}

void hc_panic(const char *message, size_t len, uint64_t rip, uint64_t vector) {
  if (use_pc_devices) {
    com1_write("kernel panic: ", 14);
    com1_write(message, len);
    com1_write("\n", 1);
    debug_exit(0x7f);
  }
  static struct sigvisor_hc_panic args;
  args.message_gpa = (uint64_t)message;
  args.message_len = len;
  args.rip = rip;
  args.vector = vector;
  hypercall(SIGVISOR_HC_PANIC, &args);
  halt_forever();
}
