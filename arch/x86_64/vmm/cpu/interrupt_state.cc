#include "arch/x86_64/vmm/cpu/interrupt_state.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace sigvisor::x86 {
namespace {

constexpr size_t kLapicIsr = 0x100;
constexpr size_t kLapicIrr = 0x200;

std::string MpStateName(uint32_t mp_state) {
  switch (mp_state) {
    case KVM_MP_STATE_RUNNABLE:
      return "runnable";
    case KVM_MP_STATE_UNINITIALIZED:
      return "waiting for INIT";
    case KVM_MP_STATE_INIT_RECEIVED:
      return "waiting for SIPI";
    case KVM_MP_STATE_HALTED:
      return "halted";
    case KVM_MP_STATE_SIPI_RECEIVED:
      return "SIPI received";
    default:
      return absl::StrFormat("mp_state %u", mp_state);
  }
}

std::string VectorList(const std::vector<int>& vectors) {
  if (vectors.empty()) return "none";
  return absl::StrJoin(vectors, " ", [](std::string* out, int vector) {
    absl::StrAppendFormat(out, "%#x", vector);
  });
}

}  // namespace

std::vector<int> LapicVectors(const kvm_lapic_state& lapic, size_t offset) {
  std::vector<int> vectors;
  for (int word = 0; word < 8; ++word) {
    const size_t at = offset + 0x10 * static_cast<size_t>(word);
    if (at + sizeof(uint32_t) > sizeof(lapic.regs)) break;
    uint32_t bits;
    std::memcpy(&bits, lapic.regs + at, sizeof(bits));
    for (int bit = 0; bit < 32; ++bit) {
      if (bits & (1u << bit)) vectors.push_back(word * 32 + bit);
    }
  }
  return vectors;
}

InterruptState::LapicVectorSets VectorSetsOf(const kvm_lapic_state& lapic) {
  return {.pending = LapicVectors(lapic, kLapicIrr), .in_service = LapicVectors(lapic, kLapicIsr)};
}

std::string DescribeInterruptState(const InterruptState& state) {
  std::string text = state.mp_state ? MpStateName(*state.mp_state) + ", " : std::string();
  text += state.interrupts_enabled ? "interrupts on" : "interrupts off";
  if (state.lapic) {
    absl::StrAppendFormat(&text, ", LAPIC pending %s, in service %s",
                          VectorList(state.lapic->pending), VectorList(state.lapic->in_service));
  }
  return text;
}

}  // namespace sigvisor::x86
