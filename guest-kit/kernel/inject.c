/* Fault injection, the kernel's side: see inject.h. */
#include "guest-kit/kernel/inject.h"

#include "asm/page.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/uapi/signal.h"
#include "guest-kit/uapi/syscalls.h"

int inject_events;

void inject_report(uint32_t kind, int signo, int code, int pid, uint64_t addr, uint64_t rip) {
  hc_event(kind, signo, code, pid, addr, rip);
}

void host_request(void) {
  /* The mailbox lives in the boot-info page. The VMM writes it only while this CPU
   * is stopped, before it raises the interrupt. */
  volatile struct sigvisor_host_mailbox *box =
      (volatile struct sigvisor_host_mailbox *)__va(SIGVISOR_HOST_MAILBOX_GPA);
  const uint32_t kind = box->kind;
  const int signo = box->signo;
  const int pid = box->pid;
  box->kind = 0;
  if (kind != SIGVISOR_HOST_REQUEST_SIGNAL) return;

  struct task *target = pid ? task_find(pid) : current;
  int result = -ESRCH;
  if (target && signo >= 1 && signo <= NSIG) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    info.si_signo = signo;
    info.si_code = SI_USER; /* kill() from outside: no pid inside this guest sent it */
    result = send_signal(target, &info);
    /* Counted here, not on the delivery path, so that measured runs cost nothing
     * more: the workloads read it to tell the host's signals from their own. */
    if (result == 0) target->host_signals[signo - 1]++;
  } else if (target) {
    result = -EINVAL;
  }
  INJECT_REPORT(SIGVISOR_EVENT_HOST_SIGNAL, signo, result, target ? target->pid : pid, 0, 0);
}
