// KVM's binary statistics (KVM_GET_STATS_FD), read by name as the KVM selftests do
// with vcpu_get_stat(vcpu, "exits").
#ifndef SIGVISOR_VMM_KVM_STATS_FD_H_
#define SIGVISOR_VMM_KVM_STATS_FD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/base/stats_snapshot.h"
#include "vmm/base/unique_fd.h"

namespace sigvisor {

class StatsFd {
 public:
  // Takes ownership of a descriptor from KVM_GET_STATS_FD and reads its schema.
  static absl::StatusOr<StatsFd> Open(UniqueFd fd);

  // Reads every scalar (size 1) statistic. One pread of the data block.
  absl::StatusOr<StatsSnapshot> Read() const;

  std::vector<std::string> names() const;

 private:
  struct Descriptor {
    std::string name;
    uint32_t offset;  // bytes into the data block
    uint16_t size;    // in u64 elements
    uint32_t flags;
  };
  StatsFd(UniqueFd fd, std::vector<Descriptor> descriptors, uint32_t data_offset,
          size_t data_size)
      : fd_(std::move(fd)),
        descriptors_(std::move(descriptors)),
        data_offset_(data_offset),
        data_size_(data_size) {}

  UniqueFd fd_;
  std::vector<Descriptor> descriptors_;
  uint32_t data_offset_;
  size_t data_size_;  // bytes
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_KVM_STATS_FD_H_
