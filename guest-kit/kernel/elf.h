/* The few ELF definitions the kernel's program loader needs (its class is the
 * arch's: asm/elf.h). */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_ELF_H_
#define SIGVISOR_GUEST_KIT_KERNEL_ELF_H_

#include <stdint.h>

#define ELF_MAGIC 0x464c457fu /* "\x7fELF" */
#define PT_LOAD 1
#define PF_X 1
#define PF_W 2

struct elf64_ehdr {
  uint8_t e_ident[16];
  uint16_t e_type, e_machine;
  uint32_t e_version;
  uint64_t e_entry, e_phoff, e_shoff;
  uint32_t e_flags;
  uint16_t e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
};

struct elf64_phdr {
  uint32_t p_type, p_flags;
  uint64_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align;
};

struct elf32_ehdr {
  uint8_t e_ident[16];
  uint16_t e_type, e_machine;
  uint32_t e_version;
  uint32_t e_entry, e_phoff, e_shoff;
  uint32_t e_flags;
  uint16_t e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
};

struct elf32_phdr {
  uint32_t p_type;
  uint32_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz;
  uint32_t p_flags, p_align;
};

#endif /* SIGVISOR_GUEST_KIT_KERNEL_ELF_H_ */
