/* A small vsnprintf for guest code: %s %c %d %i %u %x %p %% with l/ll/z length
 * modifiers, a field width and the 0, - and # flags (e.g. %8u, %-8s, %016lx, %#lx). Always NUL-terminates; returns the
 * number of characters written (not counting the NUL). */
#ifndef SIGVISOR_GUEST_KIT_LIB_FORMAT_H_
#define SIGVISOR_GUEST_KIT_LIB_FORMAT_H_

#include <stdarg.h>
#include <stddef.h>

int format_v(char *buf, size_t size, const char *fmt, va_list args);
int format(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* SIGVISOR_GUEST_KIT_LIB_FORMAT_H_ */
