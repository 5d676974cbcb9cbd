/*
 * System calls. User buffers are never copied byte by byte (each byte would cost
 * several emulated instructions on a PVM host): the kernel translates a user
 * address to its physical page through the task's page tables, checking user
 * access, and hands the VMM that guest-physical address one page at a time.
 */
#include "guest-kit/kernel/syscall.h"

#include "arch/x86_64/guest/paging.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/syscalls.h"

static int user_range_ok(uint64_t addr, uint64_t len) {
  return addr >= USER_BASE && addr <= USER_TOP && len <= USER_TOP - addr;
}

static int64_t sys_write(int64_t fd, uint64_t buf, uint64_t len) {
  if (fd != 1 && fd != 2) return -EBADF;
  if (!user_range_ok(buf, len)) return -EFAULT;
  uint64_t done = 0;
  while (done < len) {
    uint64_t va = buf + done;
    uint64_t chunk = PAGE_SIZE - (va & (PAGE_SIZE - 1));
    if (chunk > len - done) chunk = len - done;
    uint64_t pa = paging_user_to_phys(current->page_table, va, 0);
    if (!pa) return done ? (int64_t)done : -EFAULT;
    hc_console_write((const char *)pa, chunk);
    done += chunk;
  }
  return (int64_t)done;
}

static int64_t sys_phase_begin(uint64_t name, uint64_t ops, uint64_t flags) {
  char copy[SIGVISOR_PHASE_NAME_MAX];
  uint64_t i = 0;
  for (; i < sizeof(copy) - 1; i++) {
    uint64_t pa = paging_user_to_phys(current->page_table, name + i, 0);
    if (!user_range_ok(name + i, 1) || !pa) return -EFAULT;
    copy[i] = *(const char *)pa;
    if (!copy[i]) break;
  }
  copy[i] = '\0';
  hc_phase_begin(copy, ops, (uint32_t)flags);
  return 0;
}

void syscall_dispatch(struct pt_regs *regs) {
  int64_t ret;
  switch (regs->rax) {
    case SYS_write: ret = sys_write((int64_t)regs->rdi, regs->rsi, regs->rdx); break;
    case SYS_getpid: ret = current->pid; break;
    case SYS_exit: task_exit((int)(regs->rdi & 0xff));
    case SYS_phase_begin: ret = sys_phase_begin(regs->rdi, regs->rsi, regs->rdx); break;
    case SYS_phase_end: hc_phase_end(); ret = 0; break;
    default: ret = -ENOSYS; break;
  }
  regs->rax = (uint64_t)ret;
}
