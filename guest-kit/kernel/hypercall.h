/* The kernel's side of the VMM's hypercall port (guest-kit/abi/sigvisor_abi.h). */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_HYPERCALL_H_
#define SIGVISOR_GUEST_KIT_KERNEL_HYPERCALL_H_

#include <stddef.h>
#include <stdint.h>

/* Without sigvisor's hypercall port (booted by a Multiboot loader such as QEMU's):
 * the console goes to COM1, exit to isa-debug-exit, phase markers are dropped, and
 * hc_orders() answers SIGVISOR_ORDERS_NONE. */
void hypercalls_use_pc_devices(void);

void hc_console_write(const char *data, size_t len);
/* `op_syscall`: the system call each operation makes once, or -1 (see the ABI). */
void hc_phase_begin(const char *name, uint64_t ops, uint32_t flags, int op_syscall);
void hc_phase_end(void);
void hc_event(uint32_t kind, int signo, int code, int pid, uint64_t addr, uint64_t rip);
/* The quiescent point (SIGVISOR_HC_ORDERS): asks the VMM for init's command line,
 * written into `buf` (`buf_len` bytes). Returns its length as the VMM says it, or
 * SIGVISOR_ORDERS_NONE where no VMM answers (QEMU): the caller bounds it. */
uint32_t hc_orders(char *buf, uint32_t buf_len);
void hc_exit(int64_t status) __attribute__((noreturn));
void hc_panic(const char *message, size_t len, uint64_t rip, uint64_t vector)
    __attribute__((noreturn));

/* smp=on (CONFIG_SMP; sigvisor_abi.h, "SMP"). Starts application processor `cpu` at
 * `rip` with `rsp` and rdi = `arg`, in the caller's paging and descriptor state. */
void hc_cpu_up(uint32_t cpu, uint64_t rip, uint64_t rsp, uint64_t arg);
/* `vector` to every CPU in `cpu_mask` through the VMM (boot info ipi = pv). */
void hc_send_ipi(uint64_t cpu_mask, uint32_t vector);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_HYPERCALL_H_ */
