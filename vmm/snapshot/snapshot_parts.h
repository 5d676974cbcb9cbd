// A snapshot part's payload, field by field: PartWriter lays values out little-endian
// one after another, PartReader takes them back in the same order. There are no field
// tags; a part's layout is whatever its encoder writes, and the state file's format
// version (snapshot_file.h) names the layouts together.
//
//   PartWriter out("vcpu0");
//   out.PutU64(tsc);
//   out.PutStruct(sregs);
//   SnapshotPart part = std::move(out).Finish();
//
//   PartReader in(part);
//   const uint64_t tsc = in.GetU64();
//   const kvm_sregs sregs = in.GetStruct<kvm_sregs>("kvm_sregs");
//   if (absl::Status status = in.Done(); !status.ok()) return status;
//
// The reader keeps the first error and answers zeros after it (a sticky error), so a
// decoder reads every field and asks once, at Done(). The bytes come from a file, so
// every read is bounds-checked; a value read is only what the file said: a count the
// decoder loops over comes from GetCount, which refuses one the part cannot hold.
#ifndef SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_PARTS_H_
#define SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_PARTS_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace sigvisor {

// Structs are copied as their bytes, so a snapshot is read by a host of the byte order
// that wrote it: x86-64's.
static_assert(std::endian::native == std::endian::little,
              "snapshot parts hold structs in little-endian byte order");

// One named part of a snapshot's state file: a vCPU, a device, the memory index.
struct SnapshotPart {
  std::string name;  // 1 to 23 printable ASCII characters (snapshot_file.h)
  std::vector<uint8_t> bytes;

  bool operator==(const SnapshotPart&) const = default;
};

class PartWriter {
 public:
  explicit PartWriter(std::string name) : name_(std::move(name)) {}

  void PutU8(uint8_t value) { bytes_.push_back(value); }
  void PutU32(uint32_t value);
  void PutU64(uint64_t value);
  // The bytes as they are, without a length: the reader must know how many to take.
  void PutBytes(std::span<const uint8_t> bytes);
  // A u32 length, then the characters (a name, a version string: far under 4 GiB).
  void PutString(std::string_view text);
  // A u32 sizeof(T), then T's bytes: a reader built with another definition of T (a
  // kernel header that grew a field) refuses it instead of misreading it.
  template <typename T>
  void PutStruct(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    PutU32(static_cast<uint32_t>(sizeof(T)));
    PutBytes({reinterpret_cast<const uint8_t*>(&value), sizeof(T)});
  }

  size_t size() const { return bytes_.size(); }
  SnapshotPart Finish() && { return {std::move(name_), std::move(bytes_)}; }

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
};

class PartReader {
 public:
  // Reads `part.bytes`, which must outlive the reader; errors name `part.name`.
  explicit PartReader(const SnapshotPart& part) : PartReader(part.name, part.bytes) {}
  PartReader(std::string_view name, std::span<const uint8_t> bytes) : name_(name), bytes_(bytes) {}

  // Each Get returns the next value, or (at the end of the part, or after an error) sets
  // the error and returns zero, an empty span or string, or a value-initialized T.
  uint8_t GetU8();
  uint32_t GetU32();
  uint64_t GetU64();
  // The next `size` bytes, a view into the part.
  std::span<const uint8_t> GetBytes(size_t size);
  std::string GetString();
  // A u32 count of items that take at least `min_item_bytes` each (at least 1), refused
  // when the rest of the part cannot hold that many: safe to reserve or loop over.
  // `what` names the items in the error ("memory runs").
  uint32_t GetCount(size_t min_item_bytes, std::string_view what);
  // A struct PutStruct wrote; one of another size is refused, naming `type_name`:
  // "part 'vcpu0': kvm_sregs of 312 bytes, this build's is 320; ...".
  template <typename T>
  T GetStruct(std::string_view type_name) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>);
    T value{};
    const uint32_t size = GetU32();
    if (!ok()) return value;
    if (size != sizeof(T)) {
      StructSizeDiffers(type_name, size, sizeof(T));
      return value;
    }
    const std::span<const uint8_t> bytes = GetBytes(sizeof(T));
    if (ok()) std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
  }

  // Records a decoder's own refusal ("run 3 overlaps run 2"), as "part 'NAME': MESSAGE",
  // unless an error came first. Returns the reader's error.
  const absl::Status& Fail(std::string_view message);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }
  const std::string& name() const { return name_; }

  // The first error, else an error when bytes are left over (a part from an encoder
  // that wrote more than this build reads), else OK.
  absl::Status Done() const;

 private:
  // The next `size` bytes, or nullptr (and the error) when the part has fewer.
  const uint8_t* Take(size_t size, std::string_view what);
  void StructSizeDiffers(std::string_view type_name, uint32_t size, size_t expected);

  std::string name_;
  std::span<const uint8_t> bytes_;
  size_t offset_ = 0;
  absl::Status status_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_PARTS_H_
