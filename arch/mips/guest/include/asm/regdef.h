/* o32 register names for assembly (Linux's asm/regdef.h). */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_REGDEF_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_REGDEF_H_

#define zero $0
#define AT $1
#define v0 $2
#define v1 $3
#define a0 $4
#define a1 $5
#define a2 $6
#define a3 $7
#define t0 $8
#define t1 $9
#define t2 $10
#define t3 $11
#define s0 $16
#define s1 $17
#define s2 $18
#define s3 $19
#define s4 $20
#define s5 $21
#define s6 $22
#define s7 $23
#define t9 $25
#define k0 $26
#define k1 $27
#define gp $28
#define sp $29
#define s8 $30
#define ra $31

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_REGDEF_H_ */
