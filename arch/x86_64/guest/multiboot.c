/* The boot info a Multiboot loader's entry (multiboot.S) hands kernel_main. */
#include <stdint.h>

#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/lib/string.h"

struct multiboot_info {
  uint32_t flags;
  uint32_t mem_lower_kib;
  uint32_t mem_upper_kib; /* above 1 MiB */
  uint32_t boot_device;
  uint32_t cmdline;
};

#define MULTIBOOT_INFO_MEMORY (1u << 0)
#define MULTIBOOT_INFO_CMDLINE (1u << 2)
#define MAPPED_BYTES (1ull << 30) /* what multiboot.S maps */

extern char __kernel_end[];

/* Fills sigvisor's boot info (at the ABI's address, free below 1 MiB) from the
 * Multiboot info, and switches the hypercalls to the PC devices QEMU has. The
 * Multiboot command line is "<image> <args>": the args are the kernel's. */
const struct sigvisor_boot_info *multiboot_boot_info(const struct multiboot_info *mbi) {
  struct sigvisor_boot_info *boot = (struct sigvisor_boot_info *)(uint64_t)SIGVISOR_BOOT_INFO_GPA;
  memset(boot, 0, sizeof(*boot));
  boot->magic = SIGVISOR_BOOT_INFO_MAGIC;
  boot->abi_version = SIGVISOR_ABI_VERSION;
  uint64_t mem = 1ull << 20;
  if (mbi->flags & MULTIBOOT_INFO_MEMORY) mem += (uint64_t)mbi->mem_upper_kib << 10;
  boot->mem_bytes = mem < MAPPED_BYTES ? mem : MAPPED_BYTES;
  boot->free_gpa = (uint64_t)__kernel_end;
  if (mbi->flags & MULTIBOOT_INFO_CMDLINE) {
    const char *cmdline = (const char *)(uint64_t)mbi->cmdline;
    while (*cmdline && *cmdline != ' ') cmdline++; /* the image name */
    while (*cmdline == ' ') cmdline++;
    size_t len = strnlen(cmdline, SIGVISOR_CMDLINE_MAX - 1);
    memcpy(boot->cmdline, cmdline, len);
  }
  hypercalls_use_pc_devices();
  return boot;
}
