/*
 * Guest-side semantics tests: the program checks the kernel's behaviour itself and
 * reports PASS/FAIL on the console; the host test (tests/signal_test.cc) boots one
 * case per VM and checks the report and the exit status.
 */
#include "guest-kit/user/selftest.h"

#include "guest-kit/lib/format.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/user/ulib.h"
#include "guest-kit/user/workloads.h"

static const char *test_name;
static int failures;

#define CHECK(cond, ...)                     \
  do {                                       \
    if (!(cond)) {                           \
      char why[160];                         \
      format(why, sizeof(why), __VA_ARGS__); \
      printf("FAIL %s: %s\n", test_name, why); \
      failures++;                            \
    }                                        \
  } while (0)

/* ---- siginfo of each exception --------------------------------------------- */

#if defined(__mips__)
#include "guest-kit/abi/sigvisor_abi.h"
#define UC_PC(uc) ((uc)->uc_mcontext.sc_pc)
#else
#define UC_PC(uc) ((uc)->uc_mcontext.rip)
#endif

/* Where the catcher resumes (set by FAULT before the faulting instruction). */
uintptr_t selftest_resume_at;

static volatile int caught_signo, caught_code;
static volatile uint64_t caught_addr;

static void catcher(int sig, siginfo_t *info, void *context) {
  caught_signo = info->si_signo;
  caught_code = info->si_code;
  caught_addr = info->si_addr;
  UC_PC((ucontext_t *)context) = selftest_resume_at;
}

static void expect_caught(const char *what, int signo, int code, uint64_t addr) {
  CHECK(caught_signo == signo && caught_code == code && caught_addr == addr,
        "%s: got signal %d code %#x addr %#llx, want %d %#x %#llx", what, caught_signo,
        caught_code, (unsigned long long)caught_addr, signo, code, (unsigned long long)addr);
  caught_signo = caught_code = 0;
  caught_addr = 0;
}

#if defined(__mips__)
/* Runs `setup` then the faulting `insn` at label 1, resuming at label 2; stores the
 * faulting instruction's address in `at` and label 2 in `after`. No reordering:
 * nothing may land in a delay slot. $8 and $9 are the setup's scratch registers. */
#define FAULT(setup, insn, at, after)                               \
  __asm__ volatile(".set push\n\t.set noreorder\n\t.set noat\n\t" \
                   setup "\n\t"                                     \
                   "la $24, 2f\n\t"                                 \
                   "la $25, selftest_resume_at\n\t"                 \
                   "sw $24, 0($25)\n\t"                             \
                   "la %0, 1f\n\t"                                  \
                   "la %1, 2f\n\t"                                  \
                   "1: " insn "\n\t"                                \
                   "2:\n\t"                                         \
                   ".set pop"                                        \
                   : "=&r"(at), "=&r"(after)                         \
                   :                                                 \
                   : "$8", "$9", "$24", "$25", "memory")

