#include "vmm/kvm/stats_fd.h"

#include <linux/kvm.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "vmm/kvm/kvm_error.h"
#include "vmm/kvm/kvm_layouts.h"

namespace sigvisor {
namespace {

absl::Status PreadExact(int fd, void* buf, size_t len, off_t offset, const char* what) {
  ssize_t n = ::pread(fd, buf, len, offset);
  if (n < 0) return ErrnoError(absl::StrFormat("read of KVM stats %s", what), errno);
  if (static_cast<size_t>(n) != len) {
    return absl::DataLossError(
        absl::StrFormat("short read of KVM stats %s: %d of %d bytes", what, n, len));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StatsFd> StatsFd::Open(UniqueFd fd) {
  kvm_stats_header header;
  if (absl::Status s = PreadExact(fd.get(), &header, sizeof(header), 0, "header"); !s.ok()) {
    return s;
  }
  // Each descriptor is the fixed struct followed by a name of header.name_size bytes.
  const size_t desc_size = sizeof(KvmStatsDescFixed) + header.name_size;
  if (header.num_desc > 4096 || header.name_size > 1024) {
    return absl::DataLossError("KVM stats header is implausible");
  }
  std::vector<uint8_t> raw(desc_size * header.num_desc);
  if (absl::Status s =
          PreadExact(fd.get(), raw.data(), raw.size(), header.desc_offset, "descriptors");
      !s.ok()) {
    return s;
  }
  std::vector<Descriptor> descriptors;
  size_t data_size = 0;
  for (uint32_t i = 0; i < header.num_desc; ++i) {
    KvmStatsDescFixed desc;
    std::memcpy(&desc, raw.data() + i * desc_size, sizeof(desc));
    const char* name = reinterpret_cast<const char*>(raw.data() + i * desc_size + sizeof(desc));
    descriptors.push_back(Descriptor{std::string(name, strnlen(name, header.name_size)),
                                     desc.offset, desc.size, desc.flags});
    data_size = std::max<size_t>(data_size, desc.offset + desc.size * sizeof(uint64_t));
  }
  return StatsFd(std::move(fd), std::move(descriptors), header.data_offset, data_size);
}

absl::StatusOr<StatsSnapshot> StatsFd::Read() const {
  std::vector<uint8_t> data(data_size_);
  if (absl::Status s = PreadExact(fd_.get(), data.data(), data.size(), data_offset_, "data");
      !s.ok()) {
    return s;
  }
  StatsSnapshot snapshot;
  for (const Descriptor& d : descriptors_) {
    if (d.size != 1) continue;  // histograms are not scalars
    uint64_t value;
    std::memcpy(&value, data.data() + d.offset, sizeof(value));
    snapshot[d.name] = value;
  }
  return snapshot;
}

std::vector<std::string> StatsFd::names() const {
  std::vector<std::string> names;
  for (const Descriptor& d : descriptors_) names.push_back(d.name);
  return names;
}

}  // namespace sigvisor
