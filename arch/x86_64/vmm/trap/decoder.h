// x86-64 decoding with Capstone (operand details on): recognises the instructions
// the trap engine intercepts and turns Capstone's operands into a TrapInsn, and
// gives every instruction's AT&T text for listings and diagnoses.
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_DECODER_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_DECODER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/trap/trap_insn.h"

namespace sigvisor::trap {

struct DecodedInsn {
  uint64_t address = 0;
  uint8_t length = 0;
  std::string text;             // AT&T syntax, e.g. "movq %rax, %dr7"
  std::optional<TrapInsn> trap; // set when this is an instruction the engine intercepts
};

// An instruction's memory operand as general-register encoding numbers (0 = rax ..
// 15 = r15; -1 = none): the address is base + index * scale + displacement.
struct MemoryOperand {
  int base = -1;
  int index = -1;
  int scale = 1;
  int64_t displacement = 0;
  bool rip_relative = false;  // base is rip (of the next instruction)
  bool write = false;         // the instruction writes it
  uint8_t insn_length = 0;    // of the instruction it belongs to
};

class Decoder {
 public:
  // Opens Capstone for x86-64 (fails only when the library cannot).
  static absl::StatusOr<Decoder> Create();

  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) noexcept;
  ~Decoder();

  // The instruction at the start of `bytes` (at guest address `address`), or nullopt
  // when they do not begin with a valid x86-64 instruction.
  std::optional<DecodedInsn> Decode(std::span<const uint8_t> bytes, uint64_t address) const;

  // Decodes [bytes) as consecutive instructions from `address` (a linear sweep),
  // calling `visit` for each one that is a trap instruction. Bytes that do not
  // decode are stepped over one at a time.
  // The memory operand the instruction at the start of `bytes` writes (or, if it
  // writes none, the first it reads); nullopt when it has none or does not decode.
  // Segment overrides are not reflected (flat kernel segments).
  std::optional<MemoryOperand> MemoryOperandOf(std::span<const uint8_t> bytes,
                                               uint64_t address) const;

  void Sweep(std::span<const uint8_t> bytes, uint64_t address,
             const std::function<void(const DecodedInsn&)>& visit) const;

 private:
  struct Handles;
  explicit Decoder(std::unique_ptr<Handles> handles);
  std::unique_ptr<Handles> handles_;
};

}  // namespace sigvisor::trap

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_DECODER_H_
