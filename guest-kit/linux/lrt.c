#include "guest-kit/linux/lrt.h"

#include <stdarg.h>

#include "guest-kit/lib/format.h"
#include "guest-kit/lib/string.h"

void linux_restore_rt(void); /* start.S */

/* Set once by _start's C half before main; read-only afterwards. */
static char **environment;

int linux_start_main(uint64_t *initial_stack) {
  const int argc = (int)initial_stack[0];
  char **argv = (char **)(initial_stack + 1);
  env_init(argv + argc + 1);
  return main(argc, argv);
}

void env_init(char **envp) { environment = envp; }

/* The VMM's orders as words, NULL-terminated; set once, before any workload runs. */
#define MAX_ORDER_WORDS 63
static char* order_words[MAX_ORDER_WORDS + 1];

void env_set_orders(char* words) {
  unsigned n = 0;
  for (char* c = words; *c && n < MAX_ORDER_WORDS;) {
    while (*c == ' ') *c++ = 0;
    if (!*c) break;
    order_words[n++] = c;
    while (*c && *c != ' ') c++;
  }
  order_words[n] = 0;
}

static const char* find(char** entries, const char* key, size_t key_len) {
  for (char** entry = entries; entry && *entry; entry++) {
    if (strncmp(*entry, key, key_len) == 0 && (*entry)[key_len] == '=') return *entry + key_len + 1;
  }
  return 0;
}

const char* env_get(const char* key) {
  const size_t key_len = strlen(key);
  const char* ordered = find(order_words, key, key_len);
  return ordered ? ordered : find(environment, key, key_len);
}

unsigned long env_get_ulong(const char *key, unsigned long fallback) {
  const char *value = env_get(key);
  if (!value || !*value) return fallback;
  unsigned long n = 0;
  for (const char *c = value; *c; c++) {
    if (*c < '0' || *c > '9') return fallback;
    n = n * 10 + (unsigned long)(*c - '0');
  }
  return n;
}

long sig_install(int sig, void *handler, uint64_t flags, sigset_t mask) {
  struct kernel_sigaction action = {handler, flags | SA_RESTORER, linux_restore_rt, mask};
  return sys_sigaction(sig, &action, 0);
}

int printf(const char *fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  const int n = format_v(buf, sizeof(buf), fmt, args);
  va_end(args);
  return (int)sys_write(1, buf, (size_t)n);
}
