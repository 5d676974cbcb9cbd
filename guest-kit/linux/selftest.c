/*
 * The signal self-test: what Linux guarantees, checked from user mode.
 *   siginfo    each fault's signal, si_code and si_addr (probes.S)
 *   registers  every general register, and the signal mask, as they were after
 *              rt_sigreturn; a register changed through the frame takes effect;
 *              the handler runs with its sa_mask and its own signal blocked
 *   blocked    a blocked signal is delivered when it is unblocked; two classic
 *              signals sent while blocked coalesce into one delivery, two real-time
 *              ones are queued (two deliveries, in order, each with its si_value)
 */
#include "guest-kit/linux/selftest.h"

#include "guest-kit/lib/format.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/linux/lrt.h"

static const char *case_name;
static int failures;

#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) {                             \
      char why[192];                           \
      format(why, sizeof(why), __VA_ARGS__);   \
      printf("FAIL %s: %s\n", case_name, why); \
      failures++;                              \
    }                                          \
  } while (0)

/* ---- siginfo of each fault ---------------------------------------------------- */

#define DECLARE_PROBE(name) extern const char name[], name##_fault[], name##_after[]
DECLARE_PROBE(probe_divide);
DECLARE_PROBE(probe_unmapped);
DECLARE_PROBE(probe_text_write);
DECLARE_PROBE(probe_int3);
DECLARE_PROBE(probe_ud2);
DECLARE_PROBE(probe_hlt);

struct caught {
  int signo, code;
  uint64_t addr, rip;
};
static volatile struct caught caught;
static uint64_t resume_at; /* the probe's _after: where the catcher resumes */

static void catcher(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  caught.signo = info->si_signo;
  caught.code = info->si_code;
  caught.addr = info->u.si_addr;
  caught.rip = uc->uc_mcontext.rip;
  uc->uc_mcontext.rip = resume_at;
}

static void probe(const char *what, const char *entry, const char *after, int signo, int code,
                  uint64_t addr, uint64_t rip) {
  memset((void *)&caught, 0, sizeof(caught));
  resume_at = (uint64_t)after;
  ((void (*)(void))entry)();
  CHECK(caught.signo == signo && caught.code == code && caught.addr == addr && caught.rip == rip,
        "%s: got signal %d code %#x addr %#lx rip %#lx, want %d %#x %#lx %#lx", what,
        caught.signo, caught.code, caught.addr, caught.rip, signo, code, addr, rip);
}

#define PROBE(what, name, signo, code, addr, rip) \
  probe(what, name, name##_after, signo, code, (uint64_t)(addr), (uint64_t)(rip))

static void test_siginfo(void) {
  const int signals[] = {SIGFPE, SIGSEGV, SIGTRAP, SIGILL};
  for (unsigned i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
    sig_install(signals[i], (void *)catcher, SA_SIGINFO, 0);
  PROBE("#DE", probe_divide, SIGFPE, FPE_INTDIV, probe_divide_fault, probe_divide_fault);
  PROBE("#PF unmapped", probe_unmapped, SIGSEGV, SEGV_MAPERR, 0x10, probe_unmapped_fault);
  PROBE("#PF read-only text", probe_text_write, SIGSEGV, SEGV_ACCERR, probe_text_write_after,
        probe_text_write_fault);
  /* int3 is a trap: the frame's rip is past it, and the kernel names no address. */
  PROBE("#BP", probe_int3, SIGTRAP, SI_KERNEL, 0, probe_int3_after);
  PROBE("#UD", probe_ud2, SIGILL, ILL_ILLOPN, probe_ud2_fault, probe_ud2_fault);
  PROBE("#GP", probe_hlt, SIGSEGV, SI_KERNEL, 0, probe_hlt_fault);
}

/* ---- registers and mask restored by rt_sigreturn -------------------------------- */

#define REG_COUNT 15
static const char *const reg_names[REG_COUNT] = {"rax", "rbx", "rcx", "rdx", "rsi",
                                                 "rdi", "rbp", "r8",  "r9",  "r10",
                                                 "r11", "r12", "r13", "r14", "r15"};
void registers_across_sigill(const uint64_t in[REG_COUNT], uint64_t out[REG_COUNT]); /* probes.S */

static volatile sigset_t mask_in_handler;

static void on_sigill_step(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  uc->uc_mcontext.rip += 2;    /* ud2 */
  uc->uc_mcontext.r12 ^= 0xff; /* a change through the frame must take effect */
  sigset_t now = 0;
  sys_sigprocmask(SIG_BLOCK, 0, &now);
  mask_in_handler = now;
}

static void test_registers(void) {
  sig_install(SIGILL, (void *)on_sigill_step, SA_SIGINFO, sigmask(SIGUSR2));
  const sigset_t block = sigmask(SIGUSR1) | sigmask(SIGRTMIN);
  sigset_t before = 0, after = 0;
  sys_sigprocmask(SIG_SETMASK, &block, &before);
  uint64_t in[REG_COUNT], out[REG_COUNT];
  for (int i = 0; i < REG_COUNT; i++) in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) + 0x100;
  registers_across_sigill(in, out);
  sys_sigprocmask(SIG_SETMASK, &before, &after);
  for (int i = 0; i < REG_COUNT; i++) {
    const uint64_t want = i == 11 ? in[i] ^ 0xff : in[i]; /* r12: changed by the handler */
    CHECK(out[i] == want, "%s is %#lx after rt_sigreturn, want %#lx", reg_names[i], out[i], want);
  }
  const sigset_t want_in_handler = block | sigmask(SIGUSR2) | sigmask(SIGILL);
  CHECK(mask_in_handler == want_in_handler, "mask in the handler %#lx, want %#lx",
        (uint64_t)mask_in_handler, want_in_handler);
  CHECK(after == block, "mask after rt_sigreturn %#lx, want %#lx", after, block);
}

/* ---- blocked, coalesced, queued ------------------------------------------------- */

static volatile int classic_runs, rt_runs;
static volatile uint64_t rt_values[4];
static volatile int rt_codes[4], rt_pids[4];

static void on_classic(int sig) { classic_runs++; }

static void on_realtime(int sig, siginfo_t *info, void *context) {
  if (rt_runs < 4) {
    rt_values[rt_runs] = info->u.rt.si_value;
    rt_codes[rt_runs] = info->si_code;
    rt_pids[rt_runs] = info->u.rt.si_pid;
  }
  rt_runs++;
}

static long queue_to_self(int sig, uint64_t value) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = sig;
  info.si_code = SI_QUEUE;
  info.u.rt.si_pid = (int32_t)sys_getpid();
  info.u.rt.si_uid = (uint32_t)sys_getuid();
  info.u.rt.si_value = value;
  return sys_sigqueueinfo((int)sys_getpid(), sig, &info);
}

