/* MIPS32r2 CP0 registers and bits the guest kernel uses (docs/mips-platform.md). */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_MIPSREGS_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_MIPSREGS_H_

/* CP0 register numbers (select 0 unless noted). */
#define CP0_INDEX 0
#define CP0_ENTRYLO0 2
#define CP0_ENTRYLO1 3
#define CP0_PAGEMASK 5
#define CP0_WIRED 6
#define CP0_HWRENA 7
#define CP0_BADVADDR 8
#define CP0_COUNT 9
#define CP0_ENTRYHI 10
#define CP0_STATUS 12
#define CP0_CAUSE 13
#define CP0_EPC 14
#define CP0_EBASE 15 /* select 1 */
#define CP0_CONFIG 16 /* select 1: Config1 */

/* Status */
#define ST0_IE 0x00000001
#define ST0_EXL 0x00000002
#define ST0_ERL 0x00000004
#define ST0_KSU_USER 0x00000010
#define ST0_IM2 0x00000400 /* hardware interrupt 0: the IPI device */
#define ST0_BEV 0x00400000
#define ST0_CU0 0x10000000

/* Cause */
#define CAUSE_EXCCODE(cause) (((cause) >> 2) & 0x1f)
#define CAUSE_IP2 0x00000400
#define CAUSE_CE(cause) (((cause) >> 28) & 3)
#define CAUSE_BD 0x80000000u

/* Exception codes */
#define EXC_INT 0
#define EXC_MOD 1
#define EXC_TLBL 2
#define EXC_TLBS 3
#define EXC_ADEL 4
#define EXC_ADES 5
#define EXC_IBE 6
#define EXC_DBE 7
#define EXC_SYS 8
#define EXC_BP 9
#define EXC_RI 10
#define EXC_CPU 11
#define EXC_OV 12
#define EXC_TR 13

/* EntryLo / page-table entry bits (the PTE is the EntryLo value). */
#define ENTRYLO_G 0x01
#define ENTRYLO_V 0x02
#define ENTRYLO_D 0x04
#define ENTRYLO_CACHED (3 << 3) /* cacheable, noncoherent, write-back */
#define ENTRYLO_PFN_SHIFT 6

#ifndef __ASSEMBLER__
#include <stdint.h>

#define __read_c0(reg, sel)                                                      \
  ({                                                                             \
    uint32_t __v;                                                                \
    __asm__ volatile("mfc0 %0, $%1, %2" : "=r"(__v) : "i"(reg), "i"(sel));        \
    __v;                                                                         \
  })
#define __write_c0(reg, sel, value)                                              \
  __asm__ volatile("mtc0 %z0, $%1, %2\n\tehb"                                    \
                   :                                                             \
                   : "Jr"((uint32_t)(value)), "i"(reg), "i"(sel)                 \
                   : "memory")

#define read_c0_status() __read_c0(CP0_STATUS, 0)
#define write_c0_status(v) __write_c0(CP0_STATUS, 0, v)
#define read_c0_count() __read_c0(CP0_COUNT, 0)
#define read_c0_ebase() __read_c0(CP0_EBASE, 1)
#define read_c0_config1() __read_c0(CP0_CONFIG, 1)
#define write_c0_entryhi(v) __write_c0(CP0_ENTRYHI, 0, v)
#define write_c0_entrylo0(v) __write_c0(CP0_ENTRYLO0, 0, v)
#define write_c0_entrylo1(v) __write_c0(CP0_ENTRYLO1, 0, v)
#define write_c0_index(v) __write_c0(CP0_INDEX, 0, v)
#define write_c0_pagemask(v) __write_c0(CP0_PAGEMASK, 0, v)
#define write_c0_wired(v) __write_c0(CP0_WIRED, 0, v)
#define write_c0_hwrena(v) __write_c0(CP0_HWRENA, 0, v)

static inline void tlb_write_indexed(void) { __asm__ volatile("tlbwi\n\tehb" : : : "memory"); }

/* The boot core's number is 0; EBase.CPUNum is the core's number. */
static inline unsigned smp_processor_id(void) { return read_c0_ebase() & 0x3ff; }

static inline __attribute__((noreturn)) void halt_forever(void) {
  write_c0_status(ST0_CU0); /* interrupts off: `wait` then never returns */
  for (;;) __asm__ volatile("wait");
}
#endif

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_MIPSREGS_H_ */
