#include "vmm/snapshot/snapshot_file.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/base/capped_file.h"
#include "vmm/base/crc32c.h"
#include "vmm/snapshot/snapshot_dir.h"

namespace sigvisor {
namespace {

constexpr size_t kHeaderSize = 16;
constexpr size_t kNameField = 24;
constexpr size_t kEntrySize = kNameField + 8 + 8 + 4 + 4;
constexpr size_t kTrailerSize = 4;
static_assert(kSnapshotMagic.size() == 8 && kSnapshotPartNameMax < kNameField);

constexpr std::string_view kTakeAgain = "take the snapshot again";

uint32_t LoadU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t LoadU64(const uint8_t* p) { return LoadU32(p) | uint64_t{LoadU32(p + 4)} << 32; }

void StoreU32(uint8_t* p, uint32_t value) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

void StoreU64(uint8_t* p, uint64_t value) {
  StoreU32(p, static_cast<uint32_t>(value));
  StoreU32(p + 4, static_cast<uint32_t>(value >> 32));
}

bool IsNameChar(uint8_t c) { return c > 0x20 && c < 0x7f; }

// Why `name` cannot be a part's name, or empty.
std::string NameProblem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kSnapshotPartNameMax) {
    return absl::StrFormat("is %d characters, more than %d", name.size(), kSnapshotPartNameMax);
  }
  for (char c : name) {
    if (!IsNameChar(static_cast<uint8_t>(c))) {
      return absl::StrFormat("has the byte 0x%02x, not a printable character",
                             static_cast<uint8_t>(c));
    }
  }
  return "";
}

// One row of the table, as read.
struct Entry {
  std::string name;
  uint64_t offset;
  uint64_t size;
  uint32_t crc;
};

}  // namespace

