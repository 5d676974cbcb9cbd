/*
 * kernel_main: from the VMM's boot state, through the quiescent point where the kernel
 * asks for its orders, to the first user program.
 *
 * Boot is kept to a couple of thousand CPL0 instructions (each costs about a
 * microsecond where CPL0 is emulated): no console output of its own, only the
 * tables and the one address space the init program needs.
 */
#include "asm/cpu.h"
#include "asm/percpu.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/inject.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/page_alloc.h"
#include "guest-kit/kernel/task.h"

#if CONFIG_SMP
#include "asm/smp.h"
#endif

/* The ABI note the VMM checks before it boots this image. */
struct abi_note {
  uint32_t namesz, descsz, type;
  char name[12]; /* "sigvisor\0", padded to 4 bytes */
  uint32_t version;
};
#if CONFIG_SMP
/* smp=on: a second note after it, the most CPUs this kernel runs on (one object, so
 * that the ABI note stays first). A VMM boots an image without it on one vCPU only. */
__attribute__((section(".note.sigvisor"), aligned(4), used)) static const struct {
  struct abi_note abi, smp;
} sigvisor_abi_note = {
    {sizeof(SIGVISOR_NOTE_NAME), sizeof(uint32_t), SIGVISOR_NOTE_TYPE_ABI, SIGVISOR_NOTE_NAME,
     SIGVISOR_ABI_VERSION},
    {sizeof(SIGVISOR_NOTE_NAME), sizeof(uint32_t), SIGVISOR_NOTE_TYPE_SMP, SIGVISOR_NOTE_NAME,
     SIGVISOR_MAX_CPUS},
};
#else
__attribute__((section(".note.sigvisor"), aligned(4), used)) static const struct abi_note
    sigvisor_abi_note = {sizeof(SIGVISOR_NOTE_NAME), sizeof(uint32_t), SIGVISOR_NOTE_TYPE_ABI,
                         SIGVISOR_NOTE_NAME, SIGVISOR_ABI_VERSION};
#endif

/* Init's command line as the VMM gives it at the quiescent point. */
static char orders[SIGVISOR_CMDLINE_MAX];

/* The quiescent point (sigvisor_abi.h, SIGVISOR_HC_ORDERS): booted, no user task yet,
 * no FPU/SSE instruction executed. A VM stopped here can be saved and restored with
 * new orders. Returns init's command line: the VMM's answer, or the boot info's where
 * none came (QEMU).
 *
 * It is also the end of boot, as the VMM measures it: it times boot (and counts its
 * kernel instructions) from the first guest instruction to the guest's first
 * hypercall, which this is. So that span is the kernel's own boot, whatever the orders
 * and whatever init does first: a workload runs its unmeasured warm-up op before its
 * first phase marker. */
static const char *ask_for_orders(const struct sigvisor_boot_info *boot) {
  uint32_t len = hc_orders(orders, sizeof(orders));
  if (len == SIGVISOR_ORDERS_NONE) return boot->cmdline;
  if (len > sizeof(orders) - 1) len = sizeof(orders) - 1; /* never past the buffer */
  orders[len] = '\0';
  return orders;
}

void kernel_main(const struct sigvisor_boot_info *boot) {
  if (boot->magic != SIGVISOR_BOOT_INFO_MAGIC || boot->abi_version != SIGVISOR_ABI_VERSION)
    panic("bad boot info (magic %#x, ABI %u)", boot->magic, boot->abi_version);
  inject_init(boot->flags);
  cpu_init();
  percpu_init();
  page_alloc_init(boot->free_gpa, boot->mem_bytes);
#if CONFIG_SMP
  /* The other CPUs after the quiescent point: boot and the orders call are as on one
   * CPU, and a VM saved at that call has one running vCPU. */
  const char *args = ask_for_orders(boot);
  smp_boot_cpus(boot);
  task_start_init(args);
#else
  task_start_init(ask_for_orders(boot));
#endif
}
