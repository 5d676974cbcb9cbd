// Fuzzes the snapshot reader (vmm/snapshot): arbitrary bytes as a state file, as a
// restore reads DIR/state; each input twice, as it is and with its checksums made right
// (so that mutations reach the table checks and the parts' decoders). A refusal must be
// one line naming the file, with the code its kind of refusal has; an accepted file's
// parts are then decoded as a memory index and walked with a PartReader, whose reads
// must stay inside the part. What parses must survive a round trip through the encoder.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "vmm/base/crc32c.h"
#include "vmm/snapshot/memory_image.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckRefusal(const absl::Status& status, std::string_view prefix) {
  Check(!status.ok());
  const std::string message(status.message());
  Check(message.rfind(prefix, 0) == 0);
  Check(message.find('\n') == std::string::npos);
}

struct Registers {
  uint64_t rip;
  uint32_t flags;
  uint32_t mode;
};

// Reads `part` as some decoder might, the order of reads drawn from `choices`: every
// read stays inside the part, and an error sticks.
void WalkPart(const sigvisor::SnapshotPart& part, uint32_t choices) {
  sigvisor::PartReader in(part);
  for (int step = 0; step < 64 && in.ok(); ++step, choices = choices * 1103515245 + 12345) {
    const size_t before = in.remaining();
    switch ((choices >> 16) % 7) {
      case 0:
        (void)in.GetU8();
        break;
      case 1:
        (void)in.GetU32();
        break;
      case 2:
        (void)in.GetU64();
        break;
      case 3:
        Check(in.GetString().size() <= before);
        break;
      case 4: {
        const std::span<const uint8_t> bytes = in.GetBytes((choices >> 8) % 64);
        Check(bytes.empty() ||
              (bytes.data() >= part.bytes.data() &&
               bytes.data() + bytes.size() <= part.bytes.data() + part.bytes.size()));
        break;
      }
      case 5:
        (void)in.GetStruct<Registers>("Registers");
        break;
      case 6: {
        const uint32_t count = in.GetCount(8, "items");
        Check(uint64_t{count} * 8 <= in.remaining());
        break;
      }
    }
    Check(in.remaining() <= before);
    if (!in.ok()) CheckRefusal(in.status(), "part '");
  }
  const absl::Status done = in.Done();
  if (!done.ok()) CheckRefusal(done, "part '");
}

uint32_t LoadU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t LoadU64(const uint8_t* p) { return LoadU32(p) | uint64_t{LoadU32(p + 4)} << 32; }

void StoreU32(uint8_t* p, uint32_t value) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

// The input with every checksum the table lets us find made right: without this, a
// mutation inside a part would almost never get past its CRC to the decoders.
std::vector<uint8_t> Reseal(std::span<const uint8_t> bytes) {
  std::vector<uint8_t> file(bytes.begin(), bytes.end());
  if (file.size() < 20) return file;
  const uint64_t count = LoadU32(file.data() + 12);
  for (uint64_t i = 0; i < count && 16 + (i + 1) * 48 <= file.size() - 4; ++i) {
    uint8_t* row = file.data() + 16 + i * 48;
    const uint64_t offset = LoadU64(row + 24);
    const uint64_t length = LoadU64(row + 32);
    if (offset <= file.size() && length <= file.size() - offset) {
      StoreU32(row + 40, sigvisor::Crc32c(std::span<const uint8_t>(file).subspan(offset, length)));
    }
  }
  StoreU32(file.data() + file.size() - 4,
           sigvisor::Crc32c(std::span<const uint8_t>(file).first(file.size() - 4)));
  return file;
}

void FuzzState(std::span<const uint8_t> bytes) {
  const size_t size = bytes.size();
  absl::StatusOr<std::vector<sigvisor::SnapshotPart>> parts =
      sigvisor::ParseSnapshotState(bytes, "/fuzz/state");
  if (!parts.ok()) {
    CheckRefusal(parts.status(), "snapshot /fuzz/state: ");
    const absl::StatusCode code = parts.status().code();
    Check(code == absl::StatusCode::kInvalidArgument ||
          code == absl::StatusCode::kFailedPrecondition || code == absl::StatusCode::kDataLoss);
    return;
  }
  Check(sigvisor::CheckSnapshotPartNames(*parts).ok());
  uint64_t payload = 0;
  for (const sigvisor::SnapshotPart& part : *parts) payload += part.bytes.size();
  Check(payload <= size);

  // What parses is what the encoder writes for those parts (the format has one layout
  // for a list of parts, up to the order of the payloads).
  const std::vector<uint8_t> again = sigvisor::EncodeSnapshotState(*parts);
  Check(again.size() == size);
  absl::StatusOr<std::vector<sigvisor::SnapshotPart>> reparsed =
      sigvisor::ParseSnapshotState(again, "/fuzz/again");
  Check(reparsed.ok() && *reparsed == *parts);

  for (const sigvisor::SnapshotPart& part : *parts) {
    absl::StatusOr<sigvisor::MemoryImageIndex> index = sigvisor::DecodeMemoryIndex(part);
    if (index.ok()) {
      Check(index->size != 0 && index->size % sigvisor::kMemoryImagePageSize == 0);
      Check(index->touched_pages() <= index->size / sigvisor::kMemoryImagePageSize);
      // The index's encoding is canonical: decoding reads every byte.
      Check(sigvisor::EncodeMemoryIndex(*index).bytes == part.bytes);
    } else {
      CheckRefusal(index.status(), "part '");
    }
    WalkPart(part, sigvisor::Crc32c(part.bytes));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  FuzzState(bytes);
  FuzzState(Reseal(bytes));
  return 0;
}
