// Finds the instruction behind a port I/O exit. By the time KVM reports KVM_EXIT_IO,
// rip may be on the instruction (KVM's fast path, as on VMX/SVM hardware) or already
// past it (an `out` KVM emulated, as PVM emulates guest CPL0), and KVM does not say
// which. The instruction is whichever of the two places holds an in/out/ins/outs
// that matches the exit: its direction, its access size and its port (the imm8, or
// DX).
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_PORT_IO_SITE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_PORT_IO_SITE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "vmm/run/backend.h"

namespace sigvisor::x86 {

// The longest port I/O instruction: prefixes (operand size, rep, segment, REX), the
// opcode and an imm8.
inline constexpr size_t kMaxPortIoBytes = 6;

// The length of the port I/O instruction at the start of `bytes` if it is one that
// makes the access `io` describes; nullopt otherwise.
std::optional<size_t> MatchPortIo(std::span<const uint8_t> bytes, const CpuLocation::PortIo& io);

// How far before rip the instruction behind `io` starts: 0 when it is at rip, n when
// it is the n bytes that end at rip. `before` holds the bytes that end at rip (up to
// kMaxPortIoBytes, fewer near an unreadable page), `at` those from rip on. When both
// places match (two like instructions in a row), 0: KVM's fast path leaves rip on the
// instruction. Nullopt when neither matches.
std::optional<uint64_t> PortIoInstructionBack(std::span<const uint8_t> before,
                                              std::span<const uint8_t> at,
                                              const CpuLocation::PortIo& io);

// The address of the instruction behind `io` with the vCPU at `rip`, reading guest
// bytes with `read(address, n)` (which returns fewer where they are unreadable); `rip`
// itself when no instruction matches.
uint64_t PortIoInstructionAddress(
    uint64_t rip, const CpuLocation::PortIo& io,
    const std::function<std::vector<uint8_t>(uint64_t address, size_t n)>& read);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_PORT_IO_SITE_H_
