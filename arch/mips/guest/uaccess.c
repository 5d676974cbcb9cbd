/* Bulk user copies and the exception table. */
#include "asm/uaccess.h"

struct exception_table_entry {
  uint32_t insn;
  uint32_t fixup;
};

/* Bounds of __ex_table, from kernel.ld. */
extern const struct exception_table_entry __start___ex_table[];
extern const struct exception_table_entry __stop___ex_table[];

uintptr_t search_exception_table(uintptr_t epc) {
  for (const struct exception_table_entry *e = __start___ex_table; e < __stop___ex_table; e++)
    if (e->insn == epc) return e->fixup;
  return 0;
}

/* A word at a time when both ends are aligned, else bytes; each access can fault
 * and stops the copy there. */
static uint64_t copy_user(void *to, const void *from, uint64_t n) {
  uint8_t *d = to;
  const uint8_t *s = from;
  int err = 0;
  if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) {
    for (; n >= 4; n -= 4, d += 4, s += 4) {
      uint32_t word;
      err |= __get_user(word, (const uint32_t *)s);
      if (!err) err |= __put_user(word, (uint32_t *)d);
      if (err) return n;
    }
  }
  for (; n; n--, d++, s++) {
    uint8_t byte;
    err |= __get_user(byte, s);
    if (!err) err |= __put_user(byte, d);
    if (err) return n;
  }
  return 0;
}

uint64_t copy_to_user(void *to, const void *from, uint64_t n) {
  if (!access_ok((uintptr_t)to, n)) return n;
  return copy_user(to, from, n);
}

uint64_t copy_from_user(void *to, const void *from, uint64_t n) {
  if (!access_ok((uintptr_t)from, n)) return n;
  return copy_user(to, from, n);
}
