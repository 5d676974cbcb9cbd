#include "guest-kit/user/ulib.h"

#include <stdarg.h>

#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/lib/format.h"
#include "guest-kit/lib/string.h"

void phase_begin(const char *name, unsigned long ops, int op_syscall) {
  sys_phase_begin(name, 0, SIGVISOR_PHASE_CALIBRATION, -1);
  sys_phase_end();
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
