#include "guest-kit/user/ulib.h"

#include <stdarg.h>

#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/lib/format.h"
#include "guest-kit/lib/string.h"

/* Calibration phases before each measured phase. Each costs the same counts, but its
 * time is only ever slowed (the host preempted the VMM), so the VMM takes each
 * clock's fastest and, from how the five vary, judges whether the phase's time
 * stands clear of the markers' own. The four beyond the first cost each phase about
 * 2,100 more guest kernel instructions (a calibration's two system calls and
 * hypercalls) and 8 more VM exits: about 2 ms where guest CPL0 is emulated,
 * microseconds elsewhere. */
#define PHASE_CALIBRATIONS 5

void phase_begin(const char *name, unsigned long ops, int op_syscall) {
  for (int i = 0; i < PHASE_CALIBRATIONS; ++i) {
    sys_phase_begin(name, 0, SIGVISOR_PHASE_CALIBRATION, -1);
    sys_phase_end();
  }
  sys_phase_begin(name, ops, 0, op_syscall);
}

long sig_install(int sig, void *handler, uint64_t flags, sigset_t mask) {
#ifdef SA_RESTORER
  struct sigaction action = {handler, flags | SA_RESTORER, __restore_rt, mask};
#else
  struct sigaction action = {handler, flags, __restore_rt, mask}; /* the kernel's trampoline */
#endif
  return sys_sigaction(sig, &action, 0);
}

int printf(const char *fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  int n = format_v(buf, sizeof(buf), fmt, args);
  va_end(args);
  return (int)sys_write(1, buf, (size_t)n);
}

int arg_get(const char *args, const char *key, char *out, size_t out_size) {
  size_t key_len = strlen(key);
  const char *p = args;
  while (*p) {
    while (*p == ' ') p++;
    const char *word = p;
    while (*p && *p != ' ') p++;
    if ((size_t)(p - word) > key_len && strncmp(word, key, key_len) == 0 && word[key_len] == '=') {
      const char *value = word + key_len + 1;
      size_t n = (size_t)(p - value);
      if (n >= out_size) n = out_size - 1;
      memcpy(out, value, n);
      out[n] = '\0';
      return 1;
    }
  }
  return 0;
}

unsigned long arg_get_ulong(const char *args, const char *key, unsigned long fallback) {
  char value[24];
  if (!arg_get(args, key, value, sizeof(value)) || !value[0]) return fallback;
  unsigned long n = 0;
  for (const char *c = value; *c; c++) {
    if (*c < '0' || *c > '9') return fallback;
    n = n * 10 + (unsigned long)(*c - '0');
  }
  return n;
}
