/* The Linux programs' small runtime: output, the parameters init was started with
 * (the kernel passes unknown `key=value` boot parameters to init as its
 * environment), signal handlers with their restorer. */
#ifndef SIGVISOR_GUEST_KIT_LINUX_LRT_H_
#define SIGVISOR_GUEST_KIT_LINUX_LRT_H_

#include "guest-kit/linux/lsys.h"

/* Formats to stdout (guest-kit/lib/format.h's conversions); lines of up to 255 bytes. */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program's environment, as _start found it (NULL-terminated). */
void env_init(char **envp);
/* The VMM's orders (marker.h: marker_orders), space-separated key=value words that
 * env_get then finds before the environment; `words` is split in place and kept. */
void env_set_orders(char* words);
/* The value of `key` in the orders, else in the environment, or NULL. */
const char *env_get(const char *key);
/* `key` as a decimal number, `fallback` if absent or not a number. */
unsigned long env_get_ulong(const char *key, unsigned long fallback);

/* Installs `handler` for `sig` with `flags` (SA_RESTORER is added) and `mask`. */
long sig_install(int sig, void *handler, uint64_t flags, sigset_t mask);

/* The program, called by linux_start_main with the kernel's argument vector. */
int main(int argc, char **argv);

#endif /* SIGVISOR_GUEST_KIT_LINUX_LRT_H_ */
