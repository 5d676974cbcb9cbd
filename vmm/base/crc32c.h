// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), the checksum of the snapshot
// files. On x86-64 hosts with SSE4.2 (every KVM host sigvisor runs on) the `crc32`
// instruction computes it at several GB/s, which a 1 GiB memory image needs; the table
// path is the fallback and the reference the tests hold the instruction to.
#ifndef SIGVISOR_VMM_BASE_CRC32C_H_
#define SIGVISOR_VMM_BASE_CRC32C_H_

#include <cstdint>
#include <span>

namespace sigvisor {

// The CRC-32C of `data`, continuing from `crc`, the CRC-32C of the bytes before it
// (0 for none): Crc32c(b, Crc32c(a)) == Crc32c(a followed by b). The check value:
// Crc32c("123456789") == 0xE3069283. Uses the SSE4.2 instruction when the CPU has it.
uint32_t Crc32c(std::span<const uint8_t> data, uint32_t crc = 0);

namespace crc32c_internal {

// The two implementations behind Crc32c, for the tests that hold them to each other.
uint32_t Crc32cPortable(std::span<const uint8_t> data, uint32_t crc);
// True when this CPU has SSE4.2 (and so Crc32cHardware may be called).
bool HasHardwareCrc32c();
// Only when HasHardwareCrc32c() is true.
uint32_t Crc32cHardware(std::span<const uint8_t> data, uint32_t crc);

}  // namespace crc32c_internal
}  // namespace sigvisor

#endif  // SIGVISOR_VMM_BASE_CRC32C_H_
