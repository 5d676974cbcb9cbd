#include "arch/x86_64/vmm/machine/saved_vm.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/snapshot/snapshot_file.h"

namespace sigvisor::x86 {
namespace {

constexpr char kCpuidPart[] = "cpuid";
constexpr char kVcpuPartPrefix[] = "vcpu";

// "vcpu" and a number: a vCPU's part, whichever.
bool IsVcpuPart(std::string_view name) {
  const std::string_view prefix = kVcpuPartPrefix;
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The machine's own parts; every other one is the board's.
bool IsMachinePart(std::string_view name) {
  return name == kSnapshotHeaderPart || name == kCpuidPart || IsVcpuPart(name) ||
         name == kMemoryIndexPartName;
}

SnapshotPart EncodeCpuid(std::span<const kvm_cpuid_entry2> cpuid) {
  PartWriter out(kCpuidPart);
  out.PutU32(static_cast<uint32_t>(cpuid.size()));
  for (const kvm_cpuid_entry2& entry : cpuid) out.PutStruct(entry);
  return std::move(out).Finish();
}

absl::StatusOr<std::vector<kvm_cpuid_entry2>> DecodeCpuid(const SnapshotPart& part) {
  PartReader in(part);
  std::vector<kvm_cpuid_entry2> cpuid;
  const uint32_t count = in.GetCount(4 + sizeof(kvm_cpuid_entry2), "CPUID entries");
  for (uint32_t i = 0; i < count && in.ok(); ++i) {
    cpuid.push_back(in.GetStruct<kvm_cpuid_entry2>("kvm_cpuid_entry2"));
  }
  if (absl::Status s = in.Done(); !s.ok()) return s;
  return cpuid;
}

bool SameEntry(const kvm_cpuid_entry2& a, const kvm_cpuid_entry2& b) {
  return a.function == b.function && a.index == b.index && a.flags == b.flags && a.eax == b.eax &&
         a.ebx == b.ebx && a.ecx == b.ecx && a.edx == b.edx;
}

}  // namespace

std::string VcpuPartName(int index) { return absl::StrCat(kVcpuPartPrefix, index); }

SnapshotHeader NewSnapshotHeader(uint64_t image_fnv1a64, std::string image_name,
                                 std::string variant, std::string sigvisor_version,
                                 std::string host_kind) {
  return {.sigvisor_version = std::move(sigvisor_version),
          .abi_version = SIGVISOR_ABI_VERSION,
          .arch = "x86_64",
          .host_kind = std::move(host_kind),
          .guest_kind = "sigvisor",
          .image = std::move(image_name),
          .variant = std::move(variant),
          .image_fnv1a64 = image_fnv1a64,
          .created_unix_s = static_cast<uint64_t>(std::time(nullptr))};
}

absl::StatusOr<const SnapshotPart*> DevicePart(const SavedVm& vm, std::string_view name) {
  return FindSnapshotPart(vm.devices, name, vm.dir + "/state");
}

absl::Status WriteSavedVm(SavedVm& vm, const GuestMemory& memory) {
  absl::StatusOr<std::span<const uint8_t>> ram = memory.Span(0, memory.size());
  if (!ram.ok()) return ram.status();
  MemoryImageStats stats;
  absl::StatusOr<MemoryImageIndex> index = WriteMemoryImage(vm.dir, *ram, &stats);
  if (!index.ok()) return index.status();
  vm.memory = *std::move(index);
  vm.memory_disk_bytes = stats.bytes_on_disk;
  if (vm.aps.size() + 1 != vm.header.vcpus) {
    return absl::InternalError(absl::StrFormat("a VM of %d vCPUs with the state of %d",
                                               vm.header.vcpus, vm.aps.size() + 1));
  }
  std::vector<SnapshotPart> parts = {EncodeSnapshotHeader(vm.header), EncodeCpuid(vm.cpuid),
                                     EncodeVcpu(vm.vcpu, VcpuPartName(0))};
  for (size_t i = 0; i < vm.aps.size(); ++i) {
    parts.push_back(EncodeVcpu(vm.aps[i], VcpuPartName(static_cast<int>(i) + 1)));
  }
  parts.push_back(EncodeMemoryIndex(vm.memory));
  for (const SnapshotPart& device : vm.devices) {
    if (IsMachinePart(device.name)) {
      return absl::InternalError(absl::StrFormat(
          "a board's snapshot part is named '%s', which is the machine's", device.name));
    }
    parts.push_back(device);
  }
  absl::StatusOr<uint64_t> state_bytes = WriteSnapshotState(vm.dir, parts);
  if (!state_bytes.ok()) return state_bytes.status();
  vm.state_bytes = *state_bytes;
  return absl::OkStatus();
}

absl::StatusOr<SavedVm> ReadSavedVm(const std::string& dir) {
  absl::StatusOr<std::vector<SnapshotPart>> parts = ReadSnapshotState(dir);
  if (!parts.ok()) return parts.status();
  const std::string what = dir + "/state";
  SavedVm vm;
  vm.dir = dir;
  absl::StatusOr<const SnapshotPart*> header = FindSnapshotPart(*parts, kSnapshotHeaderPart, what);
  if (!header.ok()) return header.status();
  absl::StatusOr<SnapshotHeader> decoded_header = DecodeSnapshotHeader(**header);
  if (!decoded_header.ok()) return decoded_header.status();
  vm.header = *std::move(decoded_header);
  absl::StatusOr<const SnapshotPart*> cpuid = FindSnapshotPart(*parts, kCpuidPart, what);
  if (!cpuid.ok()) return cpuid.status();
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> decoded_cpuid = DecodeCpuid(**cpuid);
  if (!decoded_cpuid.ok()) return decoded_cpuid.status();
  vm.cpuid = *std::move(decoded_cpuid);
  if (vm.header.vcpus == 0) {
    return absl::DataLossError(absl::StrFormat("snapshot %s: its header says 0 vCPUs", what));
  }
  // Every vCPU the header names has its part (the state file's cap bounds how many).
  for (uint32_t index = 0; index < vm.header.vcpus; ++index) {
    absl::StatusOr<const SnapshotPart*> vcpu =
        FindSnapshotPart(*parts, VcpuPartName(static_cast<int>(index)), what);
    if (!vcpu.ok()) return vcpu.status();
    absl::StatusOr<VcpuSnapshot> decoded_vcpu = DecodeVcpu(**vcpu);
    if (!decoded_vcpu.ok()) return decoded_vcpu.status();
    (index == 0 ? vm.vcpu : vm.aps.emplace_back()) = *std::move(decoded_vcpu);
  }
  absl::StatusOr<const SnapshotPart*> memory = FindSnapshotPart(*parts, kMemoryIndexPartName, what);
  if (!memory.ok()) return memory.status();
  absl::StatusOr<MemoryImageIndex> index = DecodeMemoryIndex(**memory);
  if (!index.ok()) return index.status();
  vm.memory = *std::move(index);
  if (vm.memory.size != vm.header.memory_bytes) {
    return absl::DataLossError(absl::StrFormat(
        "snapshot %s: its header says %d bytes of guest memory, its memory index %d", what,
        vm.header.memory_bytes, vm.memory.size));
  }
  for (SnapshotPart& part : *parts) {
    if (!IsMachinePart(part.name)) vm.devices.push_back(std::move(part));
  }
  return vm;
}

absl::StatusOr<GuestMemory> MapSavedMemory(const SavedVm& vm) {
  return MapMemoryImage(vm.dir, vm.memory);
}

absl::Status CheckSnapshotFits(const SavedVm& saved, std::string_view guest_kind,
                               std::string_view board_restores, std::string_view noun,
                               uint64_t image_fnv1a64, uint64_t memory_bytes, int vcpus) {
  const SnapshotHeader& header = saved.header;
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("snapshot %s %s", saved.dir, why));
  };
  if (header.guest_kind != guest_kind) {
    return refuse(absl::StrFormat("holds a %s guest; this board restores %s", header.guest_kind,
                                  board_restores));
  }
  if (image_fnv1a64 != header.image_fnv1a64) {
    return refuse(absl::StrFormat(
        "was taken of another %s (%s, FNV-1a %#018x), not of this one (FNV-1a %#018x): "
        "take it again with this %s",
        noun, header.image, header.image_fnv1a64, image_fnv1a64, noun));
  }
  if (memory_bytes != header.memory_bytes || vcpus < 0 ||
      static_cast<uint32_t>(vcpus) != header.vcpus) {
    return refuse(
        absl::StrFormat("has %d MiB of guest memory and %d vCPU%s; the run asks for %d MiB and %d",
                        header.memory_bytes >> 20, header.vcpus, header.vcpus == 1 ? "" : "s",
                        memory_bytes >> 20, vcpus));
  }
  return absl::OkStatus();
}

