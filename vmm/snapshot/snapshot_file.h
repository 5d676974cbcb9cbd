// A snapshot is a directory DIR of two files: DIR/state, this container of named parts
// (vCPU state, device state, the memory image's index), and DIR/memory, the guest's
// memory (memory_image.h).
//
// DIR/state, all integers little-endian:
//   offset 0   char magic[8]        "SVSNAPSH"
//          8   u32 format_version   kSnapshotFormatVersion
//         12   u32 part_count
//         16   part_count entries of 48 bytes:
//                char name[24]      1 to 23 printable ASCII characters, NUL-padded
//                u64 offset         of the payload, from the start of the file
//                u64 size           of the payload
//                u32 crc32c         of the payload
//                u32 zero
//              the payloads, one after another with nothing between them
//   size - 4   u32 crc32c           of every byte before it
// The reader takes nothing on trust: every bound, every name, every checksum is checked
// before a part is handed out, and a file with a byte more or less is refused.
#ifndef SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_FILE_H_
#define SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace sigvisor {

// The layout above and every part's. A change to either (a field added to a part)
// takes a new version: a snapshot is read only by a build of its own version.
// 2: the header names the IPI way and the local APICs; a vCPU part per vCPU.
inline constexpr uint32_t kSnapshotFormatVersion = 2;
inline constexpr std::string_view kSnapshotMagic = "SVSNAPSH";
inline constexpr size_t kSnapshotPartNameMax = 23;
// The files of DIR.
inline constexpr std::string_view kSnapshotStateFile = "state";
inline constexpr std::string_view kSnapshotMemoryFile = "memory";

// OK when each part's name is 1 to kSnapshotPartNameMax printable ASCII characters
// (no space) and no two parts share one; else InvalidArgument naming the part.
absl::Status CheckSnapshotPartNames(std::span<const SnapshotPart> parts);

// Parses a whole state file's bytes: magic, version (a file of another format version
// is refused naming both versions), table bounds (no overlap, inside the file, no
// duplicate names, names printable), each part's CRC, the file's CRC. `what` names the
// file in errors: "snapshot <what>: ...". InvalidArgument when it is not a snapshot state
// file, FailedPrecondition for another format version, DataLoss when it is truncated or
// corrupt.
absl::StatusOr<std::vector<SnapshotPart>> ParseSnapshotState(std::span<const uint8_t> bytes,
                                                             std::string_view what);

// The state file holding `parts`, in their order. Their names must pass
// CheckSnapshotPartNames (WriteSnapshotState checks): a longer name is cut to
// kSnapshotPartNameMax characters, and a file with a bad or repeated name does not parse.
std::vector<uint8_t> EncodeSnapshotState(std::span<const SnapshotPart> parts);

// Reads DIR/state (through the capped reader, file_caps::kSnapshotState) and parses it.
absl::StatusOr<std::vector<SnapshotPart>> ReadSnapshotState(const std::string& dir);

// Writes DIR/state atomically (a temporary file in DIR, every write checked, fsync,
// rename); creates DIR if missing (one level), refuses DIR if it is a file. Refuses
// parts whose names fail CheckSnapshotPartNames, and a file over the reader's cap.
// Returns the bytes the file holds.
absl::StatusOr<uint64_t> WriteSnapshotState(const std::string& dir,
                                            std::span<const SnapshotPart> parts);

// The part named `name`, or NotFound naming it and `what` (the state file, as for
// ParseSnapshotState). The pointer is into `parts`.
absl::StatusOr<const SnapshotPart*> FindSnapshotPart(std::span<const SnapshotPart> parts,
                                                     std::string_view name, std::string_view what);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_FILE_H_
