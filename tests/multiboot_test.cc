// Multiboot v1 kernels under `sigvisor run`, booted the way `qemu-system-x86_64
// -kernel` boots them: console, exit status ((v << 1) | 1 through isa-debug-exit)
// and exact VM-exit counts, for an ELF32 kernel, 32-bit entry code in an ELF64
// container and a flat binary loaded by its header's address fields; clear refusals
// and reports for what sigvisor does not provide.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli_test_support.h"

namespace sigvisor::testing {
namespace {

constexpr char kGuests[] = "tests/guests/multiboot/";
constexpr char kModule[] = "tests/guests/multiboot/mod.txt";
// What mb32.S writes with one `rep outsb`.
constexpr char kRepString[] = "rep outsb: string I/O from one instruction\n";

std::string Kernel(const std::string& name) { return std::string(kGuests) + name; }

// The count of each exit detail ("port 0x3fd in (serial)" -> n).
std::map<std::string, int> ExitDetails(const nlohmann::json& doc) {
  std::map<std::string, int> counts;
  for (const nlohmann::json& row : doc["exits"]["by_detail"]) {
    counts[row["detail"].get<std::string>()] += row["count"].get<int>();
  }
  return counts;
}

TEST(MultibootTest, Elf32KernelSeesInfoModulesAndDevices) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const std::string two = TempPath("second-module.txt");
  std::ofstream(two) << "second\n";
  CommandResult r = Sigvisor("run --image " + Kernel("mb32") +
                             " --cmdline 'a=1 b=2' --module '" + std::string(kModule) +
                             "=mod.txt x=y' --module " + two + " --json");
  ASSERT_EQ(r.status, 67) << r.err;  // (0x21 << 1) | 1, as QEMU gives it
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["outcome"], "exited");
  EXPECT_EQ(doc["exit_code"], 67);
  const std::string console = doc["console"];
  EXPECT_EQ(console,
            "mb32: hello from a Multiboot ELF32 kernel\n"
            "mem_lower=639 mem_upper=31744\n"
            "cmdline:a=1 b=2\n"
            "mods_count=2\n"
            "module 'mod.txt x=y': hello-module\n"
            "module '" + two + "': second\n"
            "fw_cfg signature=QEMU cpus=1 ram_mib=32\n"
            "pci 00:1f.7 id=ffffffff\n"
            "rep outsb: string I/O from one instruction\n"
            "mb32: bye\n");

  // Exact exits: every byte putc writes polls LSR once and writes THR once; the
  // divisor-latch byte is one more THR-port write that is not output; the rep outsb
  // string is written without polling.
  const int putc_bytes = static_cast<int>(console.size() - std::string(kRepString).size());
  std::map<std::string, int> details = ExitDetails(doc);
  EXPECT_EQ(details["port 0x3fd in (serial)"], putc_bytes);
  EXPECT_EQ(details["port 0x3f8 out (serial)"], static_cast<int>(console.size()) + 1);
  EXPECT_EQ(details["port 0x3f9 out (serial)"], 2);  // IER, then DLM under DLAB
  EXPECT_EQ(details["port 0x3fb out (serial)"], 2);  // LCR: DLAB on, 8N1
  EXPECT_EQ(details["port 0x510 out (fw_cfg selector)"], 3);
  EXPECT_EQ(details["port 0x511 in (fw_cfg data)"], 12);  // 4 + 4 + 4 bytes
  EXPECT_EQ(details["port 0x21 out (pic)"], 1);
  EXPECT_EQ(details["port 0xa1 out (pic)"], 1);
  EXPECT_EQ(details["port 0xcf8 out (pci-config address)"], 1);
  EXPECT_EQ(details["port 0xcfc in (pci-config data)"], 1);
  EXPECT_EQ(details["port 0xf4 out (debug-exit)"], 1);
  int sum = 0;
  for (const auto& [detail, count] : details) sum += count;
  EXPECT_EQ(doc["exits"]["total"].get<int>(), sum);
  EXPECT_EQ(sum, 2 * putc_bytes + static_cast<int>(std::string(kRepString).size()) + 1 + 2 +
                     2 + 3 + 12 + 2 + 2 + 1);
  EXPECT_EQ(doc["exits"]["by_reason"]["io"]["count"].get<int>(), sum);
  // A Multiboot kernel makes no hypercall: there is no boot span to the first one.
  EXPECT_TRUE(doc["timing"]["boot_ns"].is_null()) << doc["timing"];
  EXPECT_TRUE(doc["timing"]["boot_kvm_stats"].is_null()) << doc["timing"];
}

