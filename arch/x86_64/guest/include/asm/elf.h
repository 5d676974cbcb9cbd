/* The ELF class of user programs: ELF64. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_ELF_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_ELF_H_

#include "guest-kit/kernel/elf.h"

typedef struct elf64_ehdr elf_ehdr_t;
typedef struct elf64_phdr elf_phdr_t;

/* No vdso on x86-64: the C library's restorer returns from signal handlers. */
struct task;
static inline void arch_setup_additional_pages(struct task *task) { (void)task; }

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_ELF_H_ */
