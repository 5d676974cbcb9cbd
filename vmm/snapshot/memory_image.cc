#include "vmm/snapshot/memory_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/base/crc32c.h"
#include "vmm/base/unique_fd.h"
#include "vmm/snapshot/snapshot_dir.h"
#include "vmm/snapshot/snapshot_file.h"

namespace sigvisor {
namespace {

constexpr uint64_t kPage = kMemoryImagePageSize;
// How much is checksummed and written, or read and checked, at a time: small enough to
// stay in the cache between the two, and the size of the one buffer reading takes.
constexpr size_t kChunk = size_t{1} << 20;
// first_page, page_count, crc32c.
constexpr size_t kEncodedRunSize = 8 + 8 + 4;

constexpr std::string_view kNoun = "snapshot memory image";
constexpr std::string_view kTakeAgain = "take the snapshot again";

bool IsZeroPage(const uint8_t* page) {
  // 64 bytes at a time, or'ed as words the compiler keeps in vector registers; most
  // non-zero pages differ in their first line, most zero pages are read whole.
  for (size_t line = 0; line < kPage; line += 64) {
    uint64_t words[8];
    std::memcpy(words, page + line, sizeof words);
    uint64_t any = 0;
    for (uint64_t word : words) any |= word;
    if (any != 0) return false;
  }
  return true;
}

// Why `index` is not one WriteMemoryImage could have made, or empty.
std::string IndexProblem(const MemoryImageIndex& index) {
  if (index.size == 0 || index.size % kPage != 0) {
    return absl::StrFormat("memory size %#x is not a non-zero multiple of 4 KiB", index.size);
  }
  const uint64_t pages = index.size / kPage;
  uint64_t next = 0;  // the first page the next run may start at
  for (size_t i = 0; i < index.runs.size(); ++i) {
    const MemoryRun& run = index.runs[i];
    if (run.page_count == 0) return absl::StrFormat("run %d is empty", i);
    if (run.first_page > pages || run.page_count > pages - run.first_page) {
      return absl::StrFormat("run %d (%d %s from page %#x) ends past the memory's %#x pages", i,
                             run.page_count, run.page_count == 1 ? "page" : "pages", run.first_page,
                             pages);
    }
    if (run.first_page < next) {
      return absl::StrFormat("run %d (from page %#x) starts before run %d ends (page %#x)", i,
                             run.first_page, i - 1, next);
    }
    next = run.first_page + run.page_count;
  }
  return "";
}

std::string PageRange(uint64_t first_page, uint64_t page_count) {
  if (page_count == 1) {
    return absl::StrFormat("page %#x (guest %#x-%#x)", first_page, first_page * kPage,
                           first_page * kPage + kPage - 1);
  }
  return absl::StrFormat("pages %#x-%#x (guest %#x-%#x)", first_page, first_page + page_count - 1,
                         first_page * kPage, (first_page + page_count) * kPage - 1);
}

// Reading DIR/memory back: the one fixed buffer, and the errors that name the file.
class ImageChecker {
 public:
  ImageChecker(int fd, std::string path) : fd_(fd), path_(std::move(path)), buffer_(kChunk) {}

  // The CRC-32C of bytes [offset, offset + length) of the file.
  absl::StatusOr<uint32_t> Crc(uint64_t offset, uint64_t length) {
    uint32_t crc = 0;
    while (length > 0) {
      absl::StatusOr<std::span<const uint8_t>> chunk = Read(offset, length);
      if (!chunk.ok()) return chunk.status();
      crc = Crc32c(*chunk, crc);
      offset += chunk->size();
      length -= chunk->size();
    }
    return crc;
  }

  // OK when bytes [offset, offset + length) of the file are all zero.
  absl::Status CheckZero(uint64_t offset, uint64_t length) {
    while (length > 0) {
      absl::StatusOr<std::span<const uint8_t>> chunk = Read(offset, length);
      if (!chunk.ok()) return chunk.status();
      const auto nonzero = std::find_if(chunk->begin(), chunk->end(), [](uint8_t b) { return b; });
      if (nonzero != chunk->end()) {
        const uint64_t page = (offset + (nonzero - chunk->begin())) / kPage;
        return absl::DataLossError(absl::StrFormat(
            "%s '%s': %s holds data where the snapshot left a hole: the file was written "
            "after the snapshot was taken; %s",
            kNoun, path_, PageRange(page, 1), kTakeAgain));
      }
      offset += chunk->size();
      length -= chunk->size();
    }
    return absl::OkStatus();
  }

