/*
 * kernel_main: from the VMM's boot state to the first user program.
 *
 * Boot is kept to a couple of thousand CPL0 instructions (each costs about a
 * microsecond where CPL0 is emulated): no console output of its own, only the
 * tables and the one address space the init program needs.
 */
#include "asm/cpu.h"
#include "asm/percpu.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/inject.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/page_alloc.h"
#include "guest-kit/kernel/task.h"

/* The ABI note the VMM checks before it boots this image. */
struct abi_note {
  uint32_t namesz, descsz, type;
  char name[12]; /* "sigvisor\0", padded to 4 bytes */
  uint32_t version;
};
__attribute__((section(".note.sigvisor"), aligned(4), used)) static const struct abi_note
    sigvisor_abi_note = {sizeof(SIGVISOR_NOTE_NAME), sizeof(uint32_t), SIGVISOR_NOTE_TYPE_ABI,
                         SIGVISOR_NOTE_NAME, SIGVISOR_ABI_VERSION};

void kernel_main(const struct sigvisor_boot_info *boot) {
  if (boot->magic != SIGVISOR_BOOT_INFO_MAGIC || boot->abi_version != SIGVISOR_ABI_VERSION)
    panic("bad boot info (magic %#x, ABI %u)", boot->magic, boot->abi_version);
  inject_init(boot->flags);
  cpu_init();
  percpu_init();
  page_alloc_init(boot->free_gpa, boot->mem_bytes);
  task_start_init(boot->cmdline);
}
