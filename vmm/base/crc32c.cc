#include "vmm/base/crc32c.h"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sigvisor::crc32c_internal {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // 0x1EDC6F41, bit-reversed

// Slicing-by-8: table[k][b] is the CRC of byte b followed by k zero bytes, so eight
// bytes fold in with eight lookups instead of eight dependent steps. Built at compile
// time: no start-up work and nothing mutable.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    tables[0][b] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t prev = tables[k - 1][b];
      tables[k][b] = (prev >> 8) ^ tables[0][prev & 0xff];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

uint64_t LoadLe64(const uint8_t* p) {
  // memcpy: the bytes need not be aligned. The CRC is defined over a little-endian
  // stream, which is the host's order (x86-64).
  uint64_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

}  // namespace

uint32_t Crc32cPortable(std::span<const uint8_t> data, uint32_t crc) {
  static_assert(std::endian::native == std::endian::little);
  crc = ~crc;
  const uint8_t* p = data.data();
  size_t n = data.size();
  for (; n >= 8; p += 8, n -= 8) {
    const uint64_t word = LoadLe64(p) ^ crc;
    crc = kTables[7][word & 0xff] ^ kTables[6][(word >> 8) & 0xff] ^
          kTables[5][(word >> 16) & 0xff] ^ kTables[4][(word >> 24) & 0xff] ^
          kTables[3][(word >> 32) & 0xff] ^ kTables[2][(word >> 40) & 0xff] ^
          kTables[1][(word >> 48) & 0xff] ^ kTables[0][word >> 56];
  }
  for (; n > 0; ++p, --n) crc = (crc >> 8) ^ kTables[0][(crc ^ *p) & 0xff];
  return ~crc;
}

#if defined(__x86_64__)

bool HasHardwareCrc32c() { return __builtin_cpu_supports("sse4.2"); }

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(std::span<const uint8_t> data,
                                                          uint32_t crc) {
  uint64_t state = ~crc;
  const uint8_t* p = data.data();
  size_t n = data.size();
  // Byte steps up to an 8-byte boundary, so the 8-byte loads below are aligned.
  for (; n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0; ++p, --n) {
    state = _mm_crc32_u8(static_cast<uint32_t>(state), *p);
  }
  for (; n >= 8; p += 8, n -= 8) state = _mm_crc32_u64(state, LoadLe64(p));
  for (; n > 0; ++p, --n) state = _mm_crc32_u8(static_cast<uint32_t>(state), *p);
  return ~static_cast<uint32_t>(state);
}

#else

bool HasHardwareCrc32c() { return false; }

uint32_t Crc32cHardware(std::span<const uint8_t> data, uint32_t crc) {
  return Crc32cPortable(data, crc);
}

#endif

}  // namespace sigvisor::crc32c_internal

namespace sigvisor {

uint32_t Crc32c(std::span<const uint8_t> data, uint32_t crc) {
  // Asked on each call rather than remembered: __builtin_cpu_supports reads the CPU
  // model libgcc filled in before main, a load and a test, and remembering it would
  // be one more piece of global state.
  if (crc32c_internal::HasHardwareCrc32c()) return crc32c_internal::Crc32cHardware(data, crc);
  return crc32c_internal::Crc32cPortable(data, crc);
}

}  // namespace sigvisor
