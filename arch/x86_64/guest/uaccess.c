/* Bulk user copies and the exception table. */
#include "arch/x86_64/guest/uaccess.h"

struct exception_table_entry {
  uint64_t insn;
  uint64_t fixup;
};

/* Bounds of __ex_table, from kernel.ld. */
extern const struct exception_table_entry __start___ex_table[];
extern const struct exception_table_entry __stop___ex_table[];

uint64_t search_exception_table(uint64_t rip) {
  for (const struct exception_table_entry *e = __start___ex_table; e < __stop___ex_table; e++)
    if (e->insn == rip) return e->fixup;
  return 0;
}

/* A fault inside the rep leaves rcx = the bytes still to copy; the fixup simply
 * resumes after the instruction. */
static uint64_t rep_movsb_user(void *to, const void *from, uint64_t n) {
  __asm__ volatile("1: rep movsb\n"
                   "2:\n" _ASM_EXTABLE(1b, 2b)
                   : "+D"(to), "+S"(from), "+c"(n)
                   :
                   : "memory");
  return n;
}

uint64_t copy_to_user(void *to, const void *from, uint64_t n) {
  if (!access_ok((uint64_t)to, n)) return n;
  return rep_movsb_user(to, from, n);
}

uint64_t copy_from_user(void *to, const void *from, uint64_t n) {
  if (!access_ok((uint64_t)from, n)) return n;
  return rep_movsb_user(to, from, n);
}
