/* Where the vdso page sits in every process, and what it holds (vdso.S). */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_VDSO_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_VDSO_H_

/* The last user page (USER_TOP - 4 KiB), above the stack. */
#define MIPS_VDSO_BASE 0x7ffff000u
#define VDSO_RT_SIGRETURN_OFFSET 0

/* The trampoline's two instructions: `li v0, SYS_rt_sigreturn` (addiu v0, zero, n)
 * and `syscall`. */
#define INSN_LI_V0(n) (0x24020000u | (n))
#define INSN_SYSCALL 0x0000000cu

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_VDSO_H_ */
