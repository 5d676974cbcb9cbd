#include "vmm/snapshot/snapshot_parts.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

// What every decoding error ends with: the part passed its checksum, so the bytes are
// what some build wrote; this one reads them differently.
constexpr std::string_view kOtherBuild =
    "the snapshot was taken by another build of sigvisor; take it again with this one";

}  // namespace

void PartWriter::PutU32(uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void PartWriter::PutU64(uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void PartWriter::PutBytes(std::span<const uint8_t> bytes) {
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
}

void PartWriter::PutString(std::string_view text) {
  PutU32(static_cast<uint32_t>(text.size()));
  PutBytes({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

const uint8_t* PartReader::Take(size_t size, std::string_view what) {
  if (!ok()) return nullptr;
  if (size > remaining()) {
    status_ = absl::DataLossError(
        absl::StrFormat("part '%s' ends at byte %d, in the middle of %s (%d bytes at byte %d): %s",
                        name_, bytes_.size(), what, size, offset_, kOtherBuild));
    return nullptr;
  }
  const uint8_t* p = bytes_.data() + offset_;
  offset_ += size;
  return p;
}

uint8_t PartReader::GetU8() {
  const uint8_t* p = Take(1, "a u8");
  return p ? *p : 0;
}

uint32_t PartReader::GetU32() {
  const uint8_t* p = Take(4, "a u32");
  if (p == nullptr) return 0;
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= uint32_t{p[i]} << (8 * i);
  return value;
}

uint64_t PartReader::GetU64() {
  const uint8_t* p = Take(8, "a u64");
  if (p == nullptr) return 0;
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t{p[i]} << (8 * i);
  return value;
}

std::span<const uint8_t> PartReader::GetBytes(size_t size) {
  const uint8_t* p = Take(size, "a byte string");
  if (p == nullptr) return {};
  return {p, size};
}

std::string PartReader::GetString() {
  const uint32_t size = GetU32();
  const uint8_t* p = Take(size, "a string");
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p), size);
}

uint32_t PartReader::GetCount(size_t min_item_bytes, std::string_view what) {
  const uint32_t count = GetU32();
  if (!ok()) return 0;
  const size_t each = std::max<size_t>(min_item_bytes, 1);
  if (count > remaining() / each) {
    Fail(absl::StrFormat("%d %s of at least %d bytes each do not fit in its last %d bytes: %s",
                         count, what, each, remaining(), kOtherBuild));
    return 0;
  }
  return count;
}

void PartReader::StructSizeDiffers(std::string_view type_name, uint32_t size, size_t expected) {
  if (!ok()) return;
  status_ = absl::FailedPreconditionError(
      absl::StrFormat("part '%s': %s of %d bytes, this build's is %d: %s", name_, type_name, size,
                      expected, kOtherBuild));
}

const absl::Status& PartReader::Fail(std::string_view message) {
  if (ok()) status_ = absl::DataLossError(absl::StrFormat("part '%s': %s", name_, message));
  return status_;
}

absl::Status PartReader::Done() const {
  if (!ok()) return status_;
  if (remaining() != 0) {
    return absl::DataLossError(
        absl::StrFormat("part '%s' has %d bytes after its last field (of %d): %s", name_,
                        remaining(), bytes_.size(), kOtherBuild));
  }
  return absl::OkStatus();
}

}  // namespace sigvisor
