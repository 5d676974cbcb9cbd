// Tracing one measured phase, as `sigvisor trace` does it and `sigvisor study`'s Linux
// column needs it: the guest to trace (an image, the guest spec of its workload, the
// symbols that name its code: a Linux kernel's kallsyms, or a System.map given) and one
// single-stepped run of it (arch/x86_64/vmm/trace/step_tracer.h), analysed
// (vmm/trace/analysis.h).
#ifndef SIGVISOR_VMM_APP_CLI_TRACE_SESSION_H_
#define SIGVISOR_VMM_APP_CLI_TRACE_SESSION_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/app/cli/options.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/image.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/symbol_table.h"
#include "vmm/trace/analysis.h"
#include "vmm/trace/format.h"

namespace sigvisor::cli {

struct TraceTarget {
  launch::LoadedImage image;
  launch::GuestSpec guest;
  // What names the kernel's code: null for the image's own ELF symbols (the bundled
  // kernel); a Linux kernel's kallsyms, or the System.map of --symbols.
  std::shared_ptr<const SymbolTable> symbols;
};

// The target of `flags` (its --workload, --ops, --cmdline, --memory, --symbols) for the
// loaded `image`. A Linux kernel gets `nokaslr`, so that its addresses are the ones its
// symbols give. `restored_memory_mib`: a restored VM's RAM, which --memory cannot change.
// Refused: --symbols for an image with symbols of its own, a Linux kernel without
// kallsyms and no --symbols.
absl::StatusOr<TraceTarget> PrepareTraceTarget(const TraceOptions& flags, launch::LoadedImage image,
                                               std::optional<uint32_t> restored_memory_mib = {});

struct TracedPhase {
  trace::TraceSource source;
  trace::Trace trace;
  trace::Analysis analysis;
  RunResult result;
};

// One run of `target`, its phase (flags.phase, or the first measured one) traced. The
// guest's console goes to stderr unless `echo_console` is false.
absl::StatusOr<TracedPhase> TracePhase(const TraceOptions& flags, const KvmSystem& kvm,
                                       const HostInfo& host, const TraceTarget& target,
                                       const TrapChoice& trap, bool echo_console = true);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_TRACE_SESSION_H_