absl::Status CheckSnapshotPartNames(std::span<const SnapshotPart> parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    if (std::string problem = NameProblem(parts[i].name); !problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("snapshot part %d's name '%s' %s; name it with 1 to %d of [!-~]", i,
                          absl::CHexEscape(parts[i].name), problem, kSnapshotPartNameMax));
    }
    for (size_t j = 0; j < i; ++j) {
      if (parts[j].name == parts[i].name) {
        return absl::InvalidArgumentError(
            absl::StrFormat("snapshot parts %d and %d are both named '%s'; give each its own name",
                            j, i, parts[i].name));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SnapshotPart>> ParseSnapshotState(std::span<const uint8_t> bytes,
                                                             std::string_view what) {
  const uint64_t size = bytes.size();
  auto refuse = [&](absl::StatusCode code, std::string_view message) {
    return absl::Status(code, absl::StrFormat("snapshot %s: %s", what, message));
  };
  auto corrupt = [&](std::string_view message) {
    return refuse(
        absl::StatusCode::kDataLoss,
        absl::StrFormat("%s: the file is corrupt or was edited; %s", message, kTakeAgain));
  };
  auto truncated = [&](std::string_view needs) {
    return refuse(absl::StatusCode::kDataLoss,
                  absl::StrFormat("is truncated: %d bytes, %s; %s", size, needs, kTakeAgain));
  };

  // A short file that starts as a snapshot does is a truncated one; anything else is
  // some other file.
  const size_t magic_seen = std::min<size_t>(size, kSnapshotMagic.size());
  if (size == 0 || std::memcmp(bytes.data(), kSnapshotMagic.data(), magic_seen) != 0) {
    return refuse(
        absl::StatusCode::kInvalidArgument,
        absl::StrFormat("is not a snapshot state file (it does not start with '%s'); give "
                        "the directory of a snapshot",
                        kSnapshotMagic));
  }
  if (size < kHeaderSize + kTrailerSize) {
    return truncated(absl::StrFormat("less than a %d-byte header and a %d-byte checksum",
                                     kHeaderSize, kTrailerSize));
  }
  const uint32_t version = LoadU32(bytes.data() + 8);
  if (version != kSnapshotFormatVersion) {
    return refuse(absl::StatusCode::kFailedPrecondition,
                  absl::StrFormat("is snapshot format version %d, and this build reads version "
                                  "%d only; take the snapshot again with this build",
                                  version, kSnapshotFormatVersion));
  }
  const uint32_t count = LoadU32(bytes.data() + 12);
  const uint64_t table_end = kHeaderSize + uint64_t{count} * kEntrySize;  // no overflow
  const uint64_t payload_end = size - kTrailerSize;
  if (table_end > payload_end) {
    return truncated(absl::StrFormat("its table of %d parts needs %d, with the checksum", count,
                                     table_end + kTrailerSize));
  }

  std::vector<Entry> entries;
  entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* row = bytes.data() + kHeaderSize + size_t{i} * kEntrySize;
    const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(row, 0, kNameField));
    if (nul == nullptr) {
      return corrupt(
          absl::StrFormat("table entry %d's name has no NUL in its %d bytes", i, kNameField));
    }
    Entry entry{.name = std::string(reinterpret_cast<const char*>(row), nul - row),
                .offset = LoadU64(row + kNameField),
                .size = LoadU64(row + kNameField + 8),
                .crc = LoadU32(row + kNameField + 16)};
    if (std::string problem = NameProblem(entry.name); !problem.empty()) {
      return corrupt(absl::StrFormat("table entry %d's name '%s' %s", i,
                                     absl::CHexEscape(entry.name), problem));
    }
    if (std::any_of(nul, row + kNameField, [](uint8_t c) { return c != 0; })) {
      return corrupt(
          absl::StrFormat("table entry %d's name '%s' is followed by bytes other "
                          "than NUL",
                          i, entry.name));
    }
    if (const uint32_t zero = LoadU32(row + kNameField + 20); zero != 0) {
      return corrupt(
          absl::StrFormat("part '%s' has 0x%x in its table entry's zero field", entry.name, zero));
    }
    for (uint32_t j = 0; j < i; ++j) {
      if (entries[j].name == entry.name) {
        return corrupt(absl::StrFormat("part '%s' is in its table twice (entries %d and %d)",
                                       entry.name, j, i));
      }
    }
    if (entry.offset < table_end) {
      return corrupt(
          absl::StrFormat("part '%s' starts at byte %d, inside the header and table "
                          "(bytes 0-%d)",
                          entry.name, entry.offset, table_end - 1));
    }
    if (entry.offset > payload_end || entry.size > payload_end - entry.offset) {
      const bool beyond = entry.offset > UINT64_MAX - kTrailerSize ||
                          entry.size > UINT64_MAX - kTrailerSize - entry.offset;
      return truncated(
          absl::StrFormat("its part '%s' (%d bytes at byte %d) and the checksum need %s",
                          entry.name, entry.size, entry.offset,
                          beyond ? std::string("more than 2^64")
                                 : absl::StrCat(entry.offset + entry.size + kTrailerSize)));
    }
    entries.push_back(std::move(entry));
  }

  // The payloads, in the file's order, must tile [table_end, payload_end) exactly: an
  // overlap would let two parts share bytes, a gap or a tail would hide bytes no
  // checksum but the file's covers.
  std::vector<const Entry*> by_offset;
  by_offset.reserve(entries.size());
  for (const Entry& entry : entries) by_offset.push_back(&entry);
  // By offset, and an empty part before one that starts where it does.
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->size < b->size;
  });
  uint64_t next = table_end;
  const Entry* previous = nullptr;
  for (const Entry* entry : by_offset) {
    if (entry->offset < next) {
      return corrupt(absl::StrFormat("parts '%s' (bytes %d-%d) and '%s' (from byte %d) overlap",
                                     previous->name, previous->offset, next - 1, entry->name,
                                     entry->offset));
    }
    if (entry->offset > next) {
      return corrupt(absl::StrFormat("bytes %d-%d, before part '%s', belong to no part", next,
                                     entry->offset - 1, entry->name));
    }
    next = entry->offset + entry->size;
    previous = entry;
  }
  if (next != payload_end) {
    return refuse(absl::StatusCode::kDataLoss,
                  absl::StrFormat("has %d bytes after its last part that belong to no part: "
                                  "something was appended to it, or it is corrupt; %s",
                                  payload_end - next, kTakeAgain));
  }

  for (const Entry& entry : entries) {
    if (Crc32c(bytes.subspan(entry.offset, entry.size)) != entry.crc) {
      return corrupt(absl::StrFormat("part '%s' fails its checksum", entry.name));
    }
  }
  if (Crc32c(bytes.first(payload_end)) != LoadU32(bytes.data() + payload_end)) {
    return corrupt("the file fails its checksum");
  }

  std::vector<SnapshotPart> parts;
  parts.reserve(entries.size());
  for (Entry& entry : entries) {
    const auto payload = bytes.subspan(entry.offset, entry.size);
    parts.push_back({std::move(entry.name), std::vector<uint8_t>(payload.begin(), payload.end())});
  }
  return parts;
}

