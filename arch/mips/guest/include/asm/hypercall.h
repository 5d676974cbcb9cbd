/*
 * The MIPS side of hypercall.c (docs/mips-platform.md): a 32-bit store of the
 * argument block's physical address to the hypercall device at 0x1f100000 + 4 * NR;
 * under QEMU Malta the COM1 16550 at 0x180003f8 and SOFTRES at 0x1f000500 instead.
 */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_HYPERCALL_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_HYPERCALL_H_

#include <stddef.h>
#include <stdint.h>

#include "asm/mipsregs.h"
#include "asm/page.h"
#include "guest-kit/abi/sigvisor_abi.h"

#define MIPS_HC_DEVICE 0x1f100000u
#define MALTA_COM1 0x180003f8u
#define MALTA_COM1_LSR (MALTA_COM1 + 5)
#define LSR_THR_EMPTY 0x20
#define MALTA_SOFTRES 0x1f000500u
#define MALTA_SOFTRES_RESET 0x42

static inline void arch_hypercall(enum sigvisor_hypercall_nr nr, const void *args) {
  *(volatile uint32_t *)KSEG1ADDR(MIPS_HC_DEVICE + 4 * (uint32_t)nr) = (uint32_t)__pa(args);
}

static inline void arch_uart_write(const char *data, size_t len) {
  volatile uint8_t *thr = (volatile uint8_t *)KSEG1ADDR(MALTA_COM1);
  volatile uint8_t *lsr = (volatile uint8_t *)KSEG1ADDR(MALTA_COM1_LSR);
  for (size_t i = 0; i < len; i++) {
    while (!(*lsr & LSR_THR_EMPTY)) {
    }
    *thr = (uint8_t)data[i];
  }
}

/* SOFTRES resets the board, and `-no-reboot` makes QEMU exit 0 on it: the status
 * cannot travel that way, so it is said on the console first (the one line that
 * differs from a run under sigvisor, which exits with the status). */
static inline __attribute__((noreturn)) void arch_board_exit(uint32_t value) {
  char digits[10];
  int n = 0;
  do {
    digits[n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value);
  arch_uart_write("sigvisor: exit status ", 22);
  while (n) arch_uart_write(&digits[--n], 1);
  arch_uart_write("\n", 1);
  *(volatile uint32_t *)KSEG1ADDR(MALTA_SOFTRES) = MALTA_SOFTRES_RESET;
  halt_forever();
}

/* The cycle counter the phase markers carry: Count (one tick per 2 instructions). */
static inline uint64_t arch_cycles(void) { return read_c0_count(); }

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_HYPERCALL_H_ */
