#include "vmm/base/capped_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/base/unique_fd.h"

namespace sigvisor {
namespace {

constexpr size_t kFirstChunk = size_t{64} << 10;  // when the size is unknown (procfs)

std::string Named(const FileRole& role, const std::string& path) {
  return role.noun.empty() ? absl::StrCat("'", path, "'")
                           : absl::StrCat(role.noun, " '", path, "'");
}

// What a file that is not a regular file is, or nullptr when it is none of these.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return nullptr;
}

absl::Status NotRegular(const FileRole& role, const std::string& path, mode_t mode) {
  const char* kind = KindOf(mode);
  return absl::InvalidArgumentError(absl::StrCat(role.context, Named(role, path), " is ",
                                                 kind ? kind : "not a regular file",
                                                 kind ? ", not a regular file" : ""));
}

absl::Status TooLarge(const FileRole& role, const std::string& path, uint64_t cap) {
  return absl::InvalidArgumentError(
      absl::StrCat(role.context, Named(role, path), " is larger than ", CapText(cap)));
}

absl::Status CannotOpen(const FileRole& role, const std::string& path, int error) {
  return absl::NotFoundError(absl::StrCat(role.context, role.cannot_open, " ",
                                          Named(role, path), ": ", std::strerror(error)));
}

template <typename Buffer>
absl::StatusOr<Buffer> ReadCapped(const std::string& path, uint64_t cap_bytes,
                                  const FileRole& role) {
  // Looked at before it is opened: opening a device can act on it (a tape rewinds, a
  // watchdog starts) and opening a FIFO blocks until a writer comes.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return CannotOpen(role, path, errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(role, path, st.st_mode);
  if (static_cast<uint64_t>(st.st_size) > cap_bytes) return TooLarge(role, path, cap_bytes);

  // O_NONBLOCK: the path may have become a FIFO since the stat.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return CannotOpen(role, path, errno);
  if (::fstat(fd.get(), &st) != 0) return CannotOpen(role, path, errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(role, path, st.st_mode);

  // One byte past the cap is room enough to tell "over the cap" from "at it".
  const uint64_t limit =
      std::min<uint64_t>(cap_bytes, std::numeric_limits<size_t>::max() / 2 - 1);
  // st_size is a hint only: procfs files say 0, and a file can grow while it is read.
  size_t want = static_cast<size_t>(
      std::min<uint64_t>(static_cast<uint64_t>(st.st_size), limit) + 1);
  Buffer bytes;
  size_t filled = 0;
  try {
    bytes.resize(want);
    for (;;) {
      if (filled == bytes.size()) {
        // filled <= limit here, so this grows.
        want = static_cast<size_t>(
            std::min<uint64_t>(std::max<uint64_t>(uint64_t{filled} * 2, kFirstChunk), limit + 1));
        bytes.resize(want);
      }
      const ssize_t n = ::read(fd.get(), bytes.data() + filled, bytes.size() - filled);
      if (n < 0) {
        if (errno == EINTR) continue;
        return absl::DataLossError(absl::StrCat(role.context, "cannot read ", Named(role, path),
                                                ": ", std::strerror(errno)));
      }
      if (n == 0) break;
      filled += static_cast<size_t>(n);
      if (filled > limit) return TooLarge(role, path, cap_bytes);
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        role.context, "cannot read ", Named(role, path), ": no memory for ", want, " bytes"));
  }
  bytes.resize(filled);
  return bytes;
}

}  // namespace

std::string CapText(uint64_t bytes) {
  if (bytes != 0 && bytes % (uint64_t{1} << 20) == 0) return absl::StrCat(bytes >> 20, " MiB");
  if (bytes != 0 && bytes % (uint64_t{1} << 10) == 0) return absl::StrCat(bytes >> 10, " KiB");
  return absl::StrCat(bytes, bytes == 1 ? " byte" : " bytes");
}

absl::StatusOr<std::string> ReadCappedFile(const std::string& path, uint64_t cap_bytes,
                                           const FileRole& role) {
  return ReadCapped<std::string>(path, cap_bytes, role);
}

absl::StatusOr<std::vector<uint8_t>> ReadCappedFileBytes(const std::string& path,
                                                         uint64_t cap_bytes,
                                                         const FileRole& role) {
  return ReadCapped<std::vector<uint8_t>>(path, cap_bytes, role);
}

}  // namespace sigvisor