std::vector<uint8_t> EncodeSnapshotState(std::span<const SnapshotPart> parts) {
  const uint64_t table_end = kHeaderSize + parts.size() * kEntrySize;
  uint64_t total = table_end + kTrailerSize;
  for (const SnapshotPart& part : parts) total += part.bytes.size();
  std::vector<uint8_t> file(total, 0);

  std::memcpy(file.data(), kSnapshotMagic.data(), kSnapshotMagic.size());
  StoreU32(file.data() + 8, kSnapshotFormatVersion);
  StoreU32(file.data() + 12, static_cast<uint32_t>(parts.size()));
  uint64_t offset = table_end;
  for (size_t i = 0; i < parts.size(); ++i) {
    const SnapshotPart& part = parts[i];
    uint8_t* row = file.data() + kHeaderSize + i * kEntrySize;
    std::memcpy(row, part.name.data(), std::min(part.name.size(), kSnapshotPartNameMax));
    StoreU64(row + kNameField, offset);
    StoreU64(row + kNameField + 8, part.bytes.size());
    StoreU32(row + kNameField + 16, Crc32c(part.bytes));
    if (!part.bytes.empty())
      std::memcpy(file.data() + offset, part.bytes.data(), part.bytes.size());
    offset += part.bytes.size();
  }
  StoreU32(file.data() + offset, Crc32c(std::span<const uint8_t>(file).first(offset)));
  return file;
}

absl::StatusOr<std::vector<SnapshotPart>> ReadSnapshotState(const std::string& dir) {
  const std::string path = snapshot_internal::PathIn(dir, kSnapshotStateFile);
  absl::StatusOr<std::vector<uint8_t>> bytes =
      ReadCappedFileBytes(path, file_caps::kSnapshotState, FileRole{.noun = "snapshot state"});
  if (!bytes.ok()) return bytes.status();
  return ParseSnapshotState(*bytes, path);
}

absl::StatusOr<uint64_t> WriteSnapshotState(const std::string& dir,
                                            std::span<const SnapshotPart> parts) {
  if (absl::Status status = CheckSnapshotPartNames(parts); !status.ok()) return status;
  uint64_t total = kHeaderSize + parts.size() * kEntrySize + kTrailerSize;
  for (const SnapshotPart& part : parts) total += part.bytes.size();
  if (total > file_caps::kSnapshotState) {
    // Written, it could not be read back.
    return absl::InvalidArgumentError(absl::StrFormat(
        "snapshot state of %d bytes is larger than the %s a state file may hold; the snapshot "
        "was not written",
        total, CapText(file_caps::kSnapshotState)));
  }
  if (absl::Status status = snapshot_internal::MakeSnapshotDir(dir); !status.ok()) return status;
  absl::StatusOr<snapshot_internal::AtomicFile> file =
      snapshot_internal::AtomicFile::Create(dir, kSnapshotStateFile, "snapshot state");
  if (!file.ok()) return file.status();
  if (absl::Status status = file->WriteAt(0, EncodeSnapshotState(parts)); !status.ok()) {
    return status;
  }
  if (absl::Status status = file->Commit(); !status.ok()) return status;
  return total;
}

absl::StatusOr<const SnapshotPart*> FindSnapshotPart(std::span<const SnapshotPart> parts,
                                                     std::string_view name, std::string_view what) {
  for (const SnapshotPart& part : parts) {
    if (part.name == name) return &part;
  }
  return absl::NotFoundError(absl::StrFormat(
      "snapshot %s has no part '%s': it was taken by a build that does not save it; %s", what, name,
      kTakeAgain));
}

}  // namespace sigvisor
