// A guest's run as a command asks for it, made concrete for the kind of kernel the
// image is (x86::BootTarget): the words the kernel reads (workload, ops, warm-up, in
// its kernel's dialect), its RAM when --memory is not given, a Linux kernel's
// initramfs, a Multiboot kernel's modules and irqchip, and the one-line refusals of
// what the kind does not take. `run`, `trace` and `bench` build their guests through
// it, so that each of these rules is written once.
#ifndef SIGVISOR_VMM_APP_LAUNCH_GUEST_SPEC_H_
#define SIGVISOR_VMM_APP_LAUNCH_GUEST_SPEC_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "vmm/app/launch/image.h"

namespace sigvisor::launch {

// Guest RAM for a Linux kernel when --memory is not given: Debian's kernel needs
// ~80 MiB from its 16 MiB load address to the end of its init_size, and less RAM is
// less for an emulated CPL0 to initialise (its page structures, at ~1 us an
// instruction).
inline constexpr uint64_t kLinuxDefaultMemoryMib = 160;

// A guest's RAM in MiB: `memory_mib` when --memory was given (or the kernel is not
// Linux, which then has the flag's default), else kLinuxDefaultMemoryMib.
uint64_t GuestMemoryMib(bool linux_kernel, uint64_t memory_mib, bool memory_given);

// The most operations a measured phase may have: --ops of run, trace, bench and study.
inline constexpr uint64_t kMaxOps = uint64_t{1} << 24;

// The one rule for a count a command takes (--ops, --repetitions): `value` as given,
// nullopt when empty, else a whole number from 1 to `max`; refused in one line naming
// `what` as typed ("--ops '0' is not a count from 1 to 16777216").
absl::StatusOr<std::optional<uint64_t>> ParseCount(std::string_view what,
                                                   const std::string& value, uint64_t max);

// What a command asks of its guest, as its flags (or a bench matrix) give it.
struct GuestRequest {
  std::string workload;  // "": the kernel's default
  std::string ops;       // as given; "": the kernel's default
  std::string warmup;    // as given; "": the kernel's default
  std::string extra;     // --cmdline: after sigvisor's words, so that a user's wins
  std::string initrd;    // a Linux kernel's initramfs file; "": the embedded one
  int vcpus = 1;         // the machine's vCPUs: a workload across CPUs needs 2
  uint64_t memory_mib = 32;   // --memory's value (its default when not given)
  bool memory_given = false;  // --memory was given: no kind's default replaces it
  bool irqchip = false;                // a Multiboot kernel's --irqchip
  std::vector<std::string> modules;    // a Multiboot kernel's --module FILE[=STRING]
};

// The run a request makes of an image.
struct GuestSpec {
  std::string cmdline;  // the run's words, in the kernel's dialect
  uint64_t memory_mib = 0;
};

// Completes `image`'s boot target for `request` (a Linux kernel's initramfs; a
// Multiboot kernel's name, modules and irqchip) and gives its command line and RAM;
// or the one-line refusal of what its kind does not take.
absl::StatusOr<GuestSpec> PrepareGuest(LoadedImage& image, const GuestRequest& request);

// How a kernel reads the run's words: the bundled kernel's (x86-64 and MIPS; any image
// but Linux is given them too), or the embedded Linux init's.
enum class KernelDialect { kBundled, kLinuxInit };
KernelDialect DialectOf(const x86::BootTarget& kind);

// The words a kernel reads for a run: "workload=NAME ops=N warmup=W" for the bundled
// kernel, "sigvisor_workload=NAME sigvisor_ops=N sigvisor_warmup=W" for the embedded
// Linux init (Linux passes the parameters it does not know to init as environment
// variables), each when given, then `extra`. Refuses a workload the kernel does not
// have, naming those it has, an --ops that is not a count (ParseCount) or that the
// workload does not read, a --warmup the workload cannot take (ParseWarmup), and an
// `extra` word that sets what one of these flags sets (a duplicate or a contradiction).
absl::StatusOr<std::string> GuestWords(KernelDialect dialect, const std::string& workload,
                                       const std::string& ops, const std::string& warmup,
                                       const std::string& extra);

// The bundled kernel's reading of `extra` (--cmdline) checked: an ops= that is not a
// count, which its init would silently read as its default.
absl::Status CheckBundledKernelWords(const std::string& extra);

// The initramfs at `path`, or the embedded one (sigvisor's init and workloads) when
// `path` is empty.
absl::StatusOr<std::vector<uint8_t>> LinuxInitrd(const std::string& path);

}  // namespace sigvisor::launch

#endif  // SIGVISOR_VMM_APP_LAUNCH_GUEST_SPEC_H_
