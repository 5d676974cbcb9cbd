// FNV-1a, 64 bits: which bytes a result or a snapshot was made from (an image's
// identity in bench results and snapshot headers). An identity, not a defence: a
// checksum against corruption is the CRC-32C of crc32c.h.
#ifndef SIGVISOR_VMM_BASE_FNV1A_H_
#define SIGVISOR_VMM_BASE_FNV1A_H_

#include <cstdint>
#include <span>

namespace sigvisor {

inline uint64_t Fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) {
    hash ^= b;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_BASE_FNV1A_H_
