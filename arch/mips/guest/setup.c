/*
 * From the loader's registers to kernel_main (docs/mips-platform.md, "Boot").
 *
 * Under sigvisor: a0 = SIGVISOR_BOOT_INFO_MAGIC, a1 = the kseg0 address of struct
 * sigvisor_boot_info, a2 = the core's number (0 here), a3 = the number of cores.
 * Under QEMU Malta, as YAMON: a0 = argc, a1 = argv (argv[1] is -append's string),
 * a2 = envp, a3 = the RAM size; there the console is COM1 and exit is SOFTRES.
 */
#include <stdint.h>

#include "asm/cpu.h"
#include "asm/mipsregs.h"
#include "asm/page.h"
#include "asm/paging.h"
#include "asm/percpu.h"
#include "asm/vdso.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/lib/string.h"

#define MALTA_DEFAULT_RAM (64u << 20)
#define MALTA_MAX_RAM (256u << 20) /* what kseg0 reaches of Malta's low RAM */
#define TLB_UNIQUE_VPN2(i) (KSEG0 + (uint32_t)(i) * 0x2000u) /* never matched */

_Static_assert(SIGVISOR_BOOT_INFO_MAGIC == 0x73766269u, "entry.S's BOOT_INFO_MAGIC");

void kernel_main(const struct sigvisor_boot_info *boot) __attribute__((noreturn));

uintptr_t mips_kernel_sp;
unsigned mips_num_cores = 1;
struct cpu_data boot_cpu_data;

extern char __kernel_end[];

static const struct sigvisor_boot_info *malta_boot_info(uint32_t argc, const char *const *argv,
                                                        uint32_t ram_bytes) {
  static struct sigvisor_boot_info boot;
  boot.magic = SIGVISOR_BOOT_INFO_MAGIC;
  boot.abi_version = SIGVISOR_ABI_VERSION;
  boot.mem_bytes = ram_bytes >= (16u << 20) && ram_bytes <= MALTA_MAX_RAM ? ram_bytes
                                                                            : MALTA_DEFAULT_RAM;
  boot.free_gpa = __pa(__kernel_end);
  if (argc >= 2 && argv[1]) {
    size_t len = strnlen(argv[1], SIGVISOR_CMDLINE_MAX - 1);
    memcpy(boot.cmdline, argv[1], len);
  }
  hypercalls_use_pc_devices();
  return &boot;
}

void mips_boot(uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3) {
  (void)a2;
  const struct sigvisor_boot_info *boot;
  if (a0 == SIGVISOR_BOOT_INFO_MAGIC) {
    boot = (const struct sigvisor_boot_info *)(uintptr_t)a1;
    mips_num_cores = a3 ? a3 : 1;
    mips_vdso_init(boot);
  } else {
    boot = malta_boot_info(a0, (const char *const *)(uintptr_t)a1, a3);
  }
  kernel_main(boot);
}

static void tlb_flush_all(void) {
  unsigned entries = ((read_c0_config1() >> 25) & 0x3f) + 1;
  write_c0_entrylo0(0);
  write_c0_entrylo1(0);
  for (unsigned i = 0; i < entries; i++) {
    write_c0_entryhi(TLB_UNIQUE_VPN2(i));
    write_c0_index(i);
    tlb_write_indexed();
  }
  write_c0_entryhi(0);
}

void cpu_init(void) {
  write_c0_status(ST0_CU0); /* kernel mode, interrupts off, BEV clear: vectors at EBase */
  write_c0_pagemask(0);     /* 4 KiB pages */
  write_c0_wired(0);
  tlb_flush_all();
  write_c0_hwrena(1u << 2); /* user `rdhwr $2` reads Count (rdtsc() in ulib) */
}
