/*
 * GDT, TSS and IDT.
 *
 * The GDT has Linux x86-64's layout because a PVM host runs CPL3 code on its own GDT:
 * user selectors must be exactly the host's 0x2b (data) and 0x33 (64-bit code).
 * Only the vectors the kernel handles get gates, which keeps boot short where CPL0 is
 * emulated (each IDT entry costs a handful of microseconds there).
 */
#include "arch/x86_64/guest/cpu.h"

#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"

#if CONFIG_SMP
#include "arch/x86_64/guest/apic.h"
#include "arch/x86_64/guest/percpu.h"
#endif

struct tss64 {
  uint32_t reserved0;
  uint64_t rsp[3];
  uint64_t reserved1;
  uint64_t ist[7];
  uint64_t reserved2;
  uint16_t reserved3;
  uint16_t iomap_base;
} __attribute__((packed));

struct idt_gate {
  uint16_t offset_low;
  uint16_t selector;
  uint8_t ist;
  uint8_t type_attr;
  uint16_t offset_mid;
  uint32_t offset_high;
  uint32_t reserved;
} __attribute__((packed));

struct table_pointer {
  uint16_t limit;
  uint64_t base;
} __attribute__((packed));

#define GDT_ENTRIES 10 /* up to and including the 16-byte TSS descriptor at 0x40 */
#define IDT_ENTRIES 256
#define GATE_INTERRUPT_DPL0 0x8e
#define GATE_INTERRUPT_DPL3 0xee
#define SYSCALL_VECTOR 0x80
#define FIRST_UNHANDLED_EXCEPTION 22 /* stubs exist for vectors 0..21 */
#define STUB_SIZE 16

static uint64_t gdt[GDT_ENTRIES] __attribute__((aligned(16))) = {
    [SIGVISOR_SEL_KERNEL_CS32 >> 3] = 0x00cf9b000000ffffull,
    [SIGVISOR_SEL_KERNEL_CS >> 3] = 0x00af9b000000ffffull,
    [SIGVISOR_SEL_KERNEL_DS >> 3] = 0x00cf93000000ffffull,
    [SIGVISOR_SEL_USER_CS32 >> 3] = 0x00cffb000000ffffull,
    [SIGVISOR_SEL_USER_DS >> 3] = 0x00cff3000000ffffull,
    [SIGVISOR_SEL_USER_CS >> 3] = 0x00affb000000ffffull,
    /* the TSS descriptor is filled in at run time: its base is an address */
};

static struct tss64 tss __attribute__((aligned(16)));

/* A double fault runs on its own stack (IST1): when the kernel stack itself is the
 * problem, the #DF handler can still report it instead of the CPU triple-faulting. */
#define DOUBLE_FAULT_VECTOR 8
#define DOUBLE_FAULT_IST 1
static uint8_t double_fault_stack[4096] __attribute__((aligned(16)));
/* A gate, or the two quadwords the CPU reads of it (cpu_init copies gates by those). */
union idt_entry {
  struct idt_gate gate;
  uint64_t words[2];
};
static union idt_entry idt[IDT_ENTRIES] __attribute__((aligned(16)));

extern char x86_vector_stubs[];
extern char x86_syscall_stub[];
extern char x86_host_request_stub[];
#if CONFIG_SMP
extern char x86_reschedule_stub[];
extern char x86_spurious_stub[];
#endif

static void set_gate(int vector, const void *handler, uint8_t type_attr, uint8_t ist) {
  uint64_t addr = (uint64_t)handler;
  struct idt_gate *gate = &idt[vector].gate;
  gate->offset_low = (uint16_t)addr;
  gate->selector = SIGVISOR_SEL_KERNEL_CS;
  gate->ist = ist;
  gate->type_attr = type_attr;
  gate->offset_mid = (uint16_t)(addr >> 16);
  gate->offset_high = (uint32_t)(addr >> 32);
}

static void install_tss_descriptor(void) {
  uint64_t base = (uint64_t)&tss;
  uint64_t limit = sizeof(tss) - 1;
  int index = SIGVISOR_SEL_TSS >> 3;
  gdt[index] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
               (((base >> 24) & 0xff) << 56);
  gdt[index + 1] = base >> 32;
  tss.iomap_base = sizeof(tss); /* no I/O permission bitmap */
}

