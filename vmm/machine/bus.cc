#include "vmm/machine/bus.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_format.h"

namespace sigvisor {

const char* AddressSpaceName(AddressSpace space) {
  switch (space) {
    case AddressSpace::kPort: return "port";
    case AddressSpace::kMmio: return "MMIO";
    case AddressSpace::kMsr: return "MSR";
  }
  return "MMIO";
}

namespace {

// "port [0x3f8, 0x3ff]". The last byte is printed rather than the end, which would
// not fit in 64 bits for a range that runs to the top of the address space.
std::string DescribeRange(AddressSpace space, uint64_t base, uint64_t length) {
  return absl::StrFormat("%s [0x%x, 0x%x]", AddressSpaceName(space), base, base + (length - 1));
}

// "port 0x3f9 (1 byte)".
std::string DescribeAccess(AddressSpace space, uint64_t addr, size_t size) {
  return absl::StrFormat("%s 0x%x (%d byte%s)", AddressSpaceName(space), addr, size,
                         size == 1 ? "" : "s");
}

}  // namespace

// Registered ranges never overlap, so only the last one starting at or below `addr`
// can contain it.
const Bus::Range* Bus::FindContaining(AddressSpace space, uint64_t addr) const {
  const std::vector<Range>& ranges = RangesOf(space);
  auto it = std::upper_bound(ranges.begin(), ranges.end(), addr,
                             [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges.begin()) return nullptr;
  --it;
  if (addr - it->base >= it->length) return nullptr;
  return &*it;
}

// Finds the one device whose range holds all of [addr, addr + size). An access that
// straddles a range's end is refused rather than split: no real device decodes half
// of an access, and splitting would hide a guest bug.
absl::StatusOr<Bus::Route> Bus::RouteAccess(AddressSpace space, uint64_t addr,
                                            size_t size) const {
  if (size == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("empty access at %s 0x%x", AddressSpaceName(space), addr));
  }
  const Range* range = FindContaining(space, addr);
  if (range == nullptr) {
    Device* unclaimed = UnclaimedOf(space);
    if (unclaimed == nullptr) {
      return absl::NotFoundError("no device at " + DescribeAccess(space, addr, size));
    }
    // The unclaimed device answers only what lies wholly outside every range: the
    // first range above `addr` must start past the access's last byte.
    const std::vector<Range>& ranges = RangesOf(space);
    auto next = std::upper_bound(ranges.begin(), ranges.end(), addr,
                                 [](uint64_t a, const Range& r) { return a < r.base; });
    if (next != ranges.end() && next->base - addr < size) {
      return absl::NotFoundError(absl::StrFormat(
          "%s runs into \"%s\" at %s", DescribeAccess(space, addr, size), next->device->name(),
          DescribeRange(space, next->base, next->length)));
    }
    return Route{unclaimed, addr};
  }
  const uint64_t offset = addr - range->base;
  if (size > range->length - offset) {
    return absl::NotFoundError(absl::StrFormat(
        "%s runs past the end of \"%s\" at %s", DescribeAccess(space, addr, size),
        range->device->name(), DescribeRange(space, range->base, range->length)));
  }
  return Route{range->device, offset};
}

absl::Status Bus::Register(AddressSpace space, uint64_t base, uint64_t length, Device* device) {
  if (device == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot register a null device at %s 0x%x", AddressSpaceName(space), base));
  }
  if (length == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot register \"%s\" at %s 0x%x: the range is empty", device->name(),
                        AddressSpaceName(space), base));
  }
  // The range's last byte must be addressable; one past it may be 2^64 (a range
  // ending at the top of the space), but nothing may wrap around to low addresses.
  if (length - 1 > std::numeric_limits<uint64_t>::max() - base) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot register \"%s\" at %s 0x%x with length 0x%x: the range overflows 64 bits",
        device->name(), AddressSpaceName(space), base, length));
  }
  const uint64_t last = base + (length - 1);

  std::vector<Range>& ranges = RangesOf(space);
  // Registered ranges never overlap, so the new one can only collide with the first
  // range starting above its base or with the last one starting at or below it.
  auto next = std::upper_bound(ranges.begin(), ranges.end(), base,
                               [](uint64_t a, const Range& r) { return a < r.base; });
  const Range* overlap = nullptr;
  if (next != ranges.end() && next->base <= last) {
    overlap = &*next;
  } else if (next != ranges.begin()) {
    const Range& previous = *std::prev(next);
    if (base - previous.base < previous.length) overlap = &previous;
  }
  if (overlap != nullptr) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "cannot register \"%s\" at %s: it overlaps \"%s\" at %s", device->name(),
        DescribeRange(space, base, length), overlap->device->name(),
        DescribeRange(space, overlap->base, overlap->length)));
  }
  ranges.insert(next, Range{base, length, device});
  return absl::OkStatus();
}

absl::StatusOr<DeviceAction> Bus::Read(AddressSpace space, uint64_t addr,
                                       std::span<uint8_t> data) {
  absl::StatusOr<absl::StatusOr<DeviceAction>> done = WithDevice(
      space, addr, data.size(),
      [&](Device& device, uint64_t offset) { return device.Read(offset, data); });
  if (!done.ok()) return done.status();
  return *std::move(done);
}

absl::StatusOr<DeviceAction> Bus::Write(AddressSpace space, uint64_t addr,
                                        std::span<const uint8_t> data) {
  absl::StatusOr<absl::StatusOr<DeviceAction>> done = WithDevice(
      space, addr, data.size(),
      [&](Device& device, uint64_t offset) { return device.Write(offset, data); });
  if (!done.ok()) return done.status();
  return *std::move(done);
}

Device* Bus::Find(AddressSpace space, uint64_t addr) const {
  const Range* range = FindContaining(space, addr);
  return range == nullptr ? nullptr : range->device;
}

std::string Bus::AccessName(AddressSpace space, uint64_t addr) const {
  const Range* range = FindContaining(space, addr);
  if (range == nullptr) {
    Device* unclaimed = UnclaimedOf(space);
    return unclaimed == nullptr ? "nothing" : unclaimed->AccessName(addr);
  }
  return range->device->AccessName(addr - range->base);
}

}  // namespace sigvisor
