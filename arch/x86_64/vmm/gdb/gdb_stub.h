// `sigvisor run --gdb [ADDR:]PORT`: a gdb stub for the guest's one vCPU.
//
// It listens before the VM boots (an address in use is refused before anything
// runs), waits for gdb before the first guest instruction (at most the run's
// --timeout: then the run ends as a timeout; Ctrl-C ends the wait as interrupted),
// and then serves the GDB
// Remote Serial Protocol (vmm/gdb) whenever the guest is stopped: at a breakpoint,
// after a step, on Ctrl-C. While the guest runs, a watcher thread looks for gdb's
// interrupt byte and kicks the vCPU out of KVM_RUN.
//
// What it does with this host's KVM (docs/host-notes.md; `sigvisor probe`):
//   Z1  hardware execution breakpoints: VMM debug registers through GuestDebug
//       (KVM_GUESTDBG_USE_HW_BP), four of them. On PVM they fire at CPL0 only, so
//       one in user code is refused.
//   Z0  software breakpoints: the stub writes int3 over the instruction (and hides
//       it from memory reads). On hardware KVM, KVM_GUESTDBG_USE_SW_BP turns the #BP
//       into an exit; on PVM, an int3 at CPL0 is an emulation failure that the stub
//       recognises as its own, and one at CPL3 would reach the guest's own #BP
//       handler: refused in user code.
//   Z2-4 data watchpoints: on hardware KVM through the debug registers (write and
//       access; x86 has no read-only watchpoint). On PVM they never fire: refused,
//       with the reason.
//   s   KVM_GUESTDBG_SINGLESTEP. On PVM it stops at CPL0 only: a step from user code
//       (or an iretq to it) stops at the next kernel instruction.
// Resuming from a breakpoint steps over it first (it is lifted for one step).
// Stepping onto a patched trap site (--trap=patch) runs the `hlt` unstepped so that
// the trap engine emulates it, and the step ends after it.
#ifndef SIGVISOR_ARCH_X86_64_VMM_GDB_GDB_STUB_H_
#define SIGVISOR_ARCH_X86_64_VMM_GDB_GDB_STUB_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arch/x86_64/vmm/gdb/x86_64_target.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/gdb/gdb_server.h"
#include "vmm/run/exit_interceptor.h"

namespace sigvisor::x86 {

struct GdbStubOptions {
  std::string listen;          // "[ADDR:]PORT"; port 0 picks a free one
  // Where gdb finds the image's symbols, for the banner ("" when unknown).
  std::string symbols_path;
  // The directory the image's DWARF names its source files relative to (the bundled
  // kernel's: the source tree sigvisor was built from), for the banner's `directory`
  // command; "" when there is none to name.
  std::string source_dir;
  // Why source_dir is empty, for the banner ("" when nothing is worth saying).
  std::string no_source_dir_reason;
  // How long to wait for gdb before the first instruction (the run's --timeout, which
  // covers the wait): past it the run ends as a timeout. Infinite: no bound.
  absl::Duration wait_timeout = absl::InfiniteDuration();
  // Set (Ctrl-C, SIGTERM: `run`'s flag): the wait ends and the run is interrupted.
  const std::atomic<bool>* interrupt = nullptr;
};

// A listening socket for `listen` ("1234", "127.0.0.1:1234", "0.0.0.0:1234").
absl::StatusOr<int> ListenForGdb(const std::string& listen, std::string* bound);

class InterruptWatcher;

class GdbStub : public ExitInterceptor, private gdb::GdbTarget {
 public:
  // Binds the socket now; the factory's stub waits for gdb when the run starts.
  static absl::StatusOr<InterceptorFactory> Factory(GdbStubOptions options);

  GdbStub(MachineContext& context, GdbStubOptions options, int listen_fd, std::string bound);
  ~GdbStub() override;

  absl::Status OnStart() override;
  Interception Intercept(const VmExit& exit) override;
  void Observe(const ObservedExit& exit) override;
  void OnEnd(const RunEnd& end) override;

 private:
  // GdbTarget.
  std::string TargetXml() override;
  absl::StatusOr<std::vector<uint8_t>> ReadRegisters() override;
  absl::Status WriteRegisters(std::span<const uint8_t> raw) override;
  absl::StatusOr<std::vector<uint8_t>> ReadRegister(int number) override;
  absl::Status WriteRegister(int number, std::span<const uint8_t> raw) override;
  absl::StatusOr<std::vector<uint8_t>> ReadMemory(uint64_t address, size_t length) override;
  absl::Status WriteMemory(uint64_t address, std::span<const uint8_t> data) override;
  absl::Status InsertBreakpoint(gdb::BreakType type, uint64_t address, int kind) override;
  absl::Status RemoveBreakpoint(gdb::BreakType type, uint64_t address, int kind) override;
  absl::Status SetPc(uint64_t pc) override;

  absl::StatusOr<gdb::X86Registers> Registers();
  absl::Status SetRegisters(const gdb::X86Registers& regs);
  absl::StatusOr<bool> InUserCode(uint64_t address);

  // The guest stopped: tell gdb why, serve it, and resume as it says. Returns the
  // interception for the exit that stopped it.
  Interception Stop(const std::string& reply);
  absl::Status Resume(gdb::GdbServer::Action action);
  void Detach();
  bool HasBreakpointAt(uint64_t address) const;
  absl::Status LiftBreakpointsAt(uint64_t address);
  absl::Status RestoreLifted();

  MachineContext& context_;
  GdbStubOptions options_;
  int listen_fd_;
  std::string bound_;
  std::unique_ptr<gdb::GdbServer> server_;
  std::unique_ptr<InterruptWatcher> watcher_;
  bool detached_ = false;
  bool killed_ = false;

  std::map<uint64_t, uint8_t> software_;  // address -> original byte
  struct Hardware {
    gdb::BreakType type;
    int length;
  };
  std::multimap<uint64_t, Hardware> hardware_;

  // Resume state.
  bool user_step_ = false;        // gdb asked for a step
  bool stepping_over_ = false;    // stepping over a lifted breakpoint
  bool continue_after_ = false;   // ... then continue (else report the step)
  bool step_over_site_ = false;   // stepping over a patched trap site, unstepped
  std::optional<uint64_t> lifted_at_;
  std::optional<std::string> pending_stop_;  // a stop to report at the self-kick
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_GDB_GDB_STUB_H_
