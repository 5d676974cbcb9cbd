/*
 * The x86-64 side of hypercall.c: one `outl` of the argument block's guest-physical
 * address to the call's port, and the PC devices QEMU offers instead
 * (-serial, -device isa-debug-exit,iobase=0xf4).
 */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_HYPERCALL_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_HYPERCALL_H_

#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/guest/x86.h"
#include "guest-kit/abi/sigvisor_abi.h"

#define COM1 0x3f8
#define COM1_LSR (COM1 + 5)
#define LSR_THR_EMPTY 0x20
#define DEBUG_EXIT_PORT 0xf4

static inline void arch_hypercall(enum sigvisor_hypercall_nr nr, const void *args) {
  outl((uint16_t)(SIGVISOR_HC_PORT_BASE + nr), (uint32_t)(uint64_t)args);
}

static inline void com1_write(const char *data, size_t len) {
  for (size_t i = 0; i < len; i++) {
    while (!(inb(COM1_LSR) & LSR_THR_EMPTY)) {
    }
    outb(COM1, (uint8_t)data[i]);
  }
}

#define arch_uart_write com1_write /* the name hypercall.c uses */

/* isa-debug-exit: QEMU exits with (value << 1) | 1. */
static inline __attribute__((noreturn)) void arch_board_exit(uint32_t value) {
  outl(DEBUG_EXIT_PORT, value);
  halt_forever();
}

/* The cycle counter the phase markers carry. */
static inline uint64_t arch_cycles(void) { return rdtsc(); }

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_HYPERCALL_H_ */
