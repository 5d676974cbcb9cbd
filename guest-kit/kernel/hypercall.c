/*
 * Hypercalls: one store of the argument block's guest-physical address to the
 * call's port or MMIO register (asm/hypercall.h: `outl` on x86-64, a store to the
 * hypercall device on MIPS). The argument blocks are static: one CPU runs the kernel
 * at a time (the boot CPU, or on smp=on whichever holds the big kernel lock), and a
 * hypercall completes before its store retires.
 */
#include "guest-kit/kernel/hypercall.h"

#include "asm/hypercall.h"
#include "asm/page.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/smp.h"
#include "guest-kit/lib/string.h"

/* Set when the kernel was not booted by sigvisor (QEMU): the board's UART and its
 * way to stop (isa-debug-exit on the PC, SOFTRES on Malta) replace the hypercalls. */
static int use_pc_devices;

void hypercalls_use_pc_devices(void) { use_pc_devices = 1; }

static void hypercall(enum sigvisor_hypercall_nr nr, const void *args) {
  arch_hypercall(nr, args);
}

void hc_console_write(const char *data, size_t len) {
  if (use_pc_devices) {
    arch_uart_write(data, len);
    return;
  }
  static struct sigvisor_hc_console_write args;
  args.data_gpa = (uint64_t)__pa(data);
  args.len = len;
  hypercall(SIGVISOR_HC_CONSOLE_WRITE, &args);
}

/* An SMP kernel's markers carry every CPU's IPI counts after their own block
 * (sigvisor_abi.h, struct sigvisor_ipi_counts), read last, just before the call. */
void hc_phase_begin(const char *name, uint64_t ops, uint32_t flags, int op_syscall) {
  if (use_pc_devices) return;
#if CONFIG_SMP
  static struct sigvisor_hc_phase_begin_smp block;
  struct sigvisor_hc_phase_begin *args = &block.phase;
#else
  static struct sigvisor_hc_phase_begin block;
  struct sigvisor_hc_phase_begin *args = &block;
#endif
  size_t n = strnlen(name, SIGVISOR_PHASE_NAME_MAX);
  memcpy(args->name, name, n);
  if (n < SIGVISOR_PHASE_NAME_MAX) args->name[n] = '\0';
  args->ops = ops;
  args->flags = flags;
  args->op_syscall_plus1 = op_syscall >= 0 ? (uint32_t)op_syscall + 1 : 0;
#if CONFIG_SMP
  smp_read_ipi_counts(&block.ipis);
#endif
  args->tsc = arch_cycles();
  hypercall(SIGVISOR_HC_PHASE_BEGIN, &block);
}

void hc_phase_end(void) {
  if (use_pc_devices) return;
#if CONFIG_SMP
  static struct sigvisor_hc_phase_end_smp block;
  struct sigvisor_hc_phase_end *args = &block.phase;
  smp_read_ipi_counts(&block.ipis);
#else
  static struct sigvisor_hc_phase_end block;
  struct sigvisor_hc_phase_end *args = &block;
#endif
  args->tsc = arch_cycles();
  hypercall(SIGVISOR_HC_PHASE_END, &block);
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

uint32_t hc_orders(char *buf, uint32_t buf_len) {
  static struct sigvisor_hc_orders args;
  args.buf_gpa = (uint64_t)__pa(buf);
  args.buf_len = buf_len;
  args.len = SIGVISOR_ORDERS_NONE;
  if (use_pc_devices) return args.len;
  /* The VMM reads `args` and writes `args.len` and `buf` behind the compiler's back
   * (MIPS's store to the device is no compiler barrier): order both sides. */
  __asm__ volatile("" : : : "memory");
  hypercall(SIGVISOR_HC_ORDERS, &args);
  __asm__ volatile("" : : : "memory");
  return args.len;
}

void hc_exit(int64_t status) {
  if (use_pc_devices) arch_board_exit((uint32_t)status);
  static struct sigvisor_hc_exit args;
  args.status = status;
  hypercall(SIGVISOR_HC_EXIT, &args);
  halt_forever(); /* not reached: the VMM stops the vCPU */
}

void hc_panic(const char *message, size_t len, uint64_t rip, uint64_t vector) {
  if (use_pc_devices) {
    arch_uart_write("kernel panic: ", 14);
    arch_uart_write(message, len);
    arch_uart_write("\n", 1);
    arch_board_exit(0x7f);
  }
  static struct sigvisor_hc_panic args;
  args.message_gpa = (uint64_t)__pa(message);
  args.message_len = len;
  args.rip = rip;
  args.vector = vector;
  hypercall(SIGVISOR_HC_PANIC, &args);
  halt_forever();
}

#if CONFIG_SMP
void hc_cpu_up(uint32_t cpu, uint64_t rip, uint64_t rsp, uint64_t arg) {
  static struct sigvisor_hc_cpu_up args;
  args.cpu = cpu;
  args.reserved = 0;
  args.rip = rip;
  args.rsp = rsp;
  args.arg = arg;
  hypercall(SIGVISOR_HC_CPU_UP, &args);
}

void hc_send_ipi(uint64_t cpu_mask, uint32_t vector) {
  static struct sigvisor_hc_send_ipi args;
  args.cpu_mask = cpu_mask;
  args.vector = vector;
  args.reserved = 0;
  hypercall(SIGVISOR_HC_SEND_IPI, &args);
}
#endif