  absl::Status Error(std::string_view message) const {
    return absl::DataLossError(absl::StrFormat("%s '%s': %s", kNoun, path_, message));
  }

 private:
  // Up to a buffer of bytes [offset, offset + length).
  absl::StatusOr<std::span<const uint8_t>> Read(uint64_t offset, uint64_t length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length, buffer_.size()));
    size_t filled = 0;
    while (filled < want) {
      const ssize_t n =
          ::pread(fd_, buffer_.data() + filled, want - filled, static_cast<off_t>(offset + filled));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Error(absl::StrCat("cannot read it: ", std::strerror(errno)));
      }
      if (n == 0) {
        return Error(
            absl::StrFormat("ends at byte %d, shorter than when it was opened; do not "
                            "change a snapshot while it is restored",
                            offset + filled));
      }
      filled += static_cast<size_t>(n);
    }
    return std::span<const uint8_t>(buffer_.data(), want);
  }

  int fd_;
  std::string path_;
  std::vector<uint8_t> buffer_;
};

// Bytes [begin, end) of the file hold no data the index does not list: where the file
// system reports holes, only what it reports as data is read; where it does not (every
// byte is data), all of it is.
absl::Status CheckOutsideRuns(int fd, ImageChecker& checker, uint64_t begin, uint64_t end) {
  uint64_t at = begin;
  while (at < end) {
    const off_t data = ::lseek(fd, static_cast<off_t>(at), SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) return absl::OkStatus();  // no data from `at` to the end of file
      // No SEEK_DATA here: read it all.
      return checker.CheckZero(at, end - at);
    }
    if (static_cast<uint64_t>(data) >= end) return absl::OkStatus();
    const off_t hole = ::lseek(fd, data, SEEK_HOLE);
    const uint64_t data_end =
        hole < 0 ? end : std::min<uint64_t>(std::max<uint64_t>(hole, data + 1), end);
    // File systems allocate whole blocks (and some, larger extents), so data next to a
    // run can be zeros the file system keeps: refused only when it is not zeros.
    if (absl::Status status = checker.CheckZero(data, data_end - data); !status.ok()) {
      return status;
    }
    at = data_end;
  }
  return absl::OkStatus();
}

absl::Status NotRegular(const std::string& path, mode_t mode) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s '%s' is %s, not a regular file; give the directory of a snapshot", kNoun,
                      path, S_ISDIR(mode) ? "a directory" : "something else"));
}

