#include "vmm/snapshot/snapshot_dir.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sigvisor::snapshot_internal {
namespace {

// Linux writes at most this much in one call (MAX_RW_COUNT); asking for less keeps
// each call's progress visible and the arithmetic far from ssize_t's limit.
constexpr size_t kMaxWrite = size_t{1} << 30;

// What the user can do about a failed write.
std::string_view Advice(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return "free space there or choose another snapshot directory";
    case EACCES:
    case EPERM:
    case EROFS:
      return "choose a snapshot directory you can write";
    default:
      return "the snapshot was not written";
  }
}

}  // namespace

std::string PathIn(const std::string& dir, std::string_view name) {
  if (!dir.empty() && dir.back() == '/') return absl::StrFormat("%s%s", dir, name);
  return absl::StrFormat("%s/%s", dir, name);
}

absl::Status MakeSnapshotDir(const std::string& dir) {
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        "the snapshot directory is an empty path; give the directory to write it in");
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "snapshot directory '%s' exists and is not a directory; give a directory (one that "
        "does not exist is created)",
        dir));
  }
  if (errno != ENOENT) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot use snapshot directory '%s': %s", dir, std::strerror(errno)));
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    const int error = errno;
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot create snapshot directory '%s': %s%s", dir, std::strerror(error),
        error == ENOENT ? "; its parent must exist (only the last level is created)" : ""));
  }
  // EEXIST: made by someone else meanwhile; still it must be a directory.
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("snapshot directory '%s' could not be made a directory", dir));
  }
  return absl::OkStatus();
}

absl::StatusOr<AtomicFile> AtomicFile::Create(const std::string& dir, std::string_view name,
                                              std::string_view noun) {
  std::string path = PathIn(dir, name);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s '%s' is a directory, not a regular file; remove it or choose another snapshot "
        "directory",
        noun, path));
  }
  std::string temporary = PathIn(dir, absl::StrFormat(".%s.XXXXXX", name));
  // mkostemp: a name no other writer has, created 0600.
  UniqueFd fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!fd.valid()) {
    const int error = errno;
    return absl::InvalidArgumentError(absl::StrFormat("cannot write %s '%s': %s; %s", noun, path,
                                                      std::strerror(error), Advice(error)));
  }
  return AtomicFile(dir, std::move(path), std::move(temporary), std::string(noun), std::move(fd));
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : dir_(std::move(other.dir_)),
      path_(std::move(other.path_)),
      temporary_(std::exchange(other.temporary_, "")),
      noun_(std::move(other.noun_)),
      fd_(std::move(other.fd_)) {}

AtomicFile::~AtomicFile() {
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

absl::Status AtomicFile::Failed(std::string_view doing, int error) const {
  return absl::DataLossError(absl::StrFormat("cannot %s %s '%s': %s; %s", doing, noun_, path_,
                                             std::strerror(error), Advice(error)));
}

absl::Status AtomicFile::WriteAt(uint64_t offset, std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    const size_t want = std::min(bytes.size(), kMaxWrite);
    const ssize_t n = ::pwrite(fd_.get(), bytes.data(), want, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Failed("write", errno);
    }
    // pwrite to a regular file writes something unless the disk is full.
    if (n == 0) return Failed("write", ENOSPC);
    bytes = bytes.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::SetSize(uint64_t size) {
  if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) return Failed("write", errno);
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (temporary_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s '%s' is written already", noun_, path_));
  }
  // On disk before it has the name: after a crash DIR/NAME is the old file or the whole
  // new one, never a new name over blocks not yet written.
  if (::fsync(fd_.get()) != 0) return Failed("write", errno);
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) return Failed("write", errno);
  temporary_.clear();
  // The rename itself is on disk once the directory is. Some file systems do not fsync
  // a directory (EINVAL); there the rename is as durable as they make it.
  UniqueFd dir_fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.valid() && ::fsync(dir_fd.get()) != 0 && errno != EINVAL) {
    return Failed("write", errno);
  }
  return absl::OkStatus();
}

}  // namespace sigvisor::snapshot_internal
