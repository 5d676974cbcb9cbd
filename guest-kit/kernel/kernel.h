/* What every part of the guest kernel may use: console output and panic. */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_KERNEL_H_
#define SIGVISOR_GUEST_KIT_KERNEL_KERNEL_H_

#include <stddef.h>
#include <stdint.h>

#define PAGE_SIZE 4096ul
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

void printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Stops the guest with a report to the VMM. `rip`/`vector` locate the failure
 * (0 and ~0 for a software panic). */
void panic_at(uint64_t rip, uint64_t vector, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
#define panic(...) panic_at(0, ~0ull, __VA_ARGS__)

#endif /* SIGVISOR_GUEST_KIT_KERNEL_KERNEL_H_ */