TEST(MultibootTest, TheReportGivesNoBootTimeToAKernelWithoutHypercalls) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb32") + " --quiet");
  ASSERT_EQ(r.status, 67) << r.err;
  EXPECT_EQ(r.out.find("first hypercall"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" boot "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("VM create"), std::string::npos) << r.out;  // the rest of the line stays
}

TEST(MultibootTest, MemorySizeFollowsMemoryFlag) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb32") + " --memory 64");
  ASSERT_EQ(r.status, 67) << r.err;
  EXPECT_NE(r.out.find("mem_lower=639 mem_upper=64512\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ram_mib=64\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mods_count=0\n"), std::string::npos) << r.out;
}

TEST(MultibootTest, Elf64ContainerEntersLongModeItself) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb64") + " --json");
  // (0x42 << 1) | 1 = 133, above the 122 a status passes through as (`sigvisor help`)
  ASSERT_EQ(r.status, 123) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["exit_code"], 133);
  EXPECT_EQ(doc["console"],
            "mb64: hello from 32-bit code in an ELF64 container\n"
            "mb64: in long mode\n"
            "mb64: paging on, bye\n");
}

TEST(MultibootTest, FlatBinaryLoadsByItsAddressFields) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb_aout") + " --json");
  ASSERT_EQ(r.status, 35) << r.err;  // (0x11 << 1) | 1
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["console"],
            "mb_aout: hello from a flat binary loaded by its address fields\n"
            "mb_aout: bss zeroed, bye\n");
}

TEST(MultibootTest, AbsentDeviceEndsTheRunWithPortRipAndBytes) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb_nodev") + " --quiet");
  EXPECT_EQ(r.status, 124) << r.err;  // the guest failed
  EXPECT_NE(r.err.find("bad_device_access"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("port read at 0x64"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("absent_port_read"), std::string::npos) << r.err;  // ELF32 symbols
  EXPECT_NE(r.err.find("bytes e4 64"), std::string::npos) << r.err;       // in $0x64, %al
}

TEST(MultibootTest, InKernelLapicWithIrqchip) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r =
      Sigvisor("run --image " + Kernel("mb_lapic") + " --irqchip --timeout 30s --json");
  // (0x40 << 1) | 1 = 129: the timer interrupt arrived; above 122, so sigvisor says 123
  ASSERT_EQ(r.status, 123) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["exit_code"], 129);
  const std::string console = doc["console"];
  EXPECT_EQ(console,
            "mb_lapic: reading the LAPIC\n"
            "lapic version=00000014\n"
            "mb_lapic: the LAPIC timer interrupt arrived\n");
  // LAPIC MMIO, the PIC mask writes and the halt stay in KVM: the VMM sees only the
  // serial port (divisor programming, LSR polls) and the exit.
  std::map<std::string, int> details = ExitDetails(doc);
  EXPECT_EQ(details.size(), 5u) << doc["exits"].dump();
  EXPECT_EQ(details["port 0x3fd in (serial)"], static_cast<int>(console.size()));
  EXPECT_EQ(details["port 0x3f8 out (serial)"], static_cast<int>(console.size()) + 1);
  EXPECT_EQ(details["port 0xf4 out (debug-exit)"], 1);
  EXPECT_EQ(doc["exits"]["total"].get<int>(), 2 * static_cast<int>(console.size()) + 1 + 4 + 1);
}

