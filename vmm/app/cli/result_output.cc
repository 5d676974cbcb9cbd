#include "vmm/app/cli/result_output.h"

#include <stdio_ext.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"

namespace sigvisor::cli {

namespace {

// CloseChecked, with the errno of a write that is known to have failed (0: none).
std::string CloseWithError(FILE* stream, int known_errno) {
  const bool failed_before = std::ferror(stream) != 0;
  const bool pending = __fpending(stream) != 0;
  errno = 0;
  const bool flush_failed = std::fflush(stream) != 0;
  int error = flush_failed ? errno : 0;
  errno = 0;
  // A stream whose descriptor was never open (`>&-`) and that nothing was written to
  // has lost nothing (as coreutils' close_stream).
  const bool close_failed = std::fclose(stream) != 0 && (pending || errno != EBADF);
  if (close_failed && error == 0) error = errno;
  if (known_errno == 0 && !failed_before && !flush_failed && !close_failed) return "";
  if (known_errno != 0) error = known_errno;
  return error != 0 ? std::strerror(error) : "a write failed";
}

// The first errno a write to stdout failed with (WatchStdout), 0 if none.
int stdout_errno = 0;

ssize_t WriteStdout(void* /*cookie*/, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(STDOUT_FILENO, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (stdout_errno == 0) stdout_errno = n < 0 ? errno : EIO;
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    }
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

int CloseStdout(void* /*cookie*/) { return ::close(STDOUT_FILENO); }

}  // namespace

std::string CloseChecked(FILE* stream) { return CloseWithError(stream, 0); }

void WatchStdout() {
  const cookie_io_functions_t functions = {
      .read = nullptr, .write = WriteStdout, .seek = nullptr, .close = CloseStdout};
  FILE* watched = fopencookie(nullptr, "w", functions);
  if (watched == nullptr) return;
  // As glibc buffers stdout: by line on a terminal, else in blocks; a buffer of its
  // own, so that the first write (perhaps the guest's console, in the run loop's
  // sandbox) allocates nothing.
  static char buffer[BUFSIZ];
  std::setvbuf(watched, buffer, ::isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, sizeof buffer);
  std::fflush(stdout);
  stdout = watched;
}

int FinishStdout(std::string_view what, int status) {
  std::string reason = CloseChecked(stdout);
  if (reason.empty()) return status;
  if (stdout_errno != 0) reason = std::strerror(stdout_errno);
  std::fprintf(stderr, "sigvisor: error: stdout: %.*s was not written: %s\n",
               static_cast<int>(what.size()), what.data(), reason.c_str());
  return kExitResultLost;
}

absl::StatusOr<ResultFile> ResultFile::Create(std::string_view flag, std::string path,
                                              std::string what) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s '%s' is a directory; give the path of a file", flag, path));
  }
  ResultFile file(std::string(flag), std::move(path), std::move(what));
  // Only a regular file (or none) is replaced by renaming: a device, a FIFO or a
  // symbolic link is written through.
  const bool in_place = ::lstat(file.path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (!in_place) file.temporary_ = file.path_ + ".partial";
  file.stream_ = std::fopen(in_place ? file.path_.c_str() : file.temporary_.c_str(), "wb");
  if (file.stream_ == nullptr) {
    const int error = errno;
    file.temporary_.clear();  // not created
    return absl::InvalidArgumentError(absl::StrFormat("%s '%s': cannot write there: %s", flag,
                                                      file.path_, std::strerror(error)));
  }
  return file;
}

ResultFile::ResultFile(ResultFile&& other) noexcept
    : flag_(std::move(other.flag_)),
      path_(std::move(other.path_)),
      what_(std::move(other.what_)),
      temporary_(std::exchange(other.temporary_, "")),
      stream_(std::exchange(other.stream_, nullptr)) {}

ResultFile::~ResultFile() { Discard(); }

void ResultFile::Discard() {
  if (stream_ != nullptr) std::fclose(std::exchange(stream_, nullptr));
  if (!temporary_.empty()) std::remove(std::exchange(temporary_, "").c_str());
}

absl::Status ResultFile::Write(std::string_view bytes) {
  if (stream_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s '%s': written already", flag_, path_));
  }
  errno = 0;
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), stream_) == bytes.size();
  const std::string reason =
      CloseWithError(std::exchange(stream_, nullptr), written ? 0 : (errno ? errno : EIO));
  if (!reason.empty()) {
    Discard();
    return absl::DataLossError(
        absl::StrFormat("%s '%s': %s was not written: %s", flag_, path_, what_, reason));
  }
  if (!temporary_.empty() && std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    Discard();
    return absl::DataLossError(absl::StrFormat("%s '%s': %s was not written: %s", flag_, path_,
                                               what_, std::strerror(error)));
  }
  temporary_.clear();
  return absl::OkStatus();
}

}  // namespace sigvisor::cli
