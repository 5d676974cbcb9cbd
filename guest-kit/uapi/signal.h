/*
 * Signals as user programs see them: numbers, siginfo, sigaction, the rt frame's
 * ucontext and sigcontext. Numbers, siginfo and sigaction are Linux x86-64's on
 * every arch (64-bit slots for the pointers); the register frame is the arch's
 * (asm/sigcontext.h), so a handler reads its arguments as it would on Linux.
 */
#ifndef SIGVISOR_GUEST_KIT_UAPI_SIGNAL_H_
#define SIGVISOR_GUEST_KIT_UAPI_SIGNAL_H_

#include <stdint.h>

#define SIGHUP 1
#define SIGINT 2
#define SIGQUIT 3
#define SIGILL 4
#define SIGTRAP 5
#define SIGABRT 6
#define SIGBUS 7
#define SIGFPE 8
#define SIGKILL 9
#define SIGUSR1 10
#define SIGSEGV 11
#define SIGUSR2 12
#define SIGPIPE 13
#define SIGALRM 14
#define SIGTERM 15
#define SIGCHLD 17
#define SIGCONT 18
#define SIGSTOP 19
#define SIGURG 23
#define SIGWINCH 28
#define SIGSYS 31
#define SIGRTMIN 32
#define NSIG 64 /* signals 1..64 */

typedef uint64_t sigset_t; /* bit (sig - 1) */
#define sigmask(sig) (1ull << ((sig) - 1))

#define SIG_DFL ((void (*)(int))0)
#define SIG_IGN ((void (*)(int))1)

/* sa_flags */
#define SA_SIGINFO 0x00000004u
#define SA_NODEFER 0x40000000u
#define SA_RESETHAND 0x80000000u

/* rt_sigprocmask how */
#define SIG_BLOCK 0
#define SIG_UNBLOCK 1
#define SIG_SETMASK 2

/* si_code values */
#define SI_USER 0
#define SI_KERNEL 0x80
#define ILL_ILLOPC 1
#define ILL_ILLOPN 2
#define ILL_COPROC 7
#define FPE_INTDIV 1
#define FPE_INTOVF 2
#define SEGV_MAPERR 1
#define SEGV_ACCERR 2
#define BUS_ADRERR 2
#define TRAP_BRKPT 1
#define TRAP_TRACE 2

/* siginfo_t: 128 bytes, the fields Linux x86-64 has where it has them. */
typedef struct siginfo {
  int si_signo;
  int si_errno;
  int si_code;
  int _pad0;
  union {
    struct {
      int si_pid;
      unsigned si_uid;
    } kill;
    struct {
      uint64_t si_addr;
    } fault;
    char _size[128 - 16];
  } fields;
} siginfo_t;
#define si_pid fields.kill.si_pid
#define si_uid fields.kill.si_uid
#define si_addr fields.fault.si_addr

/* The kernel's sigaction (rt_sigaction's argument). */
struct sigaction {
  void *sa_handler; /* void (*)(int) or, with SA_SIGINFO, void (*)(int, siginfo_t *, void *) */
  uint64_t sa_flags;
  void (*sa_restorer)(void);
  sigset_t sa_mask;
};

/* stack_t, struct sigcontext and ucontext_t: the arch's (Linux x86-64's, or MIPS
 * o32's), and SA_RESTORER where the arch has it. */
#include "asm/sigcontext.h"

/* wait status, as Linux encodes it */
#define WIFEXITED(s) (((s) & 0x7f) == 0)
#define WEXITSTATUS(s) (((s) >> 8) & 0xff)
#define WIFSIGNALED(s) (((s) & 0x7f) != 0)
#define WTERMSIG(s) ((s) & 0x7f)

#endif /* SIGVISOR_GUEST_KIT_UAPI_SIGNAL_H_ */
