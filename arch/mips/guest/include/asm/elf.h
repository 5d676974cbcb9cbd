/* The ELF class of user programs (ELF32), and the vdso the loader maps. */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_ELF_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_ELF_H_

#include "guest-kit/kernel/elf.h"

typedef struct elf32_ehdr elf_ehdr_t;
typedef struct elf32_phdr elf_phdr_t;

struct task;
/* Maps the vdso page (the signal trampoline) into a new program (vdso.c). */
void arch_setup_additional_pages(struct task *task);

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_ELF_H_ */
