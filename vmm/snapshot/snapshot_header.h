// The first part of every snapshot ("header"): what was saved, by whom, on what, so
// that a restore refuses, before a vCPU runs, a snapshot it cannot reproduce exactly:
// one from another host kind (or another CPU: the CPUID is the arch's own part),
// another guest ABI, another image, another size of machine.
#ifndef SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_HEADER_H_
#define SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_HEADER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace sigvisor {

inline constexpr char kSnapshotHeaderPart[] = "header";

struct SnapshotHeader {
  std::string sigvisor_version;  // VersionLine() of the binary that saved it (reports)
  uint32_t abi_version = 0;      // SIGVISOR_ABI_VERSION of that binary
  std::string arch;              // "x86_64"
  std::string host_kind;         // "pvm" | "hardware" (probe.h's HostInfo::kind)
  std::string guest_kind;        // the boot protocol it was booted by: "sigvisor"
  // The image as the command named it: a bundled build ("baseline") or a file path,
  // and the FNV-1a 64 of its bytes.
  std::string image;
  std::string variant;  // the bundled build's name; "" for an image file
  uint64_t image_fnv1a64 = 0;
  uint64_t memory_bytes = 0;
  uint32_t vcpus = 1;
  // With several vCPUs, how their IPIs go and whose local APICs they have (the names
  // of `run --ipi` and `--lapic`); "" with one. The guest reads them after its
  // quiescent point, so a restore keeps them.
  std::string ipi;
  std::string lapic;
  std::string trap;          // the trap mechanism it was booted with (its name)
  std::string boot_cmdline;  // the command line the kernel was booted with
  // What the boot it saves cost: KVM_CREATE_VM to ready, and the boot itself (first
  // guest instruction to its quiescent point), for reports beside a restore's.
  uint64_t vm_create_ns = 0;
  uint64_t boot_ns = 0;
  uint64_t created_unix_s = 0;
};

SnapshotPart EncodeSnapshotHeader(const SnapshotHeader& header);
absl::StatusOr<SnapshotHeader> DecodeSnapshotHeader(const SnapshotPart& part);

// What a restore has and needs; each field that differs from the header is a
// refusal that names both sides and says what to do (take the snapshot again here).
struct RestoreHost {
  uint32_t abi_version = 0;
  std::string arch;
  std::string host_kind;
};
absl::Status CheckRestoreHost(const SnapshotHeader& header, const RestoreHost& host,
                              std::string_view dir);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_SNAPSHOT_SNAPSHOT_HEADER_H_
