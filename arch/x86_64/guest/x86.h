/* x86-64 instructions the guest kernel needs, as small inline functions. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_X86_H_
#define SIGVISOR_ARCH_X86_64_GUEST_X86_H_

#include <stdint.h>

static inline void outl(uint16_t port, uint32_t value) {
  __asm__ volatile("outl %0, %1" : : "a"(value), "Nd"(port) : "memory");
}

static inline void outb(uint16_t port, uint8_t value) {
  __asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port) : "memory");
}

static inline uint8_t inb(uint16_t port) {
  uint8_t value;
  __asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port) : "memory");
  return value;
}

static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t read_cr2(void) {
  uint64_t value;
  __asm__ volatile("mov %%cr2, %0" : "=r"(value));
  return value;
}

static inline uint64_t read_cr3(void) {
  uint64_t value;
  __asm__ volatile("mov %%cr3, %0" : "=r"(value));
  return value;
}

static inline void write_cr3(uint64_t value) {
  __asm__ volatile("mov %0, %%cr3" : : "r"(value) : "memory");
}

static inline void invlpg(uint64_t address) {
  __asm__ volatile("invlpg (%0)" : : "r"(address) : "memory");
}

static inline __attribute__((noreturn)) void halt_forever(void) {
  for (;;) __asm__ volatile("cli; hlt");
}

#endif /* SIGVISOR_ARCH_X86_64_GUEST_X86_H_ */