static void test_blocked(void) {
  classic_runs = rt_runs = 0;
  sig_install(SIGUSR1, (void *)on_classic, 0, 0);
  sig_install(SIGRTMIN, (void *)on_realtime, SA_SIGINFO, 0);
  const sigset_t block = sigmask(SIGUSR1) | sigmask(SIGRTMIN);
  sigset_t old = 0;
  sys_sigprocmask(SIG_BLOCK, &block, &old);
  const int self = (int)sys_getpid();
  sys_kill(self, SIGUSR1);
  sys_kill(self, SIGUSR1); /* a classic signal is pending once */
  const long q1 = queue_to_self(SIGRTMIN, 0x1234);
  const long q2 = queue_to_self(SIGRTMIN, 0x5678); /* a real-time one is queued */
  CHECK(q1 == 0 && q2 == 0, "rt_sigqueueinfo returned %ld, %ld", q1, q2);
  CHECK(classic_runs == 0 && rt_runs == 0, "delivered while blocked (%d, %d)", classic_runs,
        rt_runs);
  sys_sigprocmask(SIG_SETMASK, &old, 0);
  CHECK(classic_runs == 1, "SIGUSR1 sent twice while blocked: delivered %d times, want 1",
        classic_runs);
  CHECK(rt_runs == 2, "SIGRTMIN queued twice while blocked: delivered %d times, want 2", rt_runs);
  if (rt_runs == 2) {
    CHECK(rt_values[0] == 0x1234 && rt_values[1] == 0x5678,
          "si_value %#lx then %#lx, want 0x1234 then 0x5678", rt_values[0], rt_values[1]);
    CHECK(rt_codes[0] == SI_QUEUE && rt_codes[1] == SI_QUEUE && rt_pids[0] == self &&
              rt_pids[1] == self,
          "si_code %d, %d and si_pid %d, %d; want %d and %d", rt_codes[0], rt_codes[1],
          rt_pids[0], rt_pids[1], SI_QUEUE, self);
  }
}

struct selftest_case {
  const char *name;
  void (*run)(void);
};

static const struct selftest_case cases[] = {
    {"siginfo", test_siginfo},
    {"registers", test_registers},
    {"blocked", test_blocked},
};

int linux_selftest_cases(const char *which) {
  int ran = 0;
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (strcmp(which, "all") != 0 && strcmp(which, cases[i].name) != 0) continue;
    case_name = cases[i].name;
    const int before = failures;
    cases[i].run();
    if (failures == before) printf("PASS %s\n", case_name);
    ran++;
  }
  if (!ran) {
    printf("selftest: unknown case '%s' (known: all siginfo registers blocked)\n", which);
    return 1;
  }
  return failures;
}