// DIR/memory opened for reading, and its stat in `st`. As the capped reader does, the
// path is looked at before it is opened (opening a FIFO blocks, opening a device can
// act on it), and O_NONBLOCK covers one that changes in between.
absl::StatusOr<UniqueFd> OpenRegular(const std::string& path, struct stat& st) {
  auto cannot_open = [&](int error) {
    return absl::NotFoundError(
        absl::StrFormat("cannot open %s '%s': %s", kNoun, path, std::strerror(error)));
  };
  if (::stat(path.c_str(), &st) != 0) return cannot_open(errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return cannot_open(errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  return fd;
}

}  // namespace

uint64_t MemoryImageIndex::touched_pages() const {
  uint64_t pages = 0;
  for (const MemoryRun& run : runs) pages += run.page_count;
  return pages;
}

absl::StatusOr<MemoryImageIndex> WriteMemoryImage(const std::string& dir,
                                                  std::span<const uint8_t> memory,
                                                  MemoryImageStats* stats) {
  if (memory.empty() || memory.size() % kPage != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot write a snapshot of %#x bytes of guest memory: not a non-zero multiple of 4 KiB",
        memory.size()));
  }
  if (absl::Status status = snapshot_internal::MakeSnapshotDir(dir); !status.ok()) return status;
  absl::StatusOr<snapshot_internal::AtomicFile> file =
      snapshot_internal::AtomicFile::Create(dir, kSnapshotMemoryFile, kNoun);
  if (!file.ok()) return file.status();
  // The length first: every page not written below is a hole.
  if (absl::Status status = file->SetSize(memory.size()); !status.ok()) return status;

  MemoryImageIndex index{.size = memory.size(), .runs = {}};
  const uint64_t pages = memory.size() / kPage;
  uint64_t page = 0;
  while (page < pages) {
    if (IsZeroPage(memory.data() + page * kPage)) {
      ++page;
      continue;
    }
    uint64_t end = page + 1;
    while (end < pages && !IsZeroPage(memory.data() + end * kPage)) ++end;
    // Checksummed and written a chunk at a time, while the chunk is in the cache.
    MemoryRun run{.first_page = page, .page_count = end - page, .crc32c = 0};
    for (uint64_t at = page * kPage; at < end * kPage; at += kChunk) {
      const auto chunk = memory.subspan(at, std::min<uint64_t>(kChunk, end * kPage - at));
      run.crc32c = Crc32c(chunk, run.crc32c);
      if (absl::Status status = file->WriteAt(at, chunk); !status.ok()) return status;
    }
    index.runs.push_back(run);
    page = end;
  }
  if (absl::Status status = file->Commit(); !status.ok()) return status;
  if (stats != nullptr) {
    struct stat st;
    *stats = {.touched_pages = index.touched_pages(),
              .bytes_on_disk = ::fstat(file->fd(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0};
  }
  return index;
}

SnapshotPart EncodeMemoryIndex(const MemoryImageIndex& index) {
  PartWriter out{std::string(kMemoryIndexPartName)};
  out.PutU64(index.size);
  out.PutU32(static_cast<uint32_t>(index.runs.size()));
  for (const MemoryRun& run : index.runs) {
    out.PutU64(run.first_page);
    out.PutU64(run.page_count);
    out.PutU32(run.crc32c);
  }
  return std::move(out).Finish();
}

absl::StatusOr<MemoryImageIndex> DecodeMemoryIndex(const SnapshotPart& part) {
  PartReader in(part);
  MemoryImageIndex index;
  index.size = in.GetU64();
  const uint32_t count = in.GetCount(kEncodedRunSize, "memory runs");
  index.runs.reserve(count);
  for (uint32_t i = 0; i < count && in.ok(); ++i) {
    MemoryRun run;
    run.first_page = in.GetU64();
    run.page_count = in.GetU64();
    run.crc32c = in.GetU32();
    index.runs.push_back(run);
  }
  if (absl::Status status = in.Done(); !status.ok()) return status;
  if (std::string problem = IndexProblem(index); !problem.empty()) {
    return absl::Status(
        in.Fail(absl::StrFormat("%s: the snapshot is corrupt; %s", problem, kTakeAgain)));
  }
  return index;
}

absl::StatusOr<GuestMemory> MapMemoryImage(const std::string& dir, const MemoryImageIndex& index,
                                           MemoryImageStats* stats) {
  if (std::string problem = IndexProblem(index); !problem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("memory image index: ", problem));
  }
  const std::string path = snapshot_internal::PathIn(dir, kSnapshotMemoryFile);
  struct stat st;
  absl::StatusOr<UniqueFd> fd = OpenRegular(path, st);
  if (!fd.ok()) return fd.status();
  if (static_cast<uint64_t>(st.st_size) != index.size) {
    return absl::DataLossError(absl::StrFormat(
        "%s '%s' is %d bytes, and the snapshot's state says %d: the two files are not from the "
        "same snapshot, or one was cut short; %s",
        kNoun, path, st.st_size, index.size, kTakeAgain));
  }

  ImageChecker checker(fd->get(), path);
  uint64_t checked_to = 0;  // the end of the last run, in bytes
  for (const MemoryRun& run : index.runs) {
    const uint64_t run_start = run.first_page * kPage;
    if (absl::Status status = CheckOutsideRuns(fd->get(), checker, checked_to, run_start);
        !status.ok()) {
      return status;
    }
    absl::StatusOr<uint32_t> crc = checker.Crc(run_start, run.page_count * kPage);
    if (!crc.ok()) return crc.status();
    if (*crc != run.crc32c) {
      return checker.Error(absl::StrFormat(
          "%s %s: the file is corrupt or was changed after the snapshot was taken; %s",
          PageRange(run.first_page, run.page_count),
          run.page_count == 1 ? "fails its checksum" : "fail their checksum", kTakeAgain));
    }
    checked_to = run_start + run.page_count * kPage;
  }
  if (absl::Status status = CheckOutsideRuns(fd->get(), checker, checked_to, index.size);
      !status.ok()) {
    return status;
  }

  absl::StatusOr<GuestMemory> memory = GuestMemory::MapPrivateFile(fd->get(), index.size);
  if (!memory.ok()) {
    return absl::Status(memory.status().code(),
                        absl::StrFormat("%s '%s': %s", kNoun, path, memory.status().message()));
  }
  if (stats != nullptr) {
    *stats = {.touched_pages = index.touched_pages(),
              .bytes_on_disk = uint64_t(st.st_blocks) * 512};
  }
  return memory;  // the mapping keeps the file; the descriptor closes here
}

}  // namespace sigvisor
