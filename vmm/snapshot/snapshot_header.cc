#include "vmm/snapshot/snapshot_header.h"

#include "absl/strings/str_format.h"

namespace sigvisor {

SnapshotPart EncodeSnapshotHeader(const SnapshotHeader& header) {
  PartWriter out(kSnapshotHeaderPart);
  out.PutString(header.sigvisor_version);
  out.PutU32(header.abi_version);
  out.PutString(header.arch);
  out.PutString(header.host_kind);
  out.PutString(header.guest_kind);
  out.PutString(header.image);
  out.PutString(header.variant);
  out.PutU64(header.image_fnv1a64);
  out.PutU64(header.memory_bytes);
  out.PutU32(header.vcpus);
  out.PutString(header.ipi);
  out.PutString(header.lapic);
  out.PutString(header.trap);
  out.PutString(header.boot_cmdline);
  out.PutU64(header.vm_create_ns);
  out.PutU64(header.boot_ns);
  out.PutU64(header.created_unix_s);
  return std::move(out).Finish();
}

absl::StatusOr<SnapshotHeader> DecodeSnapshotHeader(const SnapshotPart& part) {
  PartReader in(part);
  SnapshotHeader header;
  header.sigvisor_version = in.GetString();
  header.abi_version = in.GetU32();
  header.arch = in.GetString();
  header.host_kind = in.GetString();
  header.guest_kind = in.GetString();
  header.image = in.GetString();
  header.variant = in.GetString();
  header.image_fnv1a64 = in.GetU64();
  header.memory_bytes = in.GetU64();
  header.vcpus = in.GetU32();
  header.ipi = in.GetString();
  header.lapic = in.GetString();
  header.trap = in.GetString();
  header.boot_cmdline = in.GetString();
  header.vm_create_ns = in.GetU64();
  header.boot_ns = in.GetU64();
  header.created_unix_s = in.GetU64();
  if (absl::Status s = in.Done(); !s.ok()) return s;
  return header;
}

absl::Status CheckRestoreHost(const SnapshotHeader& header, const RestoreHost& host,
                              std::string_view dir) {
  std::string differs;
  if (header.arch != host.arch) {
    differs = absl::StrFormat("is of an %s machine, this run is %s", header.arch, host.arch);
  } else if (header.host_kind != host.host_kind) {
    differs =
        absl::StrFormat("was taken on a %s host, this one is %s", header.host_kind, host.host_kind);
  } else if (header.abi_version != host.abi_version) {
    differs = absl::StrFormat("was taken by a sigvisor of guest ABI %u, this one has ABI %u",
                              header.abi_version, host.abi_version);
  } else {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrFormat("snapshot %s %s: take it again here (sigvisor snapshot)", dir, differs));
}

}  // namespace sigvisor
