// Pins the byte layout of the ABI structs. The guest compiles the same header as C
// (and the assembly test guests hard-code some offsets), so a layout change must be
// a deliberate ABI version bump, never an accident of padding.
#include <gtest/gtest.h>

#include <cstddef>

#include "guest-kit/abi/sigvisor_abi.h"

namespace {

TEST(AbiLayoutTest, HypercallArgumentBlocks) {
  EXPECT_EQ(sizeof(sigvisor_hc_console_write), 16u);
  EXPECT_EQ(sizeof(sigvisor_hc_exit), 8u);
  EXPECT_EQ(sizeof(sigvisor_hc_phase_begin), 56u);
  EXPECT_EQ(offsetof(sigvisor_hc_phase_begin, flags), 48u);
  EXPECT_EQ(offsetof(sigvisor_hc_phase_begin, ops), 32u);
  EXPECT_EQ(offsetof(sigvisor_hc_phase_begin, tsc), 40u);
  EXPECT_EQ(sizeof(sigvisor_hc_phase_end), 8u);
  EXPECT_EQ(sizeof(sigvisor_hc_time_report), 48u);
  EXPECT_EQ(sizeof(sigvisor_hc_panic), 32u);
  EXPECT_EQ(offsetof(sigvisor_hc_phase_begin, op_syscall_plus1), 52u);
  EXPECT_EQ(sizeof(sigvisor_hc_event), 32u);
  EXPECT_EQ(offsetof(sigvisor_hc_event, addr), 16u);
  EXPECT_EQ(sizeof(sigvisor_hc_orders), 16u);  // ABI 5
  EXPECT_EQ(offsetof(sigvisor_hc_orders, buf_gpa), 0u);
  EXPECT_EQ(offsetof(sigvisor_hc_orders, buf_len), 8u);
  EXPECT_EQ(offsetof(sigvisor_hc_orders, len), 12u);
  EXPECT_EQ(SIGVISOR_ORDERS_NONE, 0xffffffffu);
}

// ABI 6: signal=pv's two calls (the kernel fills them field by field in C).
TEST(AbiLayoutTest, SignalFrameCalls) {
  EXPECT_EQ(sizeof(sigvisor_hc_signal_frame), 88u);
  EXPECT_EQ(offsetof(sigvisor_hc_signal_frame, signo), 72u);
  EXPECT_EQ(offsetof(sigvisor_hc_signal_frame, result), 80u);
  EXPECT_EQ(sizeof(sigvisor_hc_sigreturn), 40u);
  EXPECT_EQ(offsetof(sigvisor_hc_sigreturn, mask), 16u);
  EXPECT_EQ(offsetof(sigvisor_hc_sigreturn, result), 28u);
  EXPECT_LT(SIGVISOR_HC_SIGRETURN, 16u);  // the PC's hypercall port block
  EXPECT_EQ(SIGVISOR_SIGNAL_PV_DONE, 0);
}

// SMP: the AP start and the paravirtual IPI.
TEST(AbiLayoutTest, SmpCalls) {
  EXPECT_EQ(sizeof(sigvisor_hc_cpu_up), 32u);
  EXPECT_EQ(offsetof(sigvisor_hc_cpu_up, cpu), 0u);
  EXPECT_EQ(offsetof(sigvisor_hc_cpu_up, reserved), 4u);
  EXPECT_EQ(offsetof(sigvisor_hc_cpu_up, rip), 8u);
  EXPECT_EQ(offsetof(sigvisor_hc_cpu_up, rsp), 16u);
  EXPECT_EQ(offsetof(sigvisor_hc_cpu_up, arg), 24u);
  EXPECT_EQ(sizeof(sigvisor_hc_send_ipi), 16u);
  EXPECT_EQ(offsetof(sigvisor_hc_send_ipi, cpu_mask), 0u);
  EXPECT_EQ(offsetof(sigvisor_hc_send_ipi, vector), 8u);
  EXPECT_EQ(offsetof(sigvisor_hc_send_ipi, reserved), 12u);
  // One mask bit per CPU, APIC IDs within an 8-bit xAPIC destination.
  EXPECT_LE(SIGVISOR_MAX_CPUS, 64u);
  EXPECT_LT(SIGVISOR_MAX_CPUS, 256u);
  EXPECT_EQ(SIGVISOR_IPI_VECTOR_MIN, 0x20u);
  EXPECT_EQ(SIGVISOR_XAPIC_GPA, 0xfee00000u);
  EXPECT_EQ(SIGVISOR_NOTE_TYPE_SMP, 2u);
  EXPECT_NE(SIGVISOR_NOTE_TYPE_SMP, SIGVISOR_NOTE_TYPE_ABI);
}

TEST(AbiLayoutTest, HostMailbox) {
  EXPECT_EQ(sizeof(sigvisor_host_mailbox), 16u);
  // The mailbox shares the boot-info page, after the boot info.
  EXPECT_GE(SIGVISOR_HOST_MAILBOX_GPA, SIGVISOR_BOOT_INFO_GPA + sizeof(sigvisor_boot_info));
  EXPECT_LE(SIGVISOR_HOST_MAILBOX_GPA + sizeof(sigvisor_host_mailbox), 0x8000u);
}

TEST(AbiLayoutTest, BootInfo) {
  EXPECT_EQ(offsetof(sigvisor_boot_info, magic), 0u);
  EXPECT_EQ(offsetof(sigvisor_boot_info, abi_version), 4u);
  EXPECT_EQ(offsetof(sigvisor_boot_info, mem_bytes), 8u);
  EXPECT_EQ(offsetof(sigvisor_boot_info, free_gpa), 16u);
  EXPECT_EQ(offsetof(sigvisor_boot_info, tsc_khz), 24u);
  EXPECT_EQ(offsetof(sigvisor_boot_info, flags), 32u);
  EXPECT_EQ(offsetof(sigvisor_boot_info, vdso_gpa), 36u);  // the former `reserved` word
  EXPECT_EQ(offsetof(sigvisor_boot_info, cmdline), 40u);  // tests/guests/exit_with.S
  EXPECT_EQ(offsetof(sigvisor_boot_info, pv_page_gpa), 40u + SIGVISOR_CMDLINE_MAX);  // ABI 4
  // SMP: after pv_page_gpa, so that every field before keeps its offset.
  EXPECT_EQ(offsetof(sigvisor_boot_info, cpus), 48u + SIGVISOR_CMDLINE_MAX);
  EXPECT_EQ(offsetof(sigvisor_boot_info, ipi), 52u + SIGVISOR_CMDLINE_MAX);
  EXPECT_EQ(sizeof(sigvisor_boot_info), 56u + SIGVISOR_CMDLINE_MAX);
  // The boot info page must fit below the image area with the boot tables.
  EXPECT_LE(SIGVISOR_BOOT_INFO_GPA + sizeof(sigvisor_boot_info), 0x8000u);
}

// The assembly test guests address the pv page by these offsets.
TEST(AbiLayoutTest, PvPage) {
  EXPECT_EQ(offsetof(sigvisor_pv_page, dr), SIGVISOR_PV_OFF_DR);
  EXPECT_EQ(offsetof(sigvisor_pv_page, dr_writes), SIGVISOR_PV_OFF_DR_WRITES);
  EXPECT_EQ(offsetof(sigvisor_pv_page, loaded), SIGVISOR_PV_OFF_LOADED);
  EXPECT_EQ(offsetof(sigvisor_pv_page, seg_base_writes), SIGVISOR_PV_OFF_SEG_BASE_WRITES);
  EXPECT_EQ(offsetof(sigvisor_pv_page, sites), SIGVISOR_PV_OFF_SITES);
  EXPECT_EQ(sizeof(sigvisor_pv_site), SIGVISOR_PV_SITE_BYTES);
  EXPECT_EQ(offsetof(sigvisor_pv_site, kind), 8u);
  EXPECT_EQ(offsetof(sigvisor_pv_site, count), 16u);
  EXPECT_LE(sizeof(sigvisor_pv_page), SIGVISOR_PV_PAGE_BYTES);
}

TEST(AbiLayoutTest, VdsoTrampolineIsLiV0Syscall) {
  // `li v0, 15; syscall` as the MIPS assembler encodes it (objdump of vdso.S).
  EXPECT_EQ(SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN0, 0x2402000fu);
  EXPECT_EQ(SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN1, 0x0000000cu);
  EXPECT_EQ(SIGVISOR_VDSO_RT_SIGRETURN_OFFSET % 4, 0u);
  EXPECT_LE(SIGVISOR_VDSO_RT_SIGRETURN_OFFSET + 8, SIGVISOR_VDSO_PAGE_BYTES);
}

TEST(AbiLayoutTest, NumbersAreDistinctAndPortsFit) {
  EXPECT_EQ(SIGVISOR_HC_CONSOLE_WRITE, 1);
  EXPECT_EQ(SIGVISOR_HC_PANIC, 6);
  EXPECT_EQ(SIGVISOR_HC_EVENT, 7);
  EXPECT_EQ(SIGVISOR_HC_PV_DEBUGREG_LOAD, 8);
  EXPECT_EQ(SIGVISOR_HC_ORDERS, 9);
  EXPECT_EQ(SIGVISOR_HC_SIGNAL_FRAME, 10);
  EXPECT_EQ(SIGVISOR_HC_SIGRETURN, 11);
  EXPECT_EQ(SIGVISOR_HC_CPU_UP, 12);
  EXPECT_EQ(SIGVISOR_HC_SEND_IPI, 13);
  EXPECT_EQ(SIGVISOR_HC_COUNT, 14);
  // The last call's 4-byte access must fit the PC's hypercall port block, and the calls
  // QEMU may see (below the SMP ones) must end before its fw_cfg at 0x510.
  EXPECT_LE(SIGVISOR_HC_COUNT - 1 + 4, SIGVISOR_HC_PORTS);
  EXPECT_LE(SIGVISOR_HC_PORT_BASE + SIGVISOR_HC_CPU_UP - 1 + 4, 0x510u);
  EXPECT_LT(SIGVISOR_HC_PORT_BASE + SIGVISOR_HC_COUNT, 0x10000u);
  EXPECT_EQ(SIGVISOR_SEL_USER_DS, 0x2bu);  // the host's selectors, as PVM requires
  EXPECT_EQ(SIGVISOR_SEL_USER_CS, 0x33u);
}

}  // namespace

