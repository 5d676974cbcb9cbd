/*
 * kernel_main: from the VMM's boot state to the first user program.
 *
 * Boot is kept to a few thousand CPL0 instructions (each costs about a microsecond
 * where CPL0 is emulated): no console output of its own, only the tables and the
 * one address space the init program needs.
 */
#include "arch/x86_64/guest/cpu.h"
#include "arch/x86_64/guest/paging.h"
#include "arch/x86_64/guest/pt_regs.h"
#include "arch/x86_64/guest/x86.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/exec.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/page_alloc.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/lib/string.h"

/* The ABI note the VMM checks before it boots this image. */
struct abi_note {
  uint32_t namesz, descsz, type;
  char name[12]; /* "sigvisor\0", padded to 4 bytes */
  uint32_t version;
};
__attribute__((section(".note.sigvisor"), aligned(4), used)) static const struct abi_note
    sigvisor_abi_note = {sizeof(SIGVISOR_NOTE_NAME), sizeof(uint32_t), SIGVISOR_NOTE_TYPE_ABI,
                         SIGVISOR_NOTE_NAME, SIGVISOR_ABI_VERSION};

/* The init program, embedded page-aligned by the build (guest-kit/BUILD.bazel). */
extern const uint8_t user_program_init_start[];
extern const uint8_t user_program_init_end[];

#define KERNEL_STACK_SIZE (4 * PAGE_SIZE)
static uint8_t init_kernel_stack[KERNEL_STACK_SIZE] __attribute__((aligned(16)));
static struct task init_task = {.pid = 1, .name = "init"};

void x86_enter_user(struct pt_regs *regs) __attribute__((noreturn));

void kernel_main(const struct sigvisor_boot_info *boot) {
  if (boot->magic != SIGVISOR_BOOT_INFO_MAGIC || boot->abi_version != SIGVISOR_ABI_VERSION)
    panic("bad boot info (magic %#x, ABI %u)", boot->magic, boot->abi_version);
  cpu_init();
  page_alloc_init(boot->free_gpa, boot->mem_bytes);

  struct task *task = &init_task;
  task->page_table = paging_new_address_space();
  task->kernel_stack_top = (uint64_t)(init_kernel_stack + KERNEL_STACK_SIZE);
  current = task;

  /* The first return to user mode goes through a pt_regs frame at the top of the
   * task's kernel stack, exactly where a later trap from user mode will build its
   * own frame. */
  struct pt_regs *regs = (struct pt_regs *)(task->kernel_stack_top - sizeof(struct pt_regs));
  int err = exec_program(task, user_program_init_start,
                         (size_t)(user_program_init_end - user_program_init_start),
                         boot->cmdline, regs);
  if (err) panic("cannot start init: error %d", err);
  cpu_set_kernel_stack(task->kernel_stack_top);
  write_cr3(task->page_table);
  x86_enter_user(regs);
}
