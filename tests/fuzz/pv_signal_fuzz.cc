// Fuzzes the signal=pv hypercalls (arch/x86_64/vmm/signal/pv_signal.h): the input is a
// small guest RAM whole (argument blocks, pt_regs, siginfo, page tables, user stack),
// and a few leading bytes choose which calls are made, at which argument block, and
// whether the VMM checks instead of writing. A guest can hand the VMM any pointer and
// any signal number: every call must answer (continue, or fail the run as a
// malformed call when its block is outside RAM), never crash or touch memory outside
// guest RAM (GuestMemory checks every access; ASan watches the rest).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "arch/x86_64/vmm/signal/pv_signal.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/hypercall_table.h"

namespace {

constexpr uint64_t kRamBytes = 64 * 1024;
constexpr size_t kHeader = 8;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kHeader) return 0;
  absl::StatusOr<sigvisor::GuestMemory> memory = sigvisor::GuestMemory::Create(kRamBytes);
  Check(memory.ok());
  const size_t body = std::min<size_t>(size - kHeader, kRamBytes);
  Check(memory->Write(0, {data + kHeader, body}).ok());

  const uint8_t calls = data[0];
  const bool check = data[1] & 1;
  uint32_t args_gpa;
  std::memcpy(&args_gpa, data + 2, sizeof(args_gpa));
  if (data[1] & 2) args_gpa %= kRamBytes;  // mostly inside RAM, sometimes anywhere

  sigvisor::x86::PvSignalFrames frames(*memory, check);
  sigvisor::HypercallTable table;
  Check(frames.Register(table).ok());
  const uint8_t arg[4] = {static_cast<uint8_t>(args_gpa), static_cast<uint8_t>(args_gpa >> 8),
                          static_cast<uint8_t>(args_gpa >> 16),
                          static_cast<uint8_t>(args_gpa >> 24)};
  for (int i = 0; i < 4; ++i) {
    const uint64_t nr = (calls >> i) & 1 ? SIGVISOR_HC_SIGRETURN : SIGVISOR_HC_SIGNAL_FRAME;
    const sigvisor::HypercallResult r = table.Call(nr, arg);
    if (r.verdict == sigvisor::RunVerdict::kRunFailed) {
      Check(r.outcome == sigvisor::Outcome::kBadDeviceAccess);
      Check(!r.diagnosis.empty() && r.diagnosis.find('\n') == std::string::npos);
    } else {
      Check(r.verdict == sigvisor::RunVerdict::kContinue);
      if (check) Check(r.instrument);  // a checked run's calls are the instrument's
    }
    // Flip the block's phase now and then, as a kernel reporting back would.
    if ((calls & 0x10) && args_gpa < kRamBytes - 80) {
      const uint32_t built = SIGVISOR_SIGNAL_PV_BUILT;
      (void)memory->Write(args_gpa + 76, {reinterpret_cast<const uint8_t*>(&built), 4});
    }
  }
  const sigvisor::SignalFrameCounts& counts = frames.counts();
  Check(counts.mismatches.size() <= sigvisor::SignalFrameCounts::kMaxMismatches);
  return 0;
}
