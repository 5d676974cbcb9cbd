// Guest RAM as the host sees it: one mapping, guest-physical [0, size): anonymous, or a
// snapshot's memory image mapped copy-on-write.
//
// Every host access to guest memory goes through this class, and every access is
// bounds-checked: a guest address or length the guest controls can never make the
// host read or write outside the mapping (Solo5's HVT_CHECKED_GPA_P, as a type).
#ifndef SIGVISOR_VMM_MACHINE_GUEST_MEMORY_H_
#define SIGVISOR_VMM_MACHINE_GUEST_MEMORY_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/base/unique_fd.h"

namespace sigvisor {

class GuestMemory {
 public:
  // Maps `size` bytes of zeroed anonymous memory. `size` must be a non-zero
  // multiple of 4 KiB.
  static absl::StatusOr<GuestMemory> Create(uint64_t size);
  // Maps the first `size` bytes of the regular file `fd` copy-on-write (MAP_PRIVATE), as
  // a snapshot's memory image is restored: pages load from the file when first touched,
  // the guest's writes stay in this process, and every VM restored from the same file
  // shares its unwritten pages through the page cache. `size` must be a non-zero
  // multiple of 4 KiB, and the file at least that long (a page past its end would be
  // SIGBUS, not memory). `fd` may be closed once this returns; the file must not be
  // truncated or written in place while it is mapped.
  static absl::StatusOr<GuestMemory> MapPrivateFile(int fd, uint64_t size);

  GuestMemory(GuestMemory&&) = default;
  GuestMemory& operator=(GuestMemory&&) = default;

  uint64_t size() const { return mapping_.size(); }
  // For KVM_SET_USER_MEMORY_REGION only; everything else uses the checked calls.
  void* host_base() const { return mapping_.get(); }

  // True when [gpa, gpa + len) lies inside guest RAM (overflow-safe).
  bool Contains(uint64_t gpa, uint64_t len) const {
    return gpa <= size() && len <= size() - gpa;
  }

  // A checked view of [gpa, gpa + len). Fails with OutOfRange otherwise.
  absl::StatusOr<std::span<uint8_t>> Span(uint64_t gpa, uint64_t len);
  absl::StatusOr<std::span<const uint8_t>> Span(uint64_t gpa, uint64_t len) const;

  absl::Status Read(uint64_t gpa, std::span<uint8_t> out) const;
  absl::Status Write(uint64_t gpa, std::span<const uint8_t> data);
  absl::Status Fill(uint64_t gpa, uint8_t value, uint64_t len);

  // Copies a plain struct in or out (the ABI structs of guest-kit/abi).
  template <typename T>
  absl::StatusOr<T> ReadObject(uint64_t gpa) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    absl::Status status = Read(gpa, {reinterpret_cast<uint8_t*>(&value), sizeof(T)});
    if (!status.ok()) return status;
    return value;
  }
  template <typename T>
  absl::Status WriteObject(uint64_t gpa, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return Write(gpa, {reinterpret_cast<const uint8_t*>(&value), sizeof(T)});
  }

 private:
  explicit GuestMemory(UniqueMapping mapping) : mapping_(std::move(mapping)) {}
  absl::Status CheckRange(uint64_t gpa, uint64_t len) const;

  UniqueMapping mapping_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_MACHINE_GUEST_MEMORY_H_
