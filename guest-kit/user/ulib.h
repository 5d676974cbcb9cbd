/* The user programs' tiny C library: system calls, printing, argument parsing. */
#ifndef SIGVISOR_GUEST_KIT_USER_ULIB_H_
#define SIGVISOR_GUEST_KIT_USER_ULIB_H_

#include <stddef.h>
#include <stdint.h>

#include "guest-kit/uapi/syscalls.h"

/* System calls go through `int $0x80` (see arch/x86_64/guest/traps.c). */
static inline long syscall3(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "memory");
  return ret;
}

static inline long sys_write(int fd, const void *buf, size_t len) {
  return syscall3(SYS_write, fd, (long)buf, (long)len);
}
static inline long sys_getpid(void) { return syscall3(SYS_getpid, 0, 0, 0); }
static inline void sys_exit(int status) {
  syscall3(SYS_exit, status, 0, 0);
  __builtin_unreachable();
}
static inline long sys_phase_begin(const char *name, unsigned long ops, unsigned flags) {
  return syscall3(SYS_phase_begin, (long)name, (long)ops, (long)flags);
}
static inline long sys_phase_end(void) { return syscall3(SYS_phase_end, 0, 0, 0); }

/* Starts a measured phase of `ops` operations, after an empty calibration phase
 * that lets the VMM subtract what the markers themselves cost (see
 * SIGVISOR_PHASE_CALIBRATION in guest-kit/abi/sigvisor_abi.h). */
void phase_begin(const char *name, unsigned long ops);
static inline void phase_end(void) { sys_phase_end(); }

static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The value of `key` in a "key=value key=value" string, copied into `out`; returns
 * 0 if the key is absent. */
int arg_get(const char *args, const char *key, char *out, size_t out_size);
/* The unsigned decimal value of `key`, or `fallback`. */
unsigned long arg_get_ulong(const char *args, const char *key, unsigned long fallback);

#endif /* SIGVISOR_GUEST_KIT_USER_ULIB_H_ */
