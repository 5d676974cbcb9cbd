/* printk and panic: format into a buffer, then one console hypercall (one VM exit)
 * per message rather than one per byte as a UART would cost. */
#include <stdarg.h>

#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/lib/format.h"

void printk(const char *fmt, ...) {
  static char buf[512];
  va_list args;
  va_start(args, fmt);
  int n = format_v(buf, sizeof(buf), fmt, args);
  va_end(args);
  hc_console_write(buf, (size_t)n);
}

void panic_at(uint64_t rip, uint64_t vector, const char *fmt, ...) {
  static char buf[256];
  va_list args;
  va_start(args, fmt);
  int n = format_v(buf, sizeof(buf), fmt, args);
  va_end(args);
  hc_panic(buf, (size_t)n, rip, vector);
}
