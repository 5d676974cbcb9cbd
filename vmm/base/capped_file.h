// Reading a whole file the user names (an image, an initrd, a module, a System.map, a
// bench result) into memory. One reader, so that each of them is refused the same way
// and none can make sigvisor block (a FIFO), read without end (/dev/zero), throw (a
// directory under iostreams) or allocate without bound.
#ifndef SIGVISOR_VMM_BASE_CAPPED_FILE_H_
#define SIGVISOR_VMM_BASE_CAPPED_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sigvisor {

// The cap of each kind of file sigvisor reads; docs/guarantees.md lists them.
namespace file_caps {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

// A guest kernel: --image (ELF, bzImage or MIPS ELF), bench's linux=FILE, mips_run's
// IMAGE. Debian's bzImage is 8 MiB; 256 leaves room for an uncompressed vmlinux, and
// the whole file is held in memory (and a bzImage's payload decompressed beside it).
inline constexpr uint64_t kKernelImage = 256 * kMiB;
// --initrd: a distribution's initramfs is tens of MiB; it must fit the guest's RAM
// besides, which `run` checks once the memory size is known.
inline constexpr uint64_t kInitrd = 512 * kMiB;
// A Multiboot --module: the same room as an initrd, which is what QEMU's -initrd
// gives a Multiboot kernel as its modules.
inline constexpr uint64_t kMultibootModule = 512 * kMiB;
// trace --symbols: Debian's System.map is 4 MiB; the cap stops a wrong file (a vmlinux,
// a core dump) from being read whole.
inline constexpr uint64_t kSystemMap = 256 * kMiB;
// A part given to `merge`: `bench --json` writes about 1-2 KiB per run, so this is
// over 100,000 runs per shard, and the parsed document takes several times the text.
inline constexpr uint64_t kBenchResultJson = 256 * kMiB;
// A snapshot's state file, DIR/state (vmm/snapshot): vCPU and device state, the memory
// image's index, a few KiB to a few MiB; guest memory is in DIR/memory, which is mapped,
// not read whole. Its parts are held parsed beside the bytes.
inline constexpr uint64_t kSnapshotState = 64 * kMiB;
// /proc/self/smaps, read once per run for guest RAM's residency: about 1 KiB per
// mapping, and sigvisor has a few hundred.
inline constexpr uint64_t kProcSmaps = 16 * kMiB;

}  // namespace file_caps

// How the one-line messages that refuse a file name it:
//   <context><cannot_open> <noun> '<path>': <reason>
//   <context><noun> '<path>' is a directory, not a regular file
//   <context><noun> '<path>' is a character device, not a regular file
//   <context><noun> '<path>' is larger than <cap>
//   <context>cannot read <noun> '<path>': <reason>
// (without a noun, the quoted path alone).
struct FileRole {
  std::string context;  // e.g. "--module: "
  std::string noun;     // e.g. "image"
  // The System.map's refusal has always said "cannot read"; the tests pin both.
  std::string cannot_open = "cannot open";
};

// The bytes of the regular file at `path`, at most `cap_bytes` of them. Anything else
// (missing, a directory, a device, a FIFO or socket, larger than the cap, a read
// error, no memory for it) is an error with one line naming the file: NotFound when it
// cannot be opened, InvalidArgument when it is not a regular file or is too large,
// DataLoss for a read error, ResourceExhausted when there is no memory for it. Never
// throws, never blocks on a FIFO, never reads a device, and holds at most about twice
// the cap in memory (the file's size when it states one).
absl::StatusOr<std::string> ReadCappedFile(const std::string& path, uint64_t cap_bytes,
                                           const FileRole& role = {});
// The same, as bytes (what the image parsers take), without a copy.
absl::StatusOr<std::vector<uint8_t>> ReadCappedFileBytes(const std::string& path,
                                                         uint64_t cap_bytes,
                                                         const FileRole& role = {});

// `bytes` as the messages name a cap: "256 MiB", "4 KiB", "100 bytes".
std::string CapText(uint64_t bytes);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_BASE_CAPPED_FILE_H_