TEST(MultibootTest, LapicWithoutIrqchipIsReportedNotHung) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb_lapic") + " --quiet --timeout 30s");
  EXPECT_EQ(r.status, 124) << r.err;  // the guest failed
  EXPECT_NE(r.err.find("MMIO read at 0xfee00030"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lapic_version_read"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bytes a1 30 00 e0 fe"), std::string::npos) << r.err;
}

// mb_pcdev.S: QEMU's pc-testdev on the Multiboot board with --irqchip, as
// `qemu -device pc-testdev` gives it: its latch, byte latch and page flush at their
// ports, its 64 KiB of memory, and an IRQ line that reaches the guest through KVM's
// PIC. Each access is one exit to its device; the PIC's ports stay in KVM.
TEST(MultibootTest, PcTestdevWithIrqchip) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r =
      Sigvisor("run --image " + Kernel("mb_pcdev") + " --irqchip --timeout 60s --json");
  ASSERT_EQ(r.status, 99) << r.err;  // (0x31 << 1) | 1: the interrupt arrived
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["console"],
            "mb_pcdev: pc-testdev\n"
            "latch: outl 12345678 to 0xe0, inl=12345678\n"
            "latch: outb ab to 0xe2, inl=12ab5678\n"
            "byte latch: inb 0xe8..0xeb=78 56 ab 12; inl 0xe8=12ab5678\n"
            "flush: page address written to 0xe4, page word=600dcafe\n"
            "mmio: ff000000=dead5aef ff00fffc=0badf00d\n"
            "irq: raising line 5 (vector 0x25)\n"
            "irq: the interrupt arrived, count=1\n"
            "mb_pcdev: bye\n");
  std::map<std::string, int> details = ExitDetails(doc);
  EXPECT_EQ(details["port 0xe0 out (pc-testdev latch)"], 1);
  EXPECT_EQ(details["port 0xe2 out (pc-testdev latch)"], 1);
  EXPECT_EQ(details["port 0xe0 in (pc-testdev latch)"], 2);
  EXPECT_EQ(details["port 0xe4 out (pc-testdev flush page)"], 1);
  EXPECT_EQ(details["port 0xe8 in (pc-testdev byte latch)"], 2);  // inb, then inl
  EXPECT_EQ(details["port 0xe9 in (pc-testdev byte latch)"], 1);
  EXPECT_EQ(details["port 0xea in (pc-testdev byte latch)"], 1);
  EXPECT_EQ(details["port 0xeb in (pc-testdev byte latch)"], 1);
  EXPECT_EQ(details["mmio 0xff000000 write (pc-testdev memory)"], 1);
  EXPECT_EQ(details["mmio 0xff000001 write (pc-testdev memory)"], 1);
  EXPECT_EQ(details["mmio 0xff00fffc write (pc-testdev memory)"], 1);
  EXPECT_EQ(details["mmio 0xff000000 read (pc-testdev memory)"], 1);
  EXPECT_EQ(details["mmio 0xff00fffc read (pc-testdev memory)"], 1);
  EXPECT_EQ(details["port 0x2005 out (pc-testdev irq line)"], 2);  // up, then down
  for (const auto& [detail, count] : details) {
    EXPECT_EQ(detail.find("(pic)"), std::string::npos) << detail << ": KVM's PIC has it";
  }
}

// mb_pit.S: the CMOS RTC's status registers (QEMU's reset values) and KVM's PIT,
// whose channel 0 ticks on IRQ 0 through KVM's PIC.
TEST(MultibootTest, CmosRtcAndPitWithIrqchip) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb_pit") + " --irqchip --timeout 60s --json");
  ASSERT_EQ(r.status, 101) << r.err;  // (0x32 << 1) | 1: three ticks arrived
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["console"],
            "mb_pit: CMOS RTC and 8254 PIT\n"
            "cmos: status B=02 status D=80 status A&7f=26\n"
            "pit: channel 0, mode 2, count 1193, IRQ 0 at vector 0x20\n"
            "pit: 3 ticks\n"
            "mb_pit: bye\n");
  std::map<std::string, int> details = ExitDetails(doc);
  EXPECT_EQ(details["port 0x70 out (cmos index)"], 3);  // B, D and A
  EXPECT_EQ(details["port 0x71 in (cmos data)"], 3);
  // The PIT's ports (0x40-0x43) and the PICs' stay in KVM.
  for (const auto& [detail, count] : details) {
    EXPECT_EQ(detail.rfind("port 0x4", 0), std::string::npos) << detail;
    EXPECT_EQ(detail.find("(pic)"), std::string::npos) << detail;
  }
}

