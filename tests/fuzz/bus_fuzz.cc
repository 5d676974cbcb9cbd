// Fuzzes the bus with its devices: random port, MMIO and MSR accesses (address, width,
// direction, data) against the serial port, the debug-exit device, the VMM's local
// APICs (the xAPIC page and the x2APIC MSRs, `run --lapic vmm`) and the hypercall port
// block with the guest protocol and the SMP calls (cpu_up, send_ipi, over a machine of 1
// to 8 vCPUs, each access made by any of four vCPUs) behind it (over guest RAM the input
// also fills), in any order and overlap, the APICs' interrupts taken as a vCPU's run
// loop takes them. Every access must return (an error is fine); nothing may read or
// write outside its buffers, what the guest controls stays bounded, the SMP calls hand
// the machine only what the ABI allows (a CPU of the machine, started once; a vector of
// 0x20-0xff), and no APIC ever holds a vector below 16.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "arch/x86_64/vmm/cpu/local_apic.h"
#include "arch/x86_64/vmm/cpu/local_apic_devices.h"
#include "arch/x86_64/vmm/machine/smp_boot.h"
#include "devices/hypercall.h"
#include "devices/pc/debug_exit.h"
#include "devices/serial16550.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/guest_protocol.h"
#include "vmm/run/hypercall_table.h"

namespace {

// What a guest-controlled result may hold at most: a marker's name is the ABI's
// field, a panic's message 512 bytes (plus the words around it).
void CheckBounds(const sigvisor::HypercallResult& result) {
  if (result.marker && result.marker->name.size() > sizeof(sigvisor_hc_phase_begin{}.name)) {
    std::abort();
  }
  if (result.warning.size() > sizeof(sigvisor_hc_time_report{}.name) + 128) std::abort();
  if (result.diagnosis.size() > 512 + 128) std::abort();
}

// The machine behind the SMP calls: it checks that what reaches it was validated, and
// posts the IPIs to the VMM's local APICs.
class CheckedSmpMachine : public sigvisor::x86::SmpMachine {
 public:
  CheckedSmpMachine(int vcpus, sigvisor::x86::LocalApics& apics) : vcpus_(vcpus), apics_(apics) {}
  int CallingVcpu() const override { return caller; }
  absl::StatusOr<kvm_sregs> CallerSregs() override {
    if (caller != 0) std::abort();  // cpu_up is vCPU 0's alone
    return kvm_sregs{};
  }
  absl::Status StartAp(int cpu, const sigvisor::x86::ApEntry&) override {
    if (caller != 0 || cpu < 1 || cpu >= vcpus_ || started_[cpu]) std::abort();
    started_[cpu] = true;
    return absl::OkStatus();
  }
  absl::StatusOr<bool> SignalIpi(int cpu, uint32_t vector) override {
    if (cpu < 0 || cpu >= vcpus_ || vector < SIGVISOR_IPI_VECTOR_MIN || vector > 255) {
      std::abort();
    }
    return apics_.Post(cpu, static_cast<uint8_t>(vector));
  }

  int caller = 0;

 private:
  int vcpus_;
  sigvisor::x86::LocalApics& apics_;
  bool started_[SIGVISOR_MAX_CPUS] = {};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto memory = sigvisor::GuestMemory::Create(8 << 10);
  if (!memory.ok()) std::abort();
  const size_t ram_bytes = std::min<size_t>(size, 8 << 10);
  if (size < 2) return 0;
  // The first byte says how much of the input is RAM (in 64-byte units).
  const size_t ram = std::min<size_t>(size_t{data[0]} * 64, ram_bytes);
  (void)memory->Write(0, {data + 1, std::min(ram, size - 1)});
  const size_t skip = 1 + std::min(ram, size - 1);
  data += skip;
  size -= skip;