namespace {

// CPUID leaf 0's vendor is AMD's or Hygon's: KVM runs the guest with SVM.
bool IsAmdVendor(std::span<const kvm_cpuid_entry2> cpuid) {
  for (const kvm_cpuid_entry2& entry : cpuid) {
    if (entry.function != 0) continue;
    return entry.ebx == 0x68747541 /* "Auth" */ || entry.ebx == 0x6f677948 /* "Hygo" */;
  }
  return false;
}

}  // namespace

VcpuSnapshot VcpuToRestore(const SavedVm& vm, const VcpuSnapshot& saved) {
  VcpuSnapshot state = saved;
  constexpr uint8_t kTssBusy = 11, kTssAvailable = 9;
  if (IsAmdVendor(vm.cpuid) && state.sregs.tr.selector != 0 && state.sregs.tr.type == kTssBusy) {
    state.sregs.tr.type = kTssAvailable;
  }
  return state;
}

absl::Status CheckSameCpuid(const SavedVm& vm, std::span<const kvm_cpuid_entry2> here) {
  // The first difference, named, so that a refusal says what changed.
  std::string differs;
  if (vm.cpuid.size() != here.size()) {
    differs = absl::StrFormat("%d leaves saved, %d here", vm.cpuid.size(), here.size());
  }
  for (size_t i = 0; differs.empty() && i < here.size(); ++i) {
    const kvm_cpuid_entry2& a = vm.cpuid[i];
    const kvm_cpuid_entry2& b = here[i];
    if (SameEntry(a, b)) continue;
    differs = absl::StrFormat(
        "leaf %#x.%d: eax ebx ecx edx %08x %08x %08x %08x saved, %08x %08x %08x %08x here",
        b.function, b.index, a.eax, a.ebx, a.ecx, a.edx, b.eax, b.ebx, b.ecx, b.edx);
    if (a.function != b.function || a.index != b.index || a.flags != b.flags) {
      differs = absl::StrFormat("entry %d is leaf %#x.%d saved, %#x.%d here", i, a.function,
                                a.index, b.function, b.index);
    }
  }
  if (differs.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "snapshot %s was taken on a CPU with other features (its CPUID differs from the one "
      "this host gives the guest: %s): take it again here",
      vm.dir, differs));
}

}  // namespace sigvisor::x86
