// The snapshot directory and how its files are written (internal to //vmm/snapshot):
// each under a temporary name beside it, renamed into place once complete and on disk.
// Renaming, not rewriting in place, matters beyond tidiness: a VM restored from
// DIR/memory maps it MAP_PRIVATE, and a page it has not written still reads through to
// the file, so a snapshot written over the same inode would change that VM's memory
// under it. A rename leaves the old inode to those still mapping it.
#ifndef SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_DIR_H_
#define SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_DIR_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/base/unique_fd.h"

namespace sigvisor::snapshot_internal {

// DIR/NAME.
std::string PathIn(const std::string& dir, std::string_view name);

// Makes sure `dir` is a directory: creates it when missing (one level, mode 0700: guest
// memory and vCPU state can hold the guest's secrets), refuses a path that is anything
// else.
absl::Status MakeSnapshotDir(const std::string& dir);

// One file of the snapshot, being written: DIR/.NAME.XXXXXX (mode 0600) until Commit
// renames it to DIR/NAME. Dropped without Commit, it removes the temporary file.
class AtomicFile {
 public:
  // `noun` names the file in errors: "snapshot state" gives "cannot write snapshot
  // state '/d/state': ...". DIR must exist (MakeSnapshotDir); DIR/NAME may not be a
  // directory.
  static absl::StatusOr<AtomicFile> Create(const std::string& dir, std::string_view name,
                                           std::string_view noun);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // All of `bytes` at `offset` (short writes continued, EINTR retried).
  absl::Status WriteAt(uint64_t offset, std::span<const uint8_t> bytes);
  // Sets the file's length; what is not written reads as zeros (a hole).
  absl::Status SetSize(uint64_t size);
  // fsync, rename to DIR/NAME, fsync DIR: once this returns OK, the file is complete
  // under its name and survives a crash. The descriptor stays open (fd()).
  absl::Status Commit();

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string dir, std::string path, std::string temporary, std::string noun,
             UniqueFd fd)
      : dir_(std::move(dir)),
        path_(std::move(path)),
        temporary_(std::move(temporary)),
        noun_(std::move(noun)),
        fd_(std::move(fd)) {}
  absl::Status Failed(std::string_view doing, int error) const;

  std::string dir_;
  std::string path_;
  std::string temporary_;  // empty once renamed (or moved from)
  std::string noun_;
  UniqueFd fd_;
};

}  // namespace sigvisor::snapshot_internal

#endif  // SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_DIR_H_
