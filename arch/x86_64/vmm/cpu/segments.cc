#include "arch/x86_64/vmm/cpu/segments.h"

namespace sigvisor::x86 {
namespace {

constexpr uint8_t kTypeCode = 0xb;     // execute/read, accessed
constexpr uint8_t kTypeData = 0x3;     // read/write, accessed
constexpr uint8_t kTypeBusyTss = 0xb;  // with S clear: a busy TSS
constexpr uint64_t kTssIoMapBaseOffset = 0x66;

}  // namespace

kvm_segment FlatSegment(uint16_t selector, FlatSegmentKind kind, uint8_t dpl) {
  const bool code64 = kind == FlatSegmentKind::kCode64;
  kvm_segment s = {};
  s.base = 0;
  s.limit = 0xffffffff;
  s.selector = selector;
  s.type = kind == FlatSegmentKind::kData ? kTypeData : kTypeCode;
  s.present = 1;
  s.dpl = dpl;
  s.db = code64 ? 0 : 1;  // D must be clear when L is set
  s.s = 1;
  s.l = code64 ? 1 : 0;
  s.g = 1;
  return s;
}

kvm_segment BusyTss(uint16_t selector, uint64_t base) {
  kvm_segment tr = {};
  tr.base = base;
  tr.limit = kTssLimit;
  tr.selector = selector;
  tr.type = kTypeBusyTss;
  tr.present = 1;
  return tr;
}

uint64_t EncodeDescriptor(const kvm_segment& segment) {
  // A page-granular limit is held in pages: kvm_segment's is in bytes.
  const uint64_t limit = segment.g ? segment.limit >> 12 : segment.limit;
  return (limit & 0xffff) | ((segment.base & 0xffffff) << 16) |
         (uint64_t{segment.type & 0xfu} << 40) | (uint64_t{segment.s & 1u} << 44) |
         (uint64_t{segment.dpl & 3u} << 45) | (uint64_t{segment.present & 1u} << 47) |
         (((limit >> 16) & 0xf) << 48) | (uint64_t{segment.avl & 1u} << 52) |
         (uint64_t{segment.l & 1u} << 53) | (uint64_t{segment.db & 1u} << 54) |
         (uint64_t{segment.g & 1u} << 55) | (((segment.base >> 24) & 0xff) << 56);
}

uint64_t EncodeSystemDescriptorHigh(const kvm_segment& segment) { return segment.base >> 32; }

absl::Status WriteEmptyTss(GuestMemory& memory, uint64_t gpa) {
  if (absl::Status s = memory.Fill(gpa, 0, kTssLimit + 1); !s.ok()) return s;
  return memory.WriteObject<uint16_t>(gpa + kTssIoMapBaseOffset, kTssLimit + 1);
}

}  // namespace sigvisor::x86
