#include "vmm/machine/guest_memory.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>

#include "absl/strings/str_format.h"

namespace sigvisor {

absl::StatusOr<GuestMemory> GuestMemory::Create(uint64_t size) {
  if (size == 0 || size % 4096 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("guest memory size %#x is not a non-zero multiple of 4 KiB", size));
  }
  // MAP_NORESERVE: a large guest costs only the pages it touches.
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (addr == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "mmap of %d MiB guest memory failed: %s", size >> 20, strerror(errno)));
  }
  return GuestMemory(UniqueMapping(addr, size));
}

absl::StatusOr<GuestMemory> GuestMemory::MapPrivateFile(int fd, uint64_t size) {
  if (size == 0 || size % 4096 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("guest memory size %#x is not a non-zero multiple of 4 KiB", size));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot map guest memory from a file: %s", strerror(errno)));
  }
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot map %#x bytes of guest memory from a file: it is %s", size,
        S_ISREG(st.st_mode) ? absl::StrFormat("only %#x bytes", st.st_size)
                            : std::string("not a regular file")));
  }
  // MAP_NORESERVE: as in Create, a private writable mapping would otherwise be charged
  // its whole size up front although only the pages the guest writes are copied.
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  if (addr == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "mmap of %d MiB guest memory from a file failed: %s", size >> 20, strerror(errno)));
  }
  return GuestMemory(UniqueMapping(addr, size));
}

absl::Status GuestMemory::CheckRange(uint64_t gpa, uint64_t len) const {
  if (!Contains(gpa, len)) {
    return absl::OutOfRangeError(absl::StrFormat(
        "guest range [%#x, +%#x) is outside guest RAM [0, %#x)", gpa, len, size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::span<uint8_t>> GuestMemory::Span(uint64_t gpa, uint64_t len) {
  if (absl::Status s = CheckRange(gpa, len); !s.ok()) return s;
  return std::span<uint8_t>(static_cast<uint8_t*>(mapping_.get()) + gpa, len);
}

absl::StatusOr<std::span<const uint8_t>> GuestMemory::Span(uint64_t gpa, uint64_t len) const {
  if (absl::Status s = CheckRange(gpa, len); !s.ok()) return s;
  return std::span<const uint8_t>(static_cast<const uint8_t*>(mapping_.get()) + gpa, len);
}

absl::Status GuestMemory::Read(uint64_t gpa, std::span<uint8_t> out) const {
  absl::StatusOr<std::span<const uint8_t>> src = Span(gpa, out.size());
  if (!src.ok()) return src.status();
  if (!out.empty()) std::memcpy(out.data(), src->data(), out.size());
  return absl::OkStatus();
}

absl::Status GuestMemory::Write(uint64_t gpa, std::span<const uint8_t> data) {
  absl::StatusOr<std::span<uint8_t>> dst = Span(gpa, data.size());
  if (!dst.ok()) return dst.status();
  if (!data.empty()) std::memcpy(dst->data(), data.data(), data.size());
  return absl::OkStatus();
}

absl::Status GuestMemory::Fill(uint64_t gpa, uint8_t value, uint64_t len) {
  absl::StatusOr<std::span<uint8_t>> dst = Span(gpa, len);
  if (!dst.ok()) return dst.status();
  if (len != 0) std::memset(dst->data(), value, len);
  return absl::OkStatus();
}

}  // namespace sigvisor
