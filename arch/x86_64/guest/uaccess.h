/*
 * Access to user memory from the kernel, with exception fixups (Linux's uaccess).
 *
 * A user access that faults does not panic: the #PF handler finds the faulting
 * instruction in __ex_table and resumes at its fixup, which records -EFAULT. Two
 * styles exist, the two sides of seed 002:
 *
 *   err |= __put_user(x, ptr);        each access yields its own error, which the
 *                                     caller ORs into an accumulator (in memory)
 *   __put_user_cerr(x, ptr, err);     the fixup ORs -EFAULT into `err` itself, so
 *                                     the cumulative error stays in a register
 *
 * The caller checks access_ok() on the whole range first.
 */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_UACCESS_H_
#define SIGVISOR_ARCH_X86_64_GUEST_UACCESS_H_

#include <stdint.h>

#include "guest-kit/abi/white_box.h"
#include "guest-kit/uapi/syscalls.h"

/* The host's signal=pv frame builder checks frames against the same range. */
_Static_assert(USER_BASE == SIGVISOR_WB_USER_BASE && USER_TOP == SIGVISOR_WB_USER_TOP,
               "white_box.h's user range is access_ok's");

#define _ASM_EXTABLE(from, to)                 \
  ".pushsection __ex_table, \"a\"\n"           \
  ".balign 8\n"                                \
  ".quad " #from ", " #to "\n"                 \
  ".popsection\n"

static inline int access_ok(uint64_t addr, uint64_t size) {
  return addr >= USER_BASE && addr <= USER_TOP && size <= USER_TOP - addr;
}

/* One store to user memory; on a fault the fixup applies `fixup_op` (mov or or)
 * of -EFAULT to `err`. */
#define __put_user_asm(x, addr, err, itype, rtype, ltype, fixup_op) \
  __asm__ volatile("1: mov" itype " %" rtype "1, %2\n"               \
                   "2:\n"                                           \
                   ".pushsection .fixup, \"ax\"\n"                  \
                   "3: " fixup_op " %3, %0\n"                       \
                   "   jmp 2b\n"                                    \
                   ".popsection\n" _ASM_EXTABLE(1b, 3b)             \
                   : "+r"(err)                                      \
                   : ltype(x), "m"(*(addr)), "i"(-EFAULT))

#define __put_user_size(x, ptr, err, fixup_op)                                            \
  do {                                                                                    \
    switch (sizeof(*(ptr))) {                                                             \
      case 1: __put_user_asm((uint8_t)(x), ptr, err, "b", "b", "iq", fixup_op); break;  \
      case 2: __put_user_asm((uint16_t)(x), ptr, err, "w", "w", "ir", fixup_op); break; \
      case 4: __put_user_asm((uint32_t)(x), ptr, err, "l", "k", "ir", fixup_op); break; \
      default: __put_user_asm((uint64_t)(x), ptr, err, "q", "", "er", fixup_op); break; \
    }                                                                                     \
  } while (0)

/* 0, or -EFAULT if the store faulted. */
#define __put_user(x, ptr)                         \
  ({                                               \
    int __pu_err = 0;                              \
    __put_user_size((x), (ptr), __pu_err, "movl"); \
    __pu_err;                                      \
  })

/* ORs -EFAULT into `err` if the store faulted. */
#define __put_user_cerr(x, ptr, err) __put_user_size((x), (ptr), (err), "orl")

/* One load from user memory into `x` (zeroed on a fault). */
#define __get_user_asm(x, addr, err, itype, rtype, ltype, fixup_op) \
  __asm__ volatile("1: mov" itype " %2, %" rtype "1\n"               \
                   "2:\n"                                           \
                   ".pushsection .fixup, \"ax\"\n"                  \
                   "3: " fixup_op " %3, %0\n"                       \
                   "   xor %k1, %k1\n"                              \
                   "   jmp 2b\n"                                    \
                   ".popsection\n" _ASM_EXTABLE(1b, 3b)             \
                   : "+r"(err), ltype(x)                            \
                   : "m"(*(addr)), "i"(-EFAULT))

#define __get_user_size(x, ptr, err, fixup_op)                                     \
  do {                                                                             \
    uint64_t __gu_val;                                                             \
    switch (sizeof(*(ptr))) {                                                      \
      case 1: {                                                                    \
        uint8_t __v; __get_user_asm(__v, ptr, err, "b", "b", "=q", fixup_op);       \
        __gu_val = __v; break;                                                     \
      }                                                                            \
      case 2: {                                                                    \
        uint16_t __v; __get_user_asm(__v, ptr, err, "w", "w", "=r", fixup_op);      \
        __gu_val = __v; break;                                                     \
      }                                                                            \
      case 4: {                                                                    \
        uint32_t __v; __get_user_asm(__v, ptr, err, "l", "k", "=r", fixup_op);      \
        __gu_val = __v; break;                                                     \
      }                                                                            \
      default: {                                                                   \
        uint64_t __v; __get_user_asm(__v, ptr, err, "q", "", "=r", fixup_op);       \
        __gu_val = __v; break;                                                     \
      }                                                                            \
    }                                                                              \
    (x) = (__typeof__(x))__gu_val;                                                 \
  } while (0)

#define __get_user(x, ptr)                          \
  ({                                                \
    int __gu_err = 0;                               \
    __get_user_size((x), (ptr), __gu_err, "movl");  \
    __gu_err;                                       \
  })

#define __get_user_cerr(x, ptr, err) __get_user_size((x), (ptr), (err), "orl")

/* Checked single accesses. */
#define put_user(x, ptr) \
  (access_ok((uint64_t)(ptr), sizeof(*(ptr))) ? __put_user((x), (ptr)) : -EFAULT)
#define get_user(x, ptr) \
  (access_ok((uint64_t)(ptr), sizeof(*(ptr))) ? __get_user((x), (ptr)) : -EFAULT)

/* Copies with one `rep movsb` (one emulated instruction where CPL0 is emulated).
 * Return the number of bytes NOT copied: 0 on success. */
uint64_t copy_to_user(void *to, const void *from, uint64_t n);
uint64_t copy_from_user(void *to, const void *from, uint64_t n);

/* The fixup address for a faulting kernel instruction, or 0 (arch/x86_64/guest/uaccess.c). */
uint64_t search_exception_table(uint64_t rip);

#endif /* SIGVISOR_ARCH_X86_64_GUEST_UACCESS_H_ */
