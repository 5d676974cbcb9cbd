#include "arch/x86_64/vmm/machine/mp_table.h"

#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

// Entry types (MP spec table 4-3).
constexpr uint8_t kEntryProcessor = 0, kEntryBus = 1, kEntryIoapic = 2, kEntryIoInterrupt = 3,
                  kEntryLocalInterrupt = 4;
// Interrupt types (table 4-8).
constexpr uint8_t kIntVectored = 0, kIntNmi = 1, kIntExtInt = 3;
constexpr uint8_t kCpuEnabled = 1 << 0, kCpuBootstrap = 1 << 1;
constexpr uint8_t kIoapicUsable = 1 << 0;
constexpr uint8_t kSpecRevision = 4;  // MP spec 1.4
constexpr uint8_t kIsaBusId = 0;
constexpr uint8_t kAllLapics = 0xff;
// Linux logs the CPU signature and feature flags of each processor entry and uses
// neither; Firecracker's values: family 6, FPU and APIC present.
constexpr uint32_t kCpuSignature = 0x600;
constexpr uint32_t kCpuFeatures = (1u << 0) | (1u << 9);

// Little-endian byte builder for the table.
class Bytes {
 public:
  void U8(uint8_t v) { bytes_.push_back(v); }
  void U16(uint16_t v) {
    U8(v & 0xff);
    U8(v >> 8);
  }
  void U32(uint32_t v) {
    U16(v & 0xffff);
    U16(v >> 16);
  }
  // Exactly `width` bytes of `text`, space-padded (the spec's ID strings).
  void Text(std::string_view text, size_t width) {
    for (size_t i = 0; i < width; ++i) U8(i < text.size() ? text[i] : ' ');
  }
  void Zeros(size_t n) { bytes_.insert(bytes_.end(), n, 0); }
  size_t size() const { return bytes_.size(); }
  uint8_t& at(size_t i) { return bytes_[i]; }
  std::vector<uint8_t>& vector() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// The byte that makes [begin, end) sum to zero.
uint8_t Checksum(const std::vector<uint8_t>& bytes, size_t begin, size_t end) {
  uint8_t sum = 0;
  for (size_t i = begin; i < end; ++i) sum += bytes[i];
  return static_cast<uint8_t>(-sum);
}

}  // namespace

absl::StatusOr<MpTablePlacement> WriteMpTable(GuestMemory& memory, uint64_t gpa, int vcpus) {
  if (vcpus < 1 || vcpus > kMpTableMaxVcpus) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d vCPUs: the MP table describes 1 to %d (8-bit APIC IDs, one for the IOAPIC)", vcpus,
        kMpTableMaxVcpus));
  }
  if (gpa % 16 != 0 || gpa + MpTableSize(vcpus) > (1ull << 20)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the MP table at %#x (%d bytes) must be 16-byte aligned and below 1 MiB", gpa,
        MpTableSize(vcpus)));
  }
  const uint8_t ioapic_id = static_cast<uint8_t>(vcpus);
  const uint64_t config_gpa = gpa + kMpFloatingPointerSize;

  Bytes table;
  // Floating pointer: feature byte 1 = 0 says a configuration table is present;
  // feature byte 2 bit 7 = 0 says virtual-wire mode (no IMCR), as on KVM.
  table.Text("_MP_", 4);
  table.U32(static_cast<uint32_t>(config_gpa));
  table.U8(1);  // length in 16-byte paragraphs
  table.U8(kSpecRevision);
  table.U8(0);  // checksum, below
  table.Zeros(5);

  const size_t header = table.size();
  table.Text("PCMP", 4);
  table.U16(0);  // base table length, below
  table.U8(kSpecRevision);
  table.U8(0);  // checksum, below
  table.Text("SIGVISOR", 8);
  table.Text("PC", 12);
  table.U32(0);  // no OEM table
  table.U16(0);
  table.U16(0);  // entry count, below
  table.U32(kLapicMmioGpa);
  table.U16(0);  // no extended entries
  table.U8(0);
  table.U8(0);

  uint16_t entries = 0;
  for (int cpu = 0; cpu < vcpus; ++cpu, ++entries) {
    table.U8(kEntryProcessor);
    table.U8(static_cast<uint8_t>(cpu));
    table.U8(kLapicVersion);
    table.U8(kCpuEnabled | (cpu == 0 ? kCpuBootstrap : 0));
    table.U32(kCpuSignature);
    table.U32(kCpuFeatures);
    table.Zeros(8);
  }
  table.U8(kEntryBus);
  table.U8(kIsaBusId);
  table.Text("ISA", 6);
  ++entries;
  table.U8(kEntryIoapic);
  table.U8(ioapic_id);
  table.U8(kIoapicVersion);
  table.U8(kIoapicUsable);
  table.U32(kIoapicMmioGpa);
  ++entries;
  // ISA IRQ n on IOAPIC pin n, polarity and trigger as the bus defines them (flags 0):
  // what KVM's default routing does with GSI n, and what kvmtool describes.
  for (int irq = 0; irq < kMpIsaIrqs; ++irq, ++entries) {
    table.U8(kEntryIoInterrupt);
    table.U8(kIntVectored);
    table.U16(0);
    table.U8(kIsaBusId);
    table.U8(static_cast<uint8_t>(irq));
    table.U8(ioapic_id);
    table.U8(static_cast<uint8_t>(irq));
  }
  // The 8259's output on the BSP's LINT0 (virtual wire), NMI on every CPU's LINT1.
  const uint8_t local[2][3] = {{kIntExtInt, 0, 0}, {kIntNmi, kAllLapics, 1}};
  for (const auto& [type, lapic, lint] : local) {
    table.U8(kEntryLocalInterrupt);
    table.U8(type);
    table.U16(0);
    table.U8(kIsaBusId);
    table.U8(0);
    table.U8(lapic);
    table.U8(lint);
    ++entries;
  }

  const size_t config_length = table.size() - header;
  table.at(header + 4) = config_length & 0xff;
  table.at(header + 5) = config_length >> 8;
  table.at(header + 34) = entries & 0xff;
  table.at(header + 35) = entries >> 8;
  table.at(header + 7) = Checksum(table.vector(), header, table.size());
  table.at(10) = Checksum(table.vector(), 0, kMpFloatingPointerSize);

  if (table.size() != MpTableSize(vcpus)) {
    return absl::InternalError("MP table size does not match MpTableSize");
  }
  if (!memory.Contains(gpa, table.size())) {
    return absl::OutOfRangeError(absl::StrFormat(
        "the MP table [%#x, %#x) is outside guest memory (%d KiB)", gpa, gpa + table.size(),
        memory.size() >> 10));
  }
  if (absl::Status s = memory.Write(gpa, table.vector()); !s.ok()) return s;
  return MpTablePlacement{.gpa = gpa, .size = table.size()};
}

}  // namespace sigvisor::x86