void cpu_init(void) {
  install_tss_descriptor();
  struct table_pointer gdtr = {sizeof(gdt) - 1, (uint64_t)gdt};
  __asm__ volatile(
      "lgdt %0\n\t"
      "mov %1, %%ds\n\t"
      "mov %1, %%es\n\t"
      "mov %1, %%ss\n\t"
      "pushq %2\n\t"
      "lea 1f(%%rip), %%rax\n\t"
      "pushq %%rax\n\t"
      "lretq\n"
      "1:\n\t"
      "ltr %w3"
      :
      : "m"(gdtr), "r"(SIGVISOR_SEL_KERNEL_DS), "i"(SIGVISOR_SEL_KERNEL_CS),
        "r"(SIGVISOR_SEL_TSS)
      : "rax", "memory");

  tss.ist[DOUBLE_FAULT_IST - 1] = (uint64_t)(double_fault_stack + sizeof(double_fault_stack));
  /* Boot time: the exception stubs are 16 bytes apart in one block that entry.S
   * aligns so that it never crosses a 64 KiB boundary, so their gates differ only in
   * offset_low, by STUB_SIZE each. One gate is made and the rest copied from it with
   * an add: 6 instructions a gate instead of set_gate's 13 (cpu_init 385 -> 198), each
   * about a microsecond where CPL0 is emulated. Then the two gates that differ are
   * edited. */
  set_gate(0, x86_vector_stubs, GATE_INTERRUPT_DPL0, 0);
  uint64_t low_word = idt[0].words[0]; /* offset_low is its low 16 bits */
  for (int vector = 1; vector < FIRST_UNHANDLED_EXCEPTION; vector++) {
    low_word += STUB_SIZE;
    idt[vector].words[0] = low_word;
    idt[vector].words[1] = idt[0].words[1];
  }
  idt[DOUBLE_FAULT_VECTOR].gate.ist = DOUBLE_FAULT_IST;
  /* #BP and int $0x80 may be raised from user mode. */
  idt[3].gate.type_attr = GATE_INTERRUPT_DPL3;
  set_gate(SYSCALL_VECTOR, x86_syscall_stub, GATE_INTERRUPT_DPL3, 0);
  /* Raised by the VMM (KVM_INTERRUPT) only: user code cannot `int` it (DPL0). */
  set_gate(SIGVISOR_HOST_REQUEST_VECTOR, x86_host_request_stub, GATE_INTERRUPT_DPL0, 0);
#if CONFIG_SMP
  /* The reschedule IPI (DPL0: only another CPU's APIC raises it) and the APICs'
   * spurious vector. The IDT is every CPU's. */
  set_gate(RESCHEDULE_VECTOR, x86_reschedule_stub, GATE_INTERRUPT_DPL0, 0);
  set_gate(SPURIOUS_APIC_VECTOR, x86_spurious_stub, GATE_INTERRUPT_DPL0, 0);
  boot_cpu_data.tss = &tss;
#endif
  struct table_pointer idtr = {sizeof(idt) - 1, (uint64_t)idt};
  __asm__ volatile("lidt %0" : : "m"(idtr));
}

#if CONFIG_SMP
/* smp=on: each CPU's TSS.RSP0, through its per-CPU data. */
void cpu_set_kernel_stack(uint64_t rsp0) { ((struct tss64 *)this_cpu_read(tss))->rsp[0] = rsp0; }

/* An AP's own copy of the GDT (its TSS descriptor is its own: `ltr` marks it busy),
 * its TSS and double-fault stack (cpu 0 has the statics above). */
static uint64_t ap_gdt[SIGVISOR_MAX_CPUS][GDT_ENTRIES] __attribute__((aligned(16)));
static struct tss64 ap_tss[SIGVISOR_MAX_CPUS] __attribute__((aligned(16)));
static uint8_t ap_double_fault_stack[SIGVISOR_MAX_CPUS][4096] __attribute__((aligned(16)));

void cpu_init_ap(int cpu) {
  uint64_t *table = ap_gdt[cpu];
  struct tss64 *own = &ap_tss[cpu];
  for (int i = 0; i < GDT_ENTRIES; i++) table[i] = gdt[i];
  const uint64_t base = (uint64_t)own;
  const uint64_t limit = sizeof(*own) - 1;
  const int index = SIGVISOR_SEL_TSS >> 3;
  table[index] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ull << 40) |
                 (((base >> 24) & 0xff) << 56);
  table[index + 1] = base >> 32;
  own->iomap_base = sizeof(*own);
  own->ist[DOUBLE_FAULT_IST - 1] =
      (uint64_t)(ap_double_fault_stack[cpu] + sizeof(ap_double_fault_stack[cpu]));
  cpu_data[cpu].tss = own;
  struct table_pointer gdtr = {sizeof(gdt) - 1, (uint64_t)table};
  struct table_pointer idtr = {sizeof(idt) - 1, (uint64_t)idt};
  __asm__ volatile(
      "lgdt %0\n\t"
      "mov %2, %%ds\n\t"
      "mov %2, %%es\n\t"
      "mov %2, %%ss\n\t"
      "pushq %3\n\t"
      "lea 1f(%%rip), %%rax\n\t"
      "pushq %%rax\n\t"
      "lretq\n"
      "1:\n\t"
      "ltr %w4\n\t"
      "lidt %1"
      :
      : "m"(gdtr), "m"(idtr), "r"(SIGVISOR_SEL_KERNEL_DS), "i"(SIGVISOR_SEL_KERNEL_CS),
        "r"(SIGVISOR_SEL_TSS)
      : "rax", "memory");
}
#else
void cpu_set_kernel_stack(uint64_t rsp0) { tss.rsp[0] = rsp0; }
#endif
