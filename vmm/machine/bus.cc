#include "vmm/machine/bus.h"

#include <iterator>
#include <limits>
#include <string>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

const char* SpaceName(AddressSpace space) {
  return space == AddressSpace::kPort ? "port" : "MMIO";
}

// "port [0x3f8, 0x3ff]". The last byte is printed rather than the end, which would
// not fit in 64 bits for a range that runs to the top of the address space.
std::string DescribeRange(AddressSpace space, uint64_t base, uint64_t length) {
  return absl::StrFormat("%s [0x%x, 0x%x]", SpaceName(space), base, base + (length - 1));
}

// "port 0x3f9 (1 byte)".
std::string DescribeAccess(AddressSpace space, uint64_t addr, size_t size) {
  return absl::StrFormat("%s 0x%x (%d byte%s)", SpaceName(space), addr, size,
                         size == 1 ? "" : "s");
}

// The entry of `ranges` whose range contains `addr`, or ranges.end(). Registered
// ranges never overlap, so only the last one starting at or below `addr` can.
// (A template because the map's value type, Bus::Range, is private to Bus.)
template <typename RangeMap>
typename RangeMap::const_iterator FindContaining(const RangeMap& ranges, uint64_t addr) {
  auto it = ranges.upper_bound(addr);
  if (it == ranges.begin()) return ranges.end();
  --it;
  if (addr - it->first >= it->second.length) return ranges.end();
  return it;
}

// Where an access lands: the device, and the offset into its registered range.
struct Route {
  Device* device;
  uint64_t offset;
};

// Finds the one device whose range holds all of [addr, addr + size). An access that
// straddles a range's end is refused rather than split: no real device decodes half
// of an access, and splitting would hide a guest bug.
template <typename RangeMap>
absl::StatusOr<Route> RouteAccess(const RangeMap& ranges, AddressSpace space, uint64_t addr,
                                  size_t size) {
  if (size == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("empty access at %s 0x%x", SpaceName(space), addr));
  }
  auto it = FindContaining(ranges, addr);
  if (it == ranges.end()) {
    return absl::NotFoundError("no device at " + DescribeAccess(space, addr, size));
  }
  const uint64_t base = it->first;
  const uint64_t length = it->second.length;
  Device* device = it->second.device;
  const uint64_t offset = addr - base;
  if (size > length - offset) {
    return absl::NotFoundError(absl::StrFormat(
        "%s runs past the end of \"%s\" at %s", DescribeAccess(space, addr, size),
        device->name(), DescribeRange(space, base, length)));
  }
  return Route{device, offset};
}

}  // namespace

absl::Status Bus::Register(AddressSpace space, uint64_t base, uint64_t length, Device* device) {
  if (device == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot register a null device at %s 0x%x", SpaceName(space), base));
  }
  if (length == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot register \"%s\" at %s 0x%x: the range is empty", device->name(),
        SpaceName(space), base));
  }
  // The range's last byte must be addressable; one past it may be 2^64 (a range
  // ending at the top of the space), but nothing may wrap around to low addresses.
  if (length - 1 > std::numeric_limits<uint64_t>::max() - base) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot register \"%s\" at %s 0x%x with length 0x%x: the range overflows 64 bits",
        device->name(), SpaceName(space), base, length));
  }
  const uint64_t last = base + (length - 1);

  std::map<uint64_t, Range>& ranges = RangesOf(space);
  // Registered ranges never overlap, so the new one can only collide with the first
  // range starting above its base or with the last one starting at or below it.
  auto next = ranges.upper_bound(base);
  auto overlap = ranges.end();
  if (next != ranges.end() && next->first <= last) {
    overlap = next;
  } else if (next != ranges.begin()) {
    auto previous = std::prev(next);
    if (base - previous->first < previous->second.length) overlap = previous;
  }
  if (overlap != ranges.end()) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "cannot register \"%s\" at %s: it overlaps \"%s\" at %s", device->name(),
        DescribeRange(space, base, length), overlap->second.device->name(),
        DescribeRange(space, overlap->first, overlap->second.length)));
  }
  ranges.emplace(base, Range{length, device});
  return absl::OkStatus();
}

absl::StatusOr<DeviceAction> Bus::Read(AddressSpace space, uint64_t addr,
                                       std::span<uint8_t> data) {
  absl::StatusOr<Route> route = RouteAccess(RangesOf(space), space, addr, data.size());
  if (!route.ok()) return route.status();
  std::lock_guard<std::mutex> lock(dispatch_);
  return route->device->Read(route->offset, data);
}

absl::StatusOr<DeviceAction> Bus::Write(AddressSpace space, uint64_t addr,
                                        std::span<const uint8_t> data) {
  absl::StatusOr<Route> route = RouteAccess(RangesOf(space), space, addr, data.size());
  if (!route.ok()) return route.status();
  std::lock_guard<std::mutex> lock(dispatch_);
  return route->device->Write(route->offset, data);
}

Device* Bus::Find(AddressSpace space, uint64_t addr) const {
  const std::map<uint64_t, Range>& ranges = RangesOf(space);
  auto it = FindContaining(ranges, addr);
  return it == ranges.end() ? nullptr : it->second.device;
}

std::string Bus::AccessName(AddressSpace space, uint64_t addr) const {
  const std::map<uint64_t, Range>& ranges = RangesOf(space);
  auto it = FindContaining(ranges, addr);
  if (it == ranges.end()) return "nothing";
  return it->second.device->AccessName(addr - it->first);
}

}  // namespace sigvisor
