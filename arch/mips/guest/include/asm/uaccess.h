/*
 * Access to user memory from the kernel, with exception fixups (Linux's uaccess).
 *
 * A user access that faults (TLB invalid, TLB modified, address error) does not
 * panic: the general exception handler finds the faulting instruction in __ex_table
 * and resumes at its fixup, which records -EFAULT. The two sides of seed 002, as on
 * x86-64 (and as Linux MIPS's __put_user, which also yields its own error):
 *
 *   err |= __put_user(x, ptr);        each access yields its own error, which the
 *                                     caller ORs into an accumulator
 *   __put_user_cerr(x, ptr, err);     the fixup ORs -EFAULT into `err` itself
 *
 * Each access is one load or store (the "R" constraint: an address that needs no
 * macro expansion), so the table names exactly the instruction that can fault. A
 * 64-bit access is two 32-bit ones (o32 has no 64-bit load or store). The caller
 * checks access_ok() on the whole range first.
 */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_UACCESS_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_UACCESS_H_

#include <stdint.h>

#include "guest-kit/uapi/syscalls.h"

#define _ASM_EXTABLE(from, to)       \
  ".pushsection __ex_table, \"a\"\n" \
  ".balign 4\n"                      \
  ".word " #from ", " #to "\n"       \
  ".popsection\n"

static inline int access_ok(uint64_t addr, uint64_t size) {
  return addr >= USER_BASE && addr <= USER_TOP && size <= USER_TOP - addr;
}

/* The fixup's way to record the error: "mov" sets it, "or" ORs it in ($at is free
 * in .fixup: the compiler does not use it across an asm statement). */
#define __UA_FIXUP_mov(err) "li %0, %3\n"
#define __UA_FIXUP_or(err) ".set push\n.set noat\nli $1, %3\nor %0, %0, $1\n.set pop\n"

#define __put_user_asm(insn, x, addr, err, fixup_op)          \
  __asm__ volatile("1: " insn " %z1, %2\n"                    \
                   "2:\n"                                     \
                   ".pushsection .fixup, \"ax\"\n"            \
                   "3: " __UA_FIXUP_##fixup_op(err)           \
                   "j 2b\n"                                   \
                   ".popsection\n" _ASM_EXTABLE(1b, 3b)       \
                   : "+r"(err)                                \
                   : "Jr"(x), "R"(*(addr)), "i"(-EFAULT)      \
                   : "memory")

#define __put_user_size(x, ptr, err, fixup_op)                                         \
  do {                                                                                 \
    switch (sizeof(*(ptr))) {                                                          \
      case 1: __put_user_asm("sb", (uint8_t)(x), (uint8_t *)(ptr), err, fixup_op); break;    \
      case 2: __put_user_asm("sh", (uint16_t)(x), (uint16_t *)(ptr), err, fixup_op); break;  \
      case 4: __put_user_asm("sw", (uint32_t)(x), (uint32_t *)(ptr), err, fixup_op); break;  \
      default: {                                                                       \
        uint64_t __pu_v64 = (uint64_t)(x);                                             \
        __put_user_asm("sw", (uint32_t)__pu_v64, (uint32_t *)(ptr), err, fixup_op);    \
        __put_user_asm("sw", (uint32_t)(__pu_v64 >> 32), (uint32_t *)(ptr) + 1, err, fixup_op); \
        break;                                                                         \
      }                                                                                \
    }                                                                                  \
  } while (0)

/* 0, or -EFAULT if the store faulted. */
#define __put_user(x, ptr)                       \
  ({                                             \
    int __pu_err = 0;                            \
    __put_user_size((x), (ptr), __pu_err, mov);  \
    __pu_err;                                    \
  })

/* ORs -EFAULT into `err` if the store faulted. */
#define __put_user_cerr(x, ptr, err) __put_user_size((x), (ptr), (err), or)

/* One load from user memory into `x` (zeroed on a fault). */
#define __get_user_asm(insn, x, addr, err, fixup_op)          \
  __asm__ volatile("1: " insn " %1, %2\n"                     \
                   "2:\n"                                     \
                   ".pushsection .fixup, \"ax\"\n"            \
                   "3: " __UA_FIXUP_##fixup_op(err)           \
                   "move %1, $0\n"                            \
                   "j 2b\n"                                   \
                   ".popsection\n" _ASM_EXTABLE(1b, 3b)       \
                   : "+r"(err), "=&r"(x)                      \
                   : "R"(*(addr)), "i"(-EFAULT))

#define __get_user_size(x, ptr, err, fixup_op)                                         \
  do {                                                                                 \
    uint64_t __gu_val;                                                                 \
    switch (sizeof(*(ptr))) {                                                          \
      case 1: {                                                                        \
        uint32_t __v; __get_user_asm("lbu", __v, (const uint8_t *)(ptr), err, fixup_op); \
        __gu_val = __v; break;                                                         \
      }                                                                                \
      case 2: {                                                                        \
        uint32_t __v; __get_user_asm("lhu", __v, (const uint16_t *)(ptr), err, fixup_op); \
        __gu_val = __v; break;                                                         \
      }                                                                                \
      case 4: {                                                                        \
        uint32_t __v; __get_user_asm("lw", __v, (const uint32_t *)(ptr), err, fixup_op); \
        __gu_val = __v; break;                                                         \
      }                                                                                \
      default: {                                                                       \
        uint32_t __lo, __hi;                                                           \
        __get_user_asm("lw", __lo, (const uint32_t *)(ptr), err, fixup_op);            \
        __get_user_asm("lw", __hi, (const uint32_t *)(ptr) + 1, err, fixup_op);        \
        __gu_val = ((uint64_t)__hi << 32) | __lo; break;                               \
      }                                                                                \
    }                                                                                  \
    (x) = (__typeof__(x))__gu_val;                                                     \
  } while (0)

#define __get_user(x, ptr)                       \
  ({                                             \
    int __gu_err = 0;                            \
    __get_user_size((x), (ptr), __gu_err, mov);  \
    __gu_err;                                    \
  })

#define __get_user_cerr(x, ptr, err) __get_user_size((x), (ptr), (err), or)

/* Checked single accesses. */
#define put_user(x, ptr) \
  (access_ok((uintptr_t)(ptr), sizeof(*(ptr))) ? __put_user((x), (ptr)) : -EFAULT)
#define get_user(x, ptr) \
  (access_ok((uintptr_t)(ptr), sizeof(*(ptr))) ? __get_user((x), (ptr)) : -EFAULT)

/* Return the number of bytes NOT copied: 0 on success (uaccess.c). */
uint64_t copy_to_user(void *to, const void *from, uint64_t n);
uint64_t copy_from_user(void *to, const void *from, uint64_t n);

/* The fixup address for a faulting kernel instruction, or 0 (uaccess.c). */
uintptr_t search_exception_table(uintptr_t epc);

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_UACCESS_H_ */
