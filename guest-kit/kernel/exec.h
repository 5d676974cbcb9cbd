/* Starting a built-in user program in a fresh address space. */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_EXEC_H_
#define SIGVISOR_GUEST_KIT_KERNEL_EXEC_H_

#include <stddef.h>
#include <stdint.h>

#include "asm/ptrace.h"
struct task;

/* Maps the static ELF `image` (page-aligned in the kernel image) into `task`'s
 * address space, gives it a stack holding the string `arg`, and fills `regs` so
 * that returning through them enters the program with its copy of `arg` as the
 * first argument (start_thread).
 * Returns 0, or a negative errno for a malformed image. */
int exec_program(struct task *task, const uint8_t *image, size_t image_size, const char *arg,
                 struct pt_regs *regs);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_EXEC_H_ */