// The Linux marker port (ABI "The Linux marker protocol"): one 4-byte access that
// overlaps neither the hypercall block nor fw_cfg, and whose command words keep the
// magic half clear.
TEST(AbiLayoutTest, LinuxMarkerPort) {
  constexpr uint32_t kHypercallEnd = SIGVISOR_HC_PORT_BASE + SIGVISOR_HC_PORTS;
  constexpr uint32_t kFwCfgBase = 0x510, kFwCfgEnd = 0x51c;
  EXPECT_GE(SIGVISOR_LINUX_MARKER_PORT, kHypercallEnd);
  EXPECT_TRUE(SIGVISOR_LINUX_MARKER_PORT >= kFwCfgEnd ||
              SIGVISOR_LINUX_MARKER_PORT + SIGVISOR_LINUX_MARKER_PORTS <= kFwCfgBase);
  EXPECT_EQ(SIGVISOR_LINUX_MARKER_PORTS, 4u);
  EXPECT_GT(SIGVISOR_LINUX_MARKER_PORT, 0xffu);  // DX form: dx holds the port, not an argument
  EXPECT_EQ(SIGVISOR_LINUX_MARKER_MAGIC & ~SIGVISOR_LINUX_MARKER_MAGIC_MASK, 0u);
  for (uint32_t command : {SIGVISOR_LINUX_MARKER_PHASE_BEGIN, SIGVISOR_LINUX_MARKER_PHASE_END,
                           SIGVISOR_LINUX_MARKER_EXIT}) {
    EXPECT_EQ(command & SIGVISOR_LINUX_MARKER_MAGIC_MASK, 0u);
  }
  EXPECT_EQ(SIGVISOR_PHASE_NAME_MAX, 4u * 8u);  // four registers carry the name
}