  // The protocol serves a table of its own; the one on the bus checks each result.
  uint64_t console_bytes = 0;
  sigvisor::GuestProtocol protocol(*memory, [&](std::string_view text) {
    if (text.size() > SIGVISOR_CONSOLE_MAX_WRITE) std::abort();
    console_bytes += text.size();
  });
  protocol.set_orders("workload=hello ops=1");  // written wherever an orders call points
  sigvisor::HypercallTable served, checked;
  if (!protocol.Register(served).ok()) std::abort();
  // A machine of 1 to 8 vCPUs (from the RAM size byte); each access's caller from its
  // flags: the table refuses an AP's vCPU-0 calls before they reach their owner.
  const int vcpus = 1 + ram_bytes % SIGVISOR_MAX_CPUS;
  sigvisor::x86::LocalApics apics(vcpus);
  CheckedSmpMachine smp_machine(vcpus, apics);
  sigvisor::x86::SmpHypercalls smp(*memory, smp_machine, vcpus);
  if (!smp.Register(served).ok()) std::abort();
  served.set_caller([&smp_machine] { return smp_machine.caller; });
  for (uint64_t nr = 0; nr < sigvisor::HypercallTable::kMaxCalls; ++nr) {
    if (!served.registered(nr)) continue;
    (void)checked.Register(nr, [&served, nr](uint32_t gpa) {
      uint8_t argument[4];
      std::memcpy(argument, &gpa, 4);
      sigvisor::HypercallResult result = served.Call(nr, argument);
      CheckBounds(result);
      return result;
    });
  }
  sigvisor::HypercallDevice hypercalls(checked);
  uint64_t serial_out = 0;
  sigvisor::Serial16550 serial([&](std::string_view text) { serial_out += text.size(); });
  sigvisor::DebugExit debug_exit;
  sigvisor::Bus bus;
  (void)bus.Register(sigvisor::AddressSpace::kPort, SIGVISOR_HC_PORT_BASE,
                     sigvisor::HypercallDevice::kPortCount, &hypercalls);
  (void)bus.Register(sigvisor::AddressSpace::kPort, 0x3f8, 8, &serial);
  (void)bus.Register(sigvisor::AddressSpace::kPort, 0xf4, sigvisor::DebugExit::kPortCount,
                     &debug_exit);
  (void)bus.Register(sigvisor::AddressSpace::kMmio, 0xd0000000, 0x1000, &serial);
  auto caller = [&smp_machine] { return smp_machine.caller; };
  using sigvisor::x86::LocalApicWindow;
  LocalApicWindow xapic(LocalApicWindow::Kind::kXapicPage, apics, caller);
  LocalApicWindow x2apic(LocalApicWindow::Kind::kX2apicMsrs, apics, caller);
  (void)bus.Register(sigvisor::AddressSpace::kMmio, SIGVISOR_XAPIC_GPA,
                     LocalApicWindow::kXapicPageSize, &xapic);
  (void)bus.Register(sigvisor::AddressSpace::kMsr, LocalApicWindow::kX2apicFirstMsr,
                     LocalApicWindow::kX2apicMsrCount, &x2apic);
  // Overlapping and degenerate registrations must be refused, not corrupt the bus.
  (void)bus.Register(sigvisor::AddressSpace::kPort, 0x3fc, 8, &debug_exit);
  (void)bus.Register(sigvisor::AddressSpace::kPort, ~uint64_t{0} - 1, 8, &debug_exit);
  (void)bus.Register(sigvisor::AddressSpace::kPort, 0x10, 0, &debug_exit);

  // Each access: flags, address (2 bytes), then up to 8 data bytes.
  uint8_t buffer[16];
  while (size >= 3) {
    const uint8_t flags = data[0];
    smp_machine.caller = (flags >> 6) & 3;  // bits 6-7: the vCPU making the access
    uint16_t addr16;
    std::memcpy(&addr16, data + 1, 2);
    data += 3;
    size -= 3;
    const size_t width = size_t{1} << (flags & 3);
    const bool write = flags & 4;
    auto space = (flags & 8) ? sigvisor::AddressSpace::kMmio : sigvisor::AddressSpace::kPort;
    uint64_t addr = addr16;
    if (space == sigvisor::AddressSpace::kMmio) addr += 0xd0000000 - 0x800;
    switch ((flags >> 4) & 3) {
      case 0: addr = SIGVISOR_HC_PORT_BASE + (addr16 & 0x1f); break;
      case 1: addr = 0x3f8 + (addr16 & 7); break;
      case 2:  // the local APICs: the xAPIC page, or MSRs around the x2APIC's
        if (space == sigvisor::AddressSpace::kMmio) {
          addr = SIGVISOR_XAPIC_GPA + (addr16 & 0xfff);
        } else {
          space = sigvisor::AddressSpace::kMsr;
          addr = 0x700 + (addr16 & 0x3ff);
        }
        break;
      default: break;
    }
    const size_t take = std::min(width, size);
    std::memset(buffer, 0, sizeof(buffer));
    std::memcpy(buffer, data, take);
    data += take;
    size -= take;
    std::span<uint8_t> span(buffer, width);
    if (write) {
      (void)bus.Write(space, addr, span);
    } else {
      (void)bus.Read(space, addr, span);
    }
    (void)bus.AccessName(space, addr);
    // The caller's run loop: its deliverable interrupt injected (IRR to ISR).
    if (std::optional<uint8_t> vector = apics.Deliverable(smp_machine.caller)) {
      if (*vector < 16) std::abort();
      apics.Accept(smp_machine.caller, *vector);
    }
  }
  for (int cpu = 0; cpu < vcpus; ++cpu) {
    for (int vector : apics.Pending(cpu)) {
      if (vector < 16) std::abort();
    }
    for (int vector : apics.InService(cpu)) {
      if (vector < 16) std::abort();
    }
  }
  if (smp.ipis_delivered() > (uint64_t{1} << 40) || smp.aps_started() >= vcpus) std::abort();
  return 0;
}
