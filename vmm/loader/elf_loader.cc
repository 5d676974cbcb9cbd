#include "vmm/loader/elf_loader.h"

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

// All-or-nothing: a half-loaded image would be a confusing guest to debug.
absl::Status CheckSegmentsFit(const ElfImage& image, const GuestMemory& memory) {
  const std::vector<ElfSegment>& segments = image.segments();
  for (size_t i = 0; i < segments.size(); ++i) {
    const ElfSegment& s = segments[i];
    if (!memory.Contains(s.paddr, s.memsz)) {
      // paddr + memsz cannot overflow: ElfImage::Parse checked it.
      return absl::OutOfRangeError(absl::StrFormat(
          "PT_LOAD segment %d [0x%x, 0x%x) does not fit guest RAM [0, 0x%x) (%d MiB); give the "
          "guest more memory or link the image lower",
          i, s.paddr, s.paddr + s.memsz, memory.size(), memory.size() >> 20));
    }
  }
  return absl::OkStatus();
}

absl::Status WithSegment(size_t index, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrFormat("loading PT_LOAD segment %d: %s", index, status.message()));
}

}  // namespace

absl::Status LoadElfImage(const ElfImage& image, GuestMemory& memory) {
  if (!image.bootable()) {
    return absl::FailedPreconditionError(
        "image is not a static ET_EXEC executable (parsed with allow_host_binaries?); sigvisor "
        "boots only static ET_EXEC images");
  }
  if (absl::Status s = CheckSegmentsFit(image, memory); !s.ok()) return s;
  const std::vector<ElfSegment>& segments = image.segments();
  for (size_t i = 0; i < segments.size(); ++i) {
    const ElfSegment& s = segments[i];
    if (absl::Status st = memory.Write(s.paddr, s.file_bytes); !st.ok()) return WithSegment(i, st);
    // Guest RAM may be reused, so bss is zeroed explicitly rather than assumed zero.
    if (absl::Status st = memory.Fill(s.paddr + s.filesz, 0, s.memsz - s.filesz); !st.ok()) {
      return WithSegment(i, st);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAbiVersion(const ElfImage& image, uint32_t expected) {
  const std::optional<uint32_t> version = image.abi_version();
  if (!version) {
    return absl::FailedPreconditionError(
        "no sigvisor ABI note (is this a sigvisor guest image?); guest images carry a "
        "\".note.sigvisor\" note, owner \"sigvisor\", built from guest-kit/abi/sigvisor_abi.h");
  }
  if (*version != expected) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "image speaks sigvisor ABI %d, this VMM speaks ABI %d; rebuild the image against "
        "guest-kit/abi/sigvisor_abi.h",
        *version, expected));
  }
  return absl::OkStatus();
}

}  // namespace sigvisor