// mb_bios_pcdev.S: the interrupt state SeaBIOS leaves, which the Multiboot board
// leaves too (pc_firmware.h): the PICs' masks, IRQ 0 from the ticking PIT at the BIOS's
// vector 0x08 and slave IRQ 12 at 0x74, neither PIC reprogrammed; then, in real mode,
// the IVT's timer handler advancing the BIOS tick count.
TEST(MultibootTest, FirmwareInterruptStateWithIrqchip) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r =
      Sigvisor("run --image " + Kernel("mb_bios_pcdev") + " --irqchip --timeout 60s --json");
  ASSERT_EQ(r.status, 103) << r.err;  // (0x33 << 1) | 1: reached from real mode
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["console"],
            "mb_bios_pcdev: what the firmware leaves\n"
            "pic: masks as found: master=b8 slave=8e\n"
            "pic: IRQ 0 at vector 0x08 (PIT ticking)\n"
            "pic: IRQ 12 at vector 0x74\n"
            "real mode: waiting for 2 BIOS ticks\n"
            "real mode: the IVT's IRQ 0 handler advanced the BIOS tick count twice\n"
            "mb_bios_pcdev: bye\n");
  std::map<std::string, int> details = ExitDetails(doc);
  EXPECT_EQ(details["port 0x200c out (pc-testdev irq line)"], 2);  // up, then down
  for (const auto& [detail, count] : details) {
    EXPECT_EQ(detail.find("(pic)"), std::string::npos) << detail << ": KVM's PIC has it";
  }
}

// Without --irqchip the Multiboot board has no interrupt controller, no PIT, RTC nor
// pc-testdev: the first pc-testdev access is reported, not hung.
TEST(MultibootTest, PcTestdevWithoutIrqchipIsReported) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb_pcdev") + " --quiet --timeout 30s");
  EXPECT_EQ(r.status, 124) << r.err;  // the guest failed
  EXPECT_NE(r.err.find("0xe0"), std::string::npos) << r.err;
}

// mb_smp.S: fw_cfg's CPU count, INIT/SIPI through the in-kernel LAPIC, a real-mode
// trampoline; every AP sets its APIC ID's bit and writes the fw_cfg selector once from
// its own vCPU (so the run's ledger must hold the APs' exits too).
TEST(MultibootTest, SmpKernelStartsItsApsWithInitSipi) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r =
      Sigvisor("run --image " + Kernel("mb_smp") + " --vcpus 4 --timeout 60s --json");
  ASSERT_EQ(r.status, 97) << r.err;  // (0x30 << 1) | 1: all CPUs checked in
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["outcome"], "exited");
  const std::string console = doc["console"];
  EXPECT_EQ(console,
            "mb_smp: starting the application processors\n"
            "fw_cfg cpus=4\n"
            "mb_smp: all 4 CPUs checked in, APIC ID mask=0000000f\n"
            "mb_smp: bye\n");
  std::map<std::string, int> details = ExitDetails(doc);
  // The BSP's item select, then one selector write from each of the 3 APs.
  EXPECT_EQ(details["port 0x510 out (fw_cfg selector)"], 1 + 3);
  EXPECT_EQ(details["port 0x511 in (fw_cfg data)"], 4);
  EXPECT_EQ(details["port 0x3fd in (serial)"], static_cast<int>(console.size()));
  EXPECT_EQ(details["port 0x3f8 out (serial)"], static_cast<int>(console.size()) + 1);
  EXPECT_EQ(details["port 0xf4 out (debug-exit)"], 1);
  int sum = 0;
  for (const auto& [detail, count] : details) sum += count;
  EXPECT_EQ(doc["exits"]["total"].get<int>(), sum);
  EXPECT_EQ(sum, 2 * static_cast<int>(console.size()) + 1 + 4 + 4 + 4 + 1);
}

