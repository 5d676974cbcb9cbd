// Bounds-checked reads from an untrusted byte buffer (internal to //vmm/loader).
//
// Every read of ELF data in this package goes through these helpers, so an offset
// or length taken from the file can never make the parser read outside the buffer:
// a bad range yields nullopt or an error, never an out-of-bounds access. Structs are
// copied out with memcpy, so a misaligned offset is not undefined behaviour either.
#ifndef SIGVISOR_VMM_LOADER_ELF_BYTES_H_
#define SIGVISOR_VMM_LOADER_ELF_BYTES_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"

namespace sigvisor::elf_internal {

// The <elf.h> structs are filled by memcpy, i.e. in host byte order. Images are
// little-endian x86-64 (the parser rejects anything else), so the host must be too.
static_assert(std::endian::native == std::endian::little,
              "the ELF parser reads little-endian structs by memcpy");

// True when [offset, offset + len) lies inside a buffer of `size` bytes. Written so
// that no sum is formed: it cannot overflow whatever the operands.
constexpr bool RangeFits(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

// The checked view [offset, offset + len) of `bytes`, or nullopt when it does not fit.
inline std::optional<std::span<const uint8_t>> SubSpan(std::span<const uint8_t> bytes,
                                                       uint64_t offset, uint64_t len) {
  if (!RangeFits(offset, len, bytes.size())) return std::nullopt;
  return bytes.subspan(offset, len);
}

// A copy of the T at `offset`, or nullopt when it does not fit in `bytes`.
template <typename T>
std::optional<T> ReadStruct(std::span<const uint8_t> bytes, uint64_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (!RangeFits(offset, sizeof(T), bytes.size())) return std::nullopt;
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The NUL-terminated string at `offset` of a string table. `what` names the string
// for the error message (e.g. "symbol 12 name").
inline absl::StatusOr<std::string_view> StringAt(std::span<const uint8_t> table,
                                                 uint64_t offset, std::string_view what) {
  if (offset >= table.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: offset 0x%x is outside its string table (%d bytes)", what, offset,
                        table.size()));
  }
  const uint8_t* begin = table.data() + offset;
  const void* nul = std::memchr(begin, 0, table.size() - offset);
  if (nul == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: string at offset 0x%x is not NUL-terminated within its string table (%d bytes)",
        what, offset, table.size()));
  }
  return std::string_view(reinterpret_cast<const char*>(begin),
                          static_cast<const uint8_t*>(nul) - begin);
}

}  // namespace sigvisor::elf_internal

#endif  // SIGVISOR_VMM_LOADER_ELF_BYTES_H_