static void test_siginfo(void) {
  const int signals[] = {SIGFPE, SIGSEGV, SIGTRAP, SIGILL, SIGBUS};
  for (unsigned i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
    sig_install(signals[i], (void *)catcher, SA_SIGINFO, 0);
  uintptr_t at, after;

  FAULT("", "teq $0, $0, 7", at, after); /* the compiler's divide-by-zero check */
  expect_caught("teq 7", SIGFPE, FPE_INTDIV, at);
  FAULT("li $8, 0x10", "lw $9, 0($8)", at, after);
  expect_caught("TLBL unmapped", SIGSEGV, SEGV_MAPERR, 0x10);
  FAULT("la $8, 2f", "sb $0, 0($8)", at, after);
  expect_caught("TLB Mod read-only text", SIGSEGV, SEGV_ACCERR, after);
  FAULT("", "break", at, after);
  expect_caught("break", SIGTRAP, SI_KERNEL, 0);
  FAULT("", ".word 0xec000000", at, after); /* a reserved opcode (0x3b) */
  expect_caught("RI", SIGILL, ILL_ILLOPC, at);
  FAULT("", "mfc0 $8, $12", at, after); /* CP0 in user mode */
  expect_caught("CpU", SIGILL, ILL_COPROC, at);
  FAULT("lui $8, 0x8000", "lw $9, 0($8)", at, after); /* kseg0 from user mode */
  expect_caught("AdEL", SIGBUS, BUS_ADRERR, 0x80000000u);
  FAULT("lui $8, 0x7fff\n\tori $8, $8, 0xffff", "addi $8, $8, 1", at, after);
  expect_caught("Ov", SIGFPE, FPE_INTOVF, at);
}

/* ---- the vdso page (seed 004) ------------------------------------------------ */

/* Every process has the vdso page at USER_VDSO_BASE, read-only: it holds the
 * trampoline (the VMM's page under sigvisor, the kernel's own under QEMU), and a store
 * to it is SIGSEGV (SEGV_ACCERR) and changes nothing. */
static void test_vdso(void) {
  const volatile uint32_t *vdso =
      (const volatile uint32_t *)(USER_VDSO_BASE + SIGVISOR_VDSO_RT_SIGRETURN_OFFSET);
  const uint32_t want0 = SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN0;
  const uint32_t want1 = SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN1;
  CHECK(vdso[0] == want0 && vdso[1] == want1, "the vdso holds %#x %#x, want %#x %#x", vdso[0],
        vdso[1], want0, want1);
  sig_install(SIGSEGV, (void *)catcher, SA_SIGINFO, 0);
  uintptr_t at, after;
  FAULT("lui $8, 0x7fff\n\tori $8, $8, 0xf000", "sw $0, 0($8)", at, after); /* USER_VDSO_BASE */
  expect_caught("store to the vdso", SIGSEGV, SEGV_ACCERR, USER_VDSO_BASE);
  CHECK(vdso[0] == want0 && vdso[1] == want1, "after the store the vdso holds %#x %#x", vdso[0],
        vdso[1]);
}

/* ---- registers and mask restored exactly by sigreturn ----------------------- */

/* Every register but zero, k0/k1 (the kernel's) and sp, by number. */
static const int reg_numbers[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                                  15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 28, 30, 31};
__attribute__((used)) static uint32_t regs_after[32];

static void on_sigill_skip(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  uc->uc_mcontext.sc_pc += 4;          /* the reserved instruction */
  uc->uc_mcontext.sc_regs[20] ^= 0xff; /* s4: a change through the frame must take effect */
}

static void test_registers(void) {
  sig_install(SIGILL, (void *)on_sigill_skip, SA_SIGINFO, sigmask(SIGUSR2));
  sigset_t before, after, block = sigmask(SIGUSR1) | sigmask(SIGRTMIN);
  sys_sigprocmask(SIG_SETMASK, &block, &before);
  /* s0-s7, gp, fp and ra are saved and restored around the test by hand; each
   * register n holds 0x01010101 * n across the signal. */
  __asm__ volatile(
      ".set push\n\t.set noreorder\n\t.set noat\n\t"
      "addiu $sp, $sp, -256\n\t"
      "sw $16, 128($sp)\n\t"
      "sw $17, 132($sp)\n\t"
      "sw $18, 136($sp)\n\t"
      "sw $19, 140($sp)\n\t"
      "sw $20, 144($sp)\n\t"
      "sw $21, 148($sp)\n\t"
      "sw $22, 152($sp)\n\t"
      "sw $23, 156($sp)\n\t"
      "sw $28, 160($sp)\n\t"
      "sw $30, 164($sp)\n\t"
      "sw $31, 168($sp)\n\t"
      "li $1, 0x01010101\n\t"
      "li $2, 0x02020202\n\t"
      "li $3, 0x03030303\n\t"
      "li $4, 0x04040404\n\t"
      "li $5, 0x05050505\n\t"
      "li $6, 0x06060606\n\t"
      "li $7, 0x07070707\n\t"
      "li $8, 0x08080808\n\t"
      "li $9, 0x09090909\n\t"
      "li $10, 0x0a0a0a0a\n\t"
      "li $11, 0x0b0b0b0b\n\t"
      "li $12, 0x0c0c0c0c\n\t"
      "li $13, 0x0d0d0d0d\n\t"
      "li $14, 0x0e0e0e0e\n\t"
      "li $15, 0x0f0f0f0f\n\t"
      "li $16, 0x10101010\n\t"
      "li $17, 0x11111111\n\t"
      "li $18, 0x12121212\n\t"
      "li $19, 0x13131313\n\t"
      "li $20, 0x14141414\n\t"
      "li $21, 0x15151515\n\t"
      "li $22, 0x16161616\n\t"
      "li $23, 0x17171717\n\t"
      "li $24, 0x18181818\n\t"
      "li $25, 0x19191919\n\t"
      "li $28, 0x1c1c1c1c\n\t"
      "li $30, 0x1e1e1e1e\n\t"
      "li $31, 0x1f1f1f1f\n\t"
      ".word 0xec000000\n\t" /* a reserved opcode (0x3b): SIGILL */
      "sw $1, 4($sp)\n\t"
      "sw $2, 8($sp)\n\t"
      "sw $3, 12($sp)\n\t"
      "sw $4, 16($sp)\n\t"
      "sw $5, 20($sp)\n\t"
      "sw $6, 24($sp)\n\t"
      "sw $7, 28($sp)\n\t"
      "sw $8, 32($sp)\n\t"
      "sw $9, 36($sp)\n\t"
      "sw $10, 40($sp)\n\t"
      "sw $11, 44($sp)\n\t"
      "sw $12, 48($sp)\n\t"
      "sw $13, 52($sp)\n\t"
      "sw $14, 56($sp)\n\t"
      "sw $15, 60($sp)\n\t"
      "sw $16, 64($sp)\n\t"
      "sw $17, 68($sp)\n\t"
      "sw $18, 72($sp)\n\t"
      "sw $19, 76($sp)\n\t"
      "sw $20, 80($sp)\n\t"
      "sw $21, 84($sp)\n\t"
      "sw $22, 88($sp)\n\t"
      "sw $23, 92($sp)\n\t"
      "sw $24, 96($sp)\n\t"
      "sw $25, 100($sp)\n\t"
      "sw $28, 112($sp)\n\t"
      "sw $30, 120($sp)\n\t"
      "sw $31, 124($sp)\n\t"
      "la $8, regs_after\n\t"
      "lw $9, 4($sp)\n\tsw $9, 4($8)\n\t"
      "lw $9, 8($sp)\n\tsw $9, 8($8)\n\t"
      "lw $9, 12($sp)\n\tsw $9, 12($8)\n\t"
      "lw $9, 16($sp)\n\tsw $9, 16($8)\n\t"
      "lw $9, 20($sp)\n\tsw $9, 20($8)\n\t"
      "lw $9, 24($sp)\n\tsw $9, 24($8)\n\t"
      "lw $9, 28($sp)\n\tsw $9, 28($8)\n\t"
      "lw $9, 32($sp)\n\tsw $9, 32($8)\n\t"
      "lw $9, 36($sp)\n\tsw $9, 36($8)\n\t"
      "lw $9, 40($sp)\n\tsw $9, 40($8)\n\t"
      "lw $9, 44($sp)\n\tsw $9, 44($8)\n\t"
      "lw $9, 48($sp)\n\tsw $9, 48($8)\n\t"
      "lw $9, 52($sp)\n\tsw $9, 52($8)\n\t"
      "lw $9, 56($sp)\n\tsw $9, 56($8)\n\t"
      "lw $9, 60($sp)\n\tsw $9, 60($8)\n\t"
      "lw $9, 64($sp)\n\tsw $9, 64($8)\n\t"
      "lw $9, 68($sp)\n\tsw $9, 68($8)\n\t"
      "lw $9, 72($sp)\n\tsw $9, 72($8)\n\t"
      "lw $9, 76($sp)\n\tsw $9, 76($8)\n\t"
      "lw $9, 80($sp)\n\tsw $9, 80($8)\n\t"
      "lw $9, 84($sp)\n\tsw $9, 84($8)\n\t"
      "lw $9, 88($sp)\n\tsw $9, 88($8)\n\t"
      "lw $9, 92($sp)\n\tsw $9, 92($8)\n\t"
      "lw $9, 96($sp)\n\tsw $9, 96($8)\n\t"
      "lw $9, 100($sp)\n\tsw $9, 100($8)\n\t"
      "lw $9, 112($sp)\n\tsw $9, 112($8)\n\t"
      "lw $9, 120($sp)\n\tsw $9, 120($8)\n\t"
      "lw $9, 124($sp)\n\tsw $9, 124($8)\n\t"
      "lw $16, 128($sp)\n\t"
      "lw $17, 132($sp)\n\t"
      "lw $18, 136($sp)\n\t"
      "lw $19, 140($sp)\n\t"
      "lw $20, 144($sp)\n\t"
      "lw $21, 148($sp)\n\t"
      "lw $22, 152($sp)\n\t"
      "lw $23, 156($sp)\n\t"
      "lw $28, 160($sp)\n\t"
      "lw $30, 164($sp)\n\t"
      "lw $31, 168($sp)\n\t"
      "addiu $sp, $sp, 256\n\t"
      ".set pop"
      :
      :
      : "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12", "$13",
        "$14", "$15", "$24", "$25", "hi", "lo", "memory");
  sys_sigprocmask(SIG_SETMASK, &before, &after);
  for (unsigned i = 0; i < sizeof(reg_numbers) / sizeof(reg_numbers[0]); i++) {
    const int n = reg_numbers[i];
    uint32_t want = 0x01010101u * (uint32_t)n;
    if (n == 20) want ^= 0xff; /* s4, changed by the handler through the frame */
    CHECK(regs_after[n] == want, "$%d is %#x after sigreturn, want %#x", n, regs_after[n], want);
  }
  CHECK(after == block, "mask after the handler %#llx, want %#llx", (unsigned long long)after,
        (unsigned long long)block);
}

#else /* x86-64 */

/* Runs `setup` then the faulting `insn` at label 1, resuming at label 2; stores the
 * faulting instruction's address in `at` and label 2 in `after`. */
#define FAULT(setup, insn, at, after)                          \
  __asm__ volatile(setup "\n\t"                                \
                   "lea 2f(%%rip), %%r11\n\t"                  \
                   "mov %%r11, selftest_resume_at(%%rip)\n\t"  \
                   "lea 1f(%%rip), %0\n\t"                     \
                   "lea 2f(%%rip), %1\n\t"                     \
                   "1: " insn "\n\t"                           \
                   "2:\n\t"                                    \
                   : "=&r"(at), "=&r"(after)                   \
                   :                                           \
                   : "rax", "rcx", "rdx", "r11", "memory")

static void test_siginfo(void) {
  const int signals[] = {SIGFPE, SIGSEGV, SIGTRAP, SIGILL};
  for (unsigned i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
    sig_install(signals[i], (void *)catcher, SA_SIGINFO, 0);
  uint64_t at, after;

  FAULT("xor %%edx, %%edx\n\txor %%ecx, %%ecx\n\tmov $1, %%eax", "divq %%rcx", at, after);
  expect_caught("#DE", SIGFPE, FPE_INTDIV, at);
  FAULT("mov $0x10, %%rcx", "mov (%%rcx), %%rax", at, after);
  expect_caught("#PF unmapped", SIGSEGV, SEGV_MAPERR, 0x10);
  FAULT("lea 2f(%%rip), %%rcx", "movb $0, (%%rcx)", at, after);
  expect_caught("#PF read-only text", SIGSEGV, SEGV_ACCERR, after);
  FAULT("", "int3", at, after);
  expect_caught("#BP", SIGTRAP, SI_KERNEL, 0);
  FAULT("", "ud2", at, after);
  expect_caught("#UD", SIGILL, ILL_ILLOPN, at);
  FAULT("", "hlt", at, after); /* privileged at CPL3: #GP(0) */
  expect_caught("#GP", SIGSEGV, SI_KERNEL, 0);
}

/* ---- registers and mask restored exactly by sigreturn ----------------------- */

#define REG_COUNT 15
static const char *const reg_names[REG_COUNT] = {"rax", "rbx", "rcx", "rdx", "rsi",
                                                 "rdi", "rbp", "r8",  "r9",  "r10",
                                                 "r11", "r12", "r13", "r14", "r15"};
__attribute__((used)) static uint64_t regs_after[REG_COUNT];

static void on_sigill_skip(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  uc->uc_mcontext.rip += 2;        /* ud2 */
  uc->uc_mcontext.r12 ^= 0xff;     /* a change through the frame must take effect */
}

static void test_registers(void) {
  sig_install(SIGILL, (void *)on_sigill_skip, SA_SIGINFO, sigmask(SIGUSR2));
  sigset_t before, after, block = sigmask(SIGUSR1) | sigmask(SIGRTMIN);
  sys_sigprocmask(SIG_SETMASK, &block, &before);
  __asm__ volatile(
      "push %%rbx\n\tpush %%rbp\n\tpush %%r12\n\tpush %%r13\n\tpush %%r14\n\tpush %%r15\n\t"
      "mov $0x0101010101010101, %%rax\n\t"
      "mov $0x0202020202020202, %%rbx\n\t"
      "mov $0x0303030303030303, %%rcx\n\t"
      "mov $0x0404040404040404, %%rdx\n\t"
      "mov $0x0505050505050505, %%rsi\n\t"
      "mov $0x0606060606060606, %%rdi\n\t"
      "mov $0x0707070707070707, %%rbp\n\t"
      "mov $0x0808080808080808, %%r8\n\t"
      "mov $0x0909090909090909, %%r9\n\t"
      "mov $0x0a0a0a0a0a0a0a0a, %%r10\n\t"
      "mov $0x0b0b0b0b0b0b0b0b, %%r11\n\t"
      "mov $0x0c0c0c0c0c0c0c0c, %%r12\n\t"
      "mov $0x0d0d0d0d0d0d0d0d, %%r13\n\t"
      "mov $0x0e0e0e0e0e0e0e0e, %%r14\n\t"
      "mov $0x0f0f0f0f0f0f0f0f, %%r15\n\t"
      "ud2\n\t"
      "mov %%rax, regs_after+0(%%rip)\n\t"
      "mov %%rbx, regs_after+8(%%rip)\n\t"
      "mov %%rcx, regs_after+16(%%rip)\n\t"
      "mov %%rdx, regs_after+24(%%rip)\n\t"
      "mov %%rsi, regs_after+32(%%rip)\n\t"
      "mov %%rdi, regs_after+40(%%rip)\n\t"
      "mov %%rbp, regs_after+48(%%rip)\n\t"
      "mov %%r8, regs_after+56(%%rip)\n\t"
      "mov %%r9, regs_after+64(%%rip)\n\t"
      "mov %%r10, regs_after+72(%%rip)\n\t"
      "mov %%r11, regs_after+80(%%rip)\n\t"
      "mov %%r12, regs_after+88(%%rip)\n\t"
      "mov %%r13, regs_after+96(%%rip)\n\t"
      "mov %%r14, regs_after+104(%%rip)\n\t"
      "mov %%r15, regs_after+112(%%rip)\n\t"
      "pop %%r15\n\tpop %%r14\n\tpop %%r13\n\tpop %%r12\n\tpop %%rbp\n\tpop %%rbx"
      :
      :
      : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
  sys_sigprocmask(SIG_SETMASK, &before, &after);
  for (int i = 0; i < REG_COUNT; i++) {
    uint64_t want = 0x0101010101010101ull * (uint64_t)(i + 1);
    if (i == 11) want ^= 0xff; /* r12, changed by the handler through the frame */
    CHECK(regs_after[i] == want, "%s is %#lx after sigreturn, want %#lx", reg_names[i],
          regs_after[i], want);
  }
  CHECK(after == block, "mask after the handler %#llx, want %#llx", (unsigned long long)after,
        (unsigned long long)block);
}

#endif

/* ---- blocking, queueing, flags, nesting -------------------------------------- */

static volatile int count_usr1, count_rt;
static void count_handler(int sig) {
  if (sig == SIGUSR1) count_usr1++;
  else count_rt++;
}

static void test_blocked(void) {
  count_usr1 = count_rt = 0;
  sig_install(SIGUSR1, (void *)count_handler, 0, 0);
  sig_install(SIGRTMIN, (void *)count_handler, 0, 0);
  sigset_t block = sigmask(SIGUSR1) | sigmask(SIGRTMIN), old;
  sys_sigprocmask(SIG_BLOCK, &block, &old);
  const int self = (int)sys_getpid();
  sys_kill(self, SIGUSR1);
  sys_kill(self, SIGUSR1); /* a classic signal is pending once */
  sys_kill(self, SIGRTMIN);
  sys_kill(self, SIGRTMIN); /* a real-time one is queued twice */
  CHECK(count_usr1 == 0 && count_rt == 0, "delivered while blocked (%d, %d)", count_usr1,
        count_rt);
  sys_sigprocmask(SIG_SETMASK, &old, 0);
  CHECK(count_usr1 == 1, "SIGUSR1 delivered %d times on unblock, want 1", count_usr1);
  CHECK(count_rt == 2, "SIGRTMIN delivered %d times on unblock, want 2", count_rt);
}

static char order[16];
static int order_len;
static void note(char c) {
  if (order_len < (int)sizeof(order) - 1) order[order_len++] = c;
  order[order_len] = '\0';
}

static volatile int depth;
static void reentrant_handler(int sig) {
  note('[');
  if (depth++ == 0) sys_kill((int)sys_getpid(), sig);
  note(']');
}

static void test_nodefer(void) {
  /* Without SA_NODEFER the signal is blocked in its handler: the second one runs
   * after the first returns. With it, it nests. */
  order_len = depth = 0;
  sig_install(SIGUSR1, (void *)reentrant_handler, 0, 0);
  sys_kill((int)sys_getpid(), SIGUSR1);
  CHECK(strcmp(order, "[][]") == 0, "without SA_NODEFER: %s, want [][]", order);
  order_len = depth = 0;
  sig_install(SIGUSR1, (void *)reentrant_handler, SA_NODEFER, 0);
  sys_kill((int)sys_getpid(), SIGUSR1);
  CHECK(strcmp(order, "[[]]") == 0, "with SA_NODEFER: %s, want [[]]", order);
}

static void test_resethand(void) {
  count_usr1 = count_rt = 0;
  sig_install(SIGURG, (void *)count_handler, SA_RESETHAND, 0);
  sys_kill((int)sys_getpid(), SIGURG);
  sys_kill((int)sys_getpid(), SIGURG); /* now SIG_DFL, whose action for SIGURG is ignore */
  struct sigaction old;
  sys_sigaction(SIGURG, 0, &old);
  CHECK(count_rt == 1, "the handler ran %d times, want 1", count_rt);
  CHECK(old.sa_handler == (void *)SIG_DFL, "the handler is %p after SA_RESETHAND, want SIG_DFL",
        old.sa_handler);
}

static void outer_handler(int sig) {
  note('(');
  sys_kill((int)sys_getpid(), SIGUSR1); /* a different signal: delivered inside */
  note(')');
}
static void inner_handler(int sig) { note('*'); }

static void test_nested(void) {
  order_len = 0;
  sig_install(SIGUSR2, (void *)outer_handler, 0, 0);
  sig_install(SIGUSR1, (void *)inner_handler, 0, 0);
  sys_kill((int)sys_getpid(), SIGUSR2);
  CHECK(strcmp(order, "(*)") == 0, "order %s, want (*)", order);
}

/* ---- processes: default actions, exit statuses, a bad signal stack ------------ */

static int run_child(const char *args) {
  long pid = sys_spawn(args);
  if (pid < 0) return -1;
  int status = -1;
  long waited = sys_wait((int)pid, &status);
  return waited == pid ? status : -1;
}

static void expect_child(const char *args, int exited, int value) {
  int status = run_child(args);
  int ok = exited ? (WIFEXITED(status) && WEXITSTATUS(status) == value)
                  : (WIFSIGNALED(status) && WTERMSIG(status) == value);
  CHECK(ok, "child '%s' ended with status %#x, want %s %d", args, status,
        exited ? "exit" : "signal", value);
}

static void test_default_actions(void) {
  expect_child("role=exit code=3", 1, 3);
  expect_child("role=kill_self sig=10", 0, SIGUSR1);  /* terminate */
  expect_child("role=kill_self sig=17", 1, 0);        /* SIGCHLD: ignore */
  expect_child("role=ignore_then_kill sig=10", 1, 0); /* SIG_IGN */
  expect_child("role=divide", 0, SIGFPE);             /* a fault with no handler */
  CHECK(sys_wait(-1, 0) == -ECHILD, "a child is left over");
}

static void test_bad_signal_stack(void) {
  /* The frame cannot be written: below the user range, and unmapped inside it. */
  expect_child("role=bad_stack rsp=0x1000", 0, SIGSEGV);
  expect_child("role=bad_stack rsp=0x50001000", 0, SIGSEGV);
}

/* ---- pipes across tasks ------------------------------------------------------- */

static void test_pipe(void) {
  int fds[2];
  CHECK(sys_pipe(fds) == 0, "pipe");
  char args[64];
  format(args, sizeof(args), "role=pipe_writer fd=%d", fds[1]);
  long child = sys_spawn(args);
  sys_close(fds[1]); /* only the child writes now */
  char buf[8] = {0};
  long n = sys_read(fds[0], buf, sizeof(buf)); /* blocks until the child has written */
  CHECK(n == 4 && memcmp(buf, "ping", 4) == 0, "read %ld bytes '%s', want 'ping'", n, buf);
  n = sys_read(fds[0], buf, sizeof(buf));
  CHECK(n == 0, "read %ld after the writer exited, want 0 (EOF)", n);
  int status = -1;
  sys_wait((int)child, &status);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer status %#x", status);
  sys_close(fds[0]);

  CHECK(sys_pipe(fds) == 0, "pipe");
  sys_close(fds[0]);
  sig_install(SIGPIPE, (void *)SIG_IGN, 0, 0);
  n = sys_write(fds[1], "x", 1);
  CHECK(n == -EPIPE, "write with no reader: %ld, want -EPIPE", n);
  sys_close(fds[1]);
}

/* ---- sigsuspend and the mask -------------------------------------------------- */

static void test_sigsuspend(void) {
  count_usr1 = 0;
  sig_install(SIGUSR1, (void *)count_handler, 0, 0);
  sigset_t block = sigmask(SIGUSR1), old, now, wait_mask = 0;
  sys_sigprocmask(SIG_SETMASK, &block, &old);
  sys_kill((int)sys_getpid(), SIGUSR1);
  long ret = sys_sigsuspend(&wait_mask);
  sys_sigprocmask(SIG_SETMASK, &old, &now);
  CHECK(ret == -EINTR && count_usr1 == 1, "sigsuspend returned %ld, %d deliveries", ret,
        count_usr1);
  CHECK(now == block, "mask after sigsuspend %#llx, want %#llx", (unsigned long long)now,
        (unsigned long long)block);
}

static void test_pingpong(void) {
  const struct measure m = {.ops = 1000, .warmup = 1};
  CHECK(workload_sigpingpong(&m) == 0, "ping-pong lost or doubled a signal");
}

/* ---- the workloads' verdict on their handler's runs (workloads.c) ------------- */

static void expect_verdict(unsigned long runs, unsigned long sent, unsigned long injected,
                           int status, const char *want) {
  char line[256];
  const int got = handled_verdict(line, sizeof(line), "w", runs, sent, injected);
  if (got != status || strcmp(line, want) != 0) {
    /* Printed whole: CHECK's line is too short for it. */
    printf("FAIL %s: %lu runs, %lu sent, %lu injected: status %d, line '%s'\n  want %d, '%s'\n",
           test_name, runs, sent, injected, got, line, status, want);
    failures++;
  }
}

static volatile unsigned long verdict_runs;
static void count_run(int sig) { verdict_runs++; }

static void test_verdict(void) {
  expect_verdict(4, 4, 0, 0, "");
  expect_verdict(3, 4, 0, 1, "w: FAIL: the handler ran 3 times for 4 signals sent: 1 lost");
  expect_verdict(3, 4, 2, 1,
                 "w: FAIL: the handler ran 3 times for 4 signals sent and 2 injected by the host: "
                 "1 of the workload's own lost");
  expect_verdict(5, 4, 1, 0,
                 "w: the handler ran 5 times: 4 for the workload's signals, 1 for signals "
                 "injected by the host");
  expect_verdict(5, 4, 3, 0,
                 "w: the handler ran 5 times: 4 for the workload's signals, 1 for the 3 injected "
                 "by the host (2 merged with the same signal already pending, as classic signals "
                 "are)");
  expect_verdict(4, 4, 1, 0,
                 "w: the handler ran 4 times: 4 for the workload's signals, 0 for the 1 injected "
                 "by the host (1 merged with the same signal already pending, as classic signals "
                 "are)");
  expect_verdict(7, 4, 1, 1,
                 "w: FAIL: the handler ran 7 times for 4 signals sent and 1 injected by the host: "
                 "2 extra signals that neither the workload nor the host sent");

  /* A real extra one: SIGUSR1 from another process of the guest, which the host's
   * count does not take for one of its own. */
  sigset_t usr1 = sigmask(SIGUSR1); /* pingpong, before it in "all", leaves it blocked */
  sys_sigprocmask(SIG_UNBLOCK, &usr1, 0);
  sig_install(SIGUSR1, (void *)count_run, 0, 0);
  const long self = sys_getpid();
  const long host = sys_host_signals(SIGUSR1);
  verdict_runs = 0;
  char args[64];
  format(args, sizeof(args), "role=kill peer=%ld sig=%d", self, SIGUSR1);
  const long child = sys_spawn(args);
  int status = -1;
  long waited;
  do {
    waited = sys_wait((int)child, &status); /* the stray signal interrupts it */
  } while (waited == -EINTR);
  CHECK(waited == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the sender ended with %ld, status %#x", waited, status);
  for (int i = 0; i < 4; i++) sys_kill((int)self, SIGUSR1);
  const unsigned long runs = verdict_runs;
  expect_verdict(runs, 4, sys_host_signals(SIGUSR1) - host, 1,
                 "w: FAIL: the handler ran 5 times for 4 signals sent and 0 injected by the host: "
                 "1 extra signal that neither the workload nor the host sent");
  CHECK(sys_host_signals(0) == -EINVAL && sys_host_signals(NSIG + 1) == -EINVAL,
        "host_signals(0) %ld, (NSIG + 1) %ld, want -EINVAL", sys_host_signals(0),
        sys_host_signals(NSIG + 1));
}

/* ---- the children the tests spawn --------------------------------------------- */

int selftest_child(const char *role, const char *args) {
  if (strcmp(role, "exit") == 0) return (int)arg_get_ulong(args, "code", 0);
  if (strcmp(role, "kill_self") == 0) {
    sys_kill((int)sys_getpid(), (int)arg_get_ulong(args, "sig", 0));
    return 0;
  }
  if (strcmp(role, "kill") == 0) {
    return sys_kill((int)arg_get_ulong(args, "peer", 0), (int)arg_get_ulong(args, "sig", 0)) ? 1
                                                                                             : 0;
  }
  if (strcmp(role, "ignore_then_kill") == 0) {
    int sig = (int)arg_get_ulong(args, "sig", 0);
    sig_install(sig, (void *)SIG_IGN, 0, 0);
    sys_kill((int)sys_getpid(), sig);
    return 0;
  }
  if (strcmp(role, "divide") == 0) {
#if defined(__mips__)
    __asm__ volatile("teq $0, $0, 7");
#else
    __asm__ volatile("xor %%edx, %%edx\n\tdivq %0" : : "r"(0ul), "a"(1ul) : "rdx");
#endif
    return 0;
  }
  if (strcmp(role, "bad_stack") == 0) {
    sig_install(SIGILL, (void *)catcher, SA_SIGINFO, 0);
    uint64_t rsp = arg_get_ulong(args, "rsp", 0);
#if defined(__mips__)
    __asm__ volatile("move $sp, %0\n\t.word 0xec000000" : : "r"((uint32_t)rsp) : "memory");
#else
    __asm__ volatile("mov %0, %%rsp\n\tud2" : : "r"(rsp) : "memory");
#endif
    return 0; /* not reached: the frame cannot be written */
  }
  if (strcmp(role, "pipe_writer") == 0) {
    int fd = (int)arg_get_ulong(args, "fd", 99);
    return sys_write(fd, "ping", 4) == 4 ? 0 : 1;
  }
  if (strcmp(role, "pong") == 0) return sigpingpong_child(args);
  if (strcmp(role, "xcpu") == 0) return xcpu_child(args);
  printf("selftest: unknown role '%s'\n", role);
  return 127;
}

struct selftest {
  const char *name;
  void (*run)(void);
};

static const struct selftest tests[] = {
    {"siginfo", test_siginfo},       {"registers", test_registers},
    {"blocked", test_blocked},       {"nodefer", test_nodefer},
    {"resethand", test_resethand},   {"nested", test_nested},
    {"sigsuspend", test_sigsuspend}, {"default_actions", test_default_actions},
    {"bad_signal_stack", test_bad_signal_stack}, {"pipe", test_pipe},
    {"pingpong", test_pingpong},     {"verdict", test_verdict},
#if defined(__mips__)
    {"vdso", test_vdso},
#endif
};

int selftest_main(const char *args) {
  char which[32] = "all";
  arg_get(args, "case", which, sizeof(which));
  int ran = 0;
  for (unsigned i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
    if (strcmp(which, "all") != 0 && strcmp(which, tests[i].name) != 0) continue;
    test_name = tests[i].name;
    int before = failures;
    tests[i].run();
    if (failures == before) printf("PASS %s\n", test_name);
    ran++;
  }
  if (!ran) {
    printf("selftest: no case '%s'\n", which);
    return 127;
  }
  return failures ? 1 : 0;
}