TEST(MultibootTest, SmpKernelOnOneVcpu) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image " + Kernel("mb_smp") + " --json");
  ASSERT_EQ(r.status, 97) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["console"],
            "mb_smp: starting the application processors\n"
            "fw_cfg cpus=1\n"
            "mb_smp: all 1 CPUs checked in, APIC ID mask=00000001\n"
            "mb_smp: bye\n");
}

TEST(MultibootTest, VcpusOutOfRangeOrForASigvisorImageAreRefused) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  ExpectOneLineError(Sigvisor("run --image " + Kernel("mb_smp") + " --vcpus 0"),
                     "--vcpus 0: give 1 to 64");
  ExpectOneLineError(Sigvisor("run --image " + Kernel("mb_smp") + " --vcpus 65"),
                     "--vcpus 65: give 1 to 64");
  ExpectOneLineError(Sigvisor("run --image " + Kernel("mb_smp") + " --vcpus -3"),
                     "--vcpus -3: give 1 to 64");
  // A uniprocessor build of the bundled kernel (docs/smp.md): one vCPU only.
  ExpectOneLineError(Sigvisor("run --variant accelerated --workload hello --vcpus 2"),
                     "uniprocessor");
}

TEST(MultibootTest, Plain32BitElfIsRefused) {
  ExpectOneLineError(Sigvisor("run --image " + Kernel("plain32")),
                     "no Multiboot header in its first 8 KiB");
}

TEST(MultibootTest, ModulesAndTrapsOnlyWhereTheyApply) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  ExpectOneLineError(Sigvisor("run --module " + std::string(kModule)),
                     "--module passes modules to a Multiboot kernel");
  ExpectOneLineError(Sigvisor("run --image " + Kernel("mb32") + " --trap=patch"),
                     "a Multiboot kernel runs with --trap=off");
  ExpectOneLineError(Sigvisor("run --image " + Kernel("mb32") + " --module /nonexistent"),
                     "cannot open '/nonexistent'");
  ExpectOneLineError(Sigvisor("run --irqchip --workload hello"),
                     "--irqchip is for Multiboot kernels");
}

// Issue 30: --inject with a Multiboot kernel was refused naming the tracer and the gdb
// stub. Refused naming --inject, before /dev/kvm is opened (--kvm names no device).
TEST(MultibootTest, InjectIsForTheBundledKernel) {
  ExpectOneLineError(
      Sigvisor("run --kvm /nonexistent/kvm --image " + Kernel("mb32") + " --inject sig=usr1,op=1"),
      "--inject is for the bundled kernel: fault injection reads sigvisor's "
      "boot protocol");
}

// Issue 30: a directory as --module ended in an uncaught std::__ios_failure, /dev/zero
// in std::bad_alloc, and a FIFO blocked for ever. Refused before /dev/kvm is opened.
TEST(MultibootTest, ModuleThatIsNotARegularFileIsRefused) {
  const std::string dir = TempPath("module.d");
  const std::string fifo = TempPath("module.fifo");
  mkdir(dir.c_str(), 0755);
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string run = "run --image " + Kernel("mb32") + " --module ";
  ExpectOneLineError(Sigvisor(run + dir), "--module: '" + dir + "' is a directory");
  ExpectOneLineError(Sigvisor(run + "/dev/zero"),
                     "--module: '/dev/zero' is a character device, not a regular file");
  ExpectOneLineError(Sigvisor(run + fifo + "=name"),
                     "--module: '" + fifo + "' is a FIFO, not a regular file");
}

}  // namespace
}  // namespace sigvisor::testing
