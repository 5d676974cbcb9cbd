#include "arch/x86_64/vmm/gdb/gdb_stub.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/page_walk.h"
#include "vmm/gdb/accept.h"

namespace sigvisor::x86 {
namespace {

constexpr uint8_t kInt3 = 0xcc;
constexpr char kThread[] = "thread:01;";

std::string ErrnoMessage(const char* what) { return absl::StrFormat("%s: %s", what, strerror(errno)); }

}  // namespace

// Watches gdb's socket while the guest runs: its interrupt byte (Ctrl-C), or the
// connection closing, kicks the vCPU out of KVM_RUN.
class InterruptWatcher {
 public:
  InterruptWatcher(int fd, Backend& backend) : fd_(fd), backend_(backend) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { Loop(); });
  }
  ~InterruptWatcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    cv_.notify_all();
    Wake();
    thread_.join();
    for (int fd : wake_) {
      if (fd >= 0) ::close(fd);
    }
  }

  // Starts watching (the guest is about to run).
  void Resume() {
    std::lock_guard<std::mutex> lock(mutex_);
    watching_ = true;
    cv_.notify_all();
  }

  // Stops watching; returns once the watcher no longer touches the socket.
  void Pause() {
    std::unique_lock<std::mutex> lock(mutex_);
    watching_ = false;
    Wake();
    cv_.wait(lock, [this] { return !polling_; });
  }

  // Whether gdb interrupted (consumes it).
  bool TakeInterrupt() {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool was = interrupted_;
    interrupted_ = false;
    return was;
  }

 private:
  void Wake() {
    const char c = 0;
    if (wake_[1] >= 0) (void)!::write(wake_[1], &c, 1);
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [this] { return quit_ || watching_; });
      if (quit_) return;
      polling_ = true;
      lock.unlock();
      pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      const int n = ::poll(fds, wake_[0] >= 0 ? 2 : 1, wake_[0] >= 0 ? -1 : 50);
      bool interrupt = false, stop_watching = false;
      if (n > 0 && wake_[0] >= 0 && (fds[1].revents & POLLIN)) {
        char drain[64];
        while (::read(wake_[0], drain, sizeof(drain)) > 0) {
        }
      } else if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        char c = 0;
        const ssize_t got = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (got == 1 && c == '\x03') {
          (void)::recv(fd_, &c, 1, MSG_DONTWAIT);
          interrupt = true;
        } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
          interrupt = stop_watching = true;  // gdb went away: stop so the stub sees it
        } else if (got == 1) {
          stop_watching = true;  // a packet while running: the stub reads it at the next stop
        }
      }
      lock.lock();
      polling_ = false;
      if (interrupt) {
        interrupted_ = true;
        backend_.Kick();
      }
      if (stop_watching || interrupt) watching_ = false;
      cv_.notify_all();
    }
  }

  const int fd_;
  Backend& backend_;
  int wake_[2] = {-1, -1};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool watching_ = false, polling_ = false, quit_ = false, interrupted_ = false;
  std::thread thread_;
};

absl::StatusOr<int> ListenForGdb(const std::string& listen, std::string* bound) {
  std::string host = "127.0.0.1";
  std::string port_text = listen;
  if (const size_t colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
    if (host.empty() || host == "localhost") host = "127.0.0.1";
  }
  uint32_t port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--gdb '%s': give [ADDR:]PORT, e.g. 1234 or 127.0.0.1:1234", listen));
  }
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--gdb '%s': '%s' is not an IPv4 address", listen, host));
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(ErrnoMessage("socket"));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 1) != 0) {
    const std::string why = strerror(errno);
    ::close(fd);
    return absl::UnavailableError(
        absl::StrFormat("--gdb %s: cannot listen on %s:%d: %s", listen, host, port, why));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *bound = absl::StrFormat("%s:%d", host, ntohs(addr.sin_port));
  return fd;
}

absl::StatusOr<InterceptorFactory> GdbStub::Factory(GdbStubOptions options) {
  std::string bound;
  absl::StatusOr<int> fd = ListenForGdb(options.listen, &bound);
  if (!fd.ok()) return fd.status();
  auto shared_fd = std::make_shared<int>(*fd);
  return InterceptorFactory(
      [options = std::move(options), shared_fd,
       bound](MachineContext& context) -> absl::StatusOr<std::unique_ptr<ExitInterceptor>> {
        const int listen_fd = *shared_fd;
        *shared_fd = -1;  // the stub owns it now
        if (listen_fd < 0) return absl::InternalError("the gdb stub's socket was used twice");
        return std::make_unique<GdbStub>(context, options, listen_fd, bound);
      });
}

GdbStub::GdbStub(MachineContext& context, GdbStubOptions options, int listen_fd,
                 std::string bound)
    : context_(context), options_(std::move(options)), listen_fd_(listen_fd),
      bound_(std::move(bound)) {}

GdbStub::~GdbStub() {
  watcher_.reset();
  server_.reset();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

absl::Status GdbStub::OnStart() {
  // The banner is all gdb needs: the symbols file and, where the image has sources to
  // show, the `directory` that makes its DWARF's relative paths (the bundled kernel's:
  // guest-kit/kernel/signal.c, ...) resolve wherever gdb runs.
  std::string banner;
  if (!options_.symbols_path.empty()) {
    std::string sources, directory;
    if (!options_.source_dir.empty()) {
      sources = absl::StrFormat("; sources: %s", options_.source_dir);
      directory = absl::StrFormat(" -ex 'directory %s'", options_.source_dir);
    } else if (!options_.no_source_dir_reason.empty()) {
      sources = absl::StrFormat("; sources: %s", options_.no_source_dir_reason);
    }
    banner = absl::StrFormat(" (symbols: %s%s; gdb %s%s -ex 'target remote %s')",
                             options_.symbols_path, sources, options_.symbols_path, directory,
                             bound_);
  }
  std::fprintf(stderr, "sigvisor: gdb: waiting for gdb on %s%s\n", bound_.c_str(), banner.c_str());
  std::fflush(stderr);
  // The session takes DeadlineExceeded as a timeout and Aborted as an interrupted run
  // (exit_interceptor.h): the guest never ran.
  absl::StatusOr<int> accepted =
      gdb::AcceptClient(listen_fd_, options_.wait_timeout, options_.interrupt);
  if (absl::IsDeadlineExceeded(accepted.status())) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "no debugger attached within the %s timeout (sigvisor waited for gdb on %s before "
        "the guest's first instruction; raise it with --timeout)",
        absl::FormatDuration(options_.wait_timeout), bound_));
  }
  if (absl::IsAborted(accepted.status())) {
    return absl::AbortedError(
        "SIGINT or SIGTERM stopped the run while it waited for gdb, before the guest's first "
        "instruction");
  }
  if (!accepted.ok()) return accepted.status();
  const int fd = *accepted;
  ::close(listen_fd_);
  listen_fd_ = -1;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::fprintf(stderr, "sigvisor: gdb: connected; the guest waits before its first instruction\n");
  server_ = std::make_unique<gdb::GdbServer>(std::make_unique<gdb::RspConnection>(fd),
                                             static_cast<gdb::GdbTarget&>(*this));
  watcher_ = std::make_unique<InterruptWatcher>(fd, context_.backend);
  absl::StatusOr<gdb::GdbServer::Action> action = server_->Serve("");
  if (!action.ok()) {
    Detach();
    return absl::OkStatus();
  }
  switch (*action) {
    case gdb::GdbServer::Action::kKill:
      killed_ = true;
      return absl::CancelledError("gdb killed the guest before its first instruction");
    case gdb::GdbServer::Action::kDetach:
      Detach();
      return absl::OkStatus();
    default: return Resume(*action);
  }
}

Interception GdbStub::Intercept(const VmExit& exit) {
  if (detached_ || server_ == nullptr) return {};
  GuestDebug& debug = context_.cpu.debug();
  switch (exit.kind) {
    case ExitKind::kDebug: {
      const uint64_t dr6 = exit.raw_detail;
      if (debug.IsVmmStep(dr6) && (user_step_ || stepping_over_)) {
        if (stepping_over_) {
          if (absl::Status s = RestoreLifted(); !s.ok()) {
            return Interception::HostError("gdb stub", s);
          }
          stepping_over_ = false;
          if (continue_after_) {
            (void)debug.SetSingleStep(GuestDebug::kStepDebugger, false);
            return Interception::Instrument("gdb: stepped over a breakpoint");
          }
        }
        return Stop(absl::StrCat("T05", kThread));
      }
      if (std::optional<int> slot = debug.VmmBreakpointHit(dr6)) {
        const uint64_t address = debug.BreakpointAddress(*slot).value_or(0);
        for (auto [it, end] = hardware_.equal_range(address); it != end; ++it) {
          if (it->second.type == gdb::BreakType::kWrite) {
            return Stop(absl::StrFormat("T05watch:%x;%s", address, kThread));
          }
          if (it->second.type == gdb::BreakType::kAccess) {
            return Stop(absl::StrFormat("T05awatch:%x;%s", address, kThread));
          }
        }
        return Stop(absl::StrCat("T05hwbreak:;", kThread));
      }
      if (software_.count(exit.address)) return Stop(absl::StrCat("T05swbreak:;", kThread));
      return {};
    }
    case ExitKind::kInternalError: {
      // PVM: our int3 at CPL0 is an emulation failure with RIP at it.
      absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
      if (!regs.ok() || !software_.count(regs->rip)) return {};
      return Stop(absl::StrCat("T05swbreak:;", kThread));
    }
    case ExitKind::kInterrupted:
      if (pending_stop_) {
        std::string reply = *std::move(pending_stop_);
        pending_stop_.reset();
        (void)watcher_->TakeInterrupt();
        return Stop(reply);
      }
      if (watcher_->TakeInterrupt()) return Stop(absl::StrCat("T02", kThread));
      return {};
    default: return {};
  }
}

void GdbStub::Observe(const ObservedExit& observed) {
  // A step over a patched trap site ends when the trap engine has emulated it.
  if (detached_ || !step_over_site_ || observed.trap == nullptr) return;
  step_over_site_ = false;
  if (stepping_over_) {
    (void)RestoreLifted();
    stepping_over_ = false;
    if (continue_after_) return;
  }
  // Stop before anything else runs: the next KVM_RUN returns at once.
  pending_stop_ = absl::StrCat("T05", kThread);
  context_.backend.Kick();
}

void GdbStub::OnEnd(const RunEnd& end) {
  if (server_ == nullptr || detached_) return;
  watcher_->Pause();
  if (!killed_) {
    server_->Finish(end.outcome == Outcome::kExited ? absl::StrFormat("W%02x", end.exit_code & 0xff)
                                            : "X0b");  // a failed guest: SIGSEGV
  }
  std::fprintf(stderr, "sigvisor: gdb: the run is over (%s); closing the connection\n",
               std::string(OutcomeName(end.outcome)).c_str());
  watcher_.reset();
  server_.reset();
}

Interception GdbStub::Stop(const std::string& reply) {
  watcher_->Pause();
  GuestDebug& debug = context_.cpu.debug();
  user_step_ = false;
  (void)debug.SetSingleStep(GuestDebug::kStepDebugger, false);
  Interception handled = Interception::Instrument("gdb: stopped");
  absl::StatusOr<gdb::GdbServer::Action> action = server_->Serve(reply);
  if (!action.ok()) {
    std::fprintf(stderr, "sigvisor: gdb: %s; detaching, the guest runs on\n",
                 std::string(action.status().message()).c_str());
    Detach();
    return handled;
  }
  switch (*action) {
    case gdb::GdbServer::Action::kKill: {
      killed_ = true;
      Interception kill = Interception::RunFailed(Outcome::kKilled, "gdb killed the guest");
      kill.detail = "gdb: kill";
      return kill;
    }
    case gdb::GdbServer::Action::kDetach: Detach(); return handled;
    default:
      if (absl::Status s = Resume(*action); !s.ok()) {
        return Interception::HostError("gdb stub", s);
      }
      return handled;
  }
}

absl::Status GdbStub::Resume(gdb::GdbServer::Action action) {
  GuestDebug& debug = context_.cpu.debug();
  absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
  if (!regs.ok()) return regs.status();
  const bool step = action == gdb::GdbServer::Action::kStep;
  const bool on_breakpoint = HasBreakpointAt(regs->rip);
  const bool on_site = context_.traps != nullptr && context_.traps->sites().Find(regs->rip);
  if (on_breakpoint) {
    if (absl::Status s = LiftBreakpointsAt(regs->rip); !s.ok()) return s;
    stepping_over_ = true;
    continue_after_ = !step;
  } else {
    user_step_ = step;
  }
  if (on_breakpoint || step) {
    if (on_site) {
      step_over_site_ = true;  // run the hlt unstepped: the trap engine emulates it
    } else if (absl::Status s = debug.SetSingleStep(GuestDebug::kStepDebugger, true); !s.ok()) {
      return s;
    }
  }
  watcher_->Resume();
  return absl::OkStatus();
}

void GdbStub::Detach() {
  if (watcher_) watcher_->Pause();
  for (const auto& [address, original] : software_) {
    absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
    if (sregs.ok()) context_.cpu.WriteVirtual(sregs->cr3, address, {&original, 1});
  }
  software_.clear();
  hardware_.clear();
  GuestDebug& debug = context_.cpu.debug();
  (void)debug.RemoveAllBreakpoints();
  (void)debug.SetSoftwareBreakpoints(false);
  (void)debug.SetSingleStep(GuestDebug::kStepDebugger, false);
  user_step_ = stepping_over_ = step_over_site_ = false;
  pending_stop_.reset();
  detached_ = true;
  std::fprintf(stderr, "sigvisor: gdb: detached; the guest runs on\n");
  watcher_.reset();
  server_.reset();
}

bool GdbStub::HasBreakpointAt(uint64_t address) const {
  if (software_.count(address)) return true;
  for (auto [it, end] = hardware_.equal_range(address); it != end; ++it) {
    if (it->second.type == gdb::BreakType::kHardware) return true;
  }
  return false;
}

absl::Status GdbStub::LiftBreakpointsAt(uint64_t address) {
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  if (auto it = software_.find(address); it != software_.end()) {
    if (!context_.cpu.WriteVirtual(sregs->cr3, address, {&it->second, 1})) {
      return absl::InternalError(absl::StrFormat("cannot lift the breakpoint at %#x", address));
    }
  }
  for (auto [it, end] = hardware_.equal_range(address); it != end; ++it) {
    if (it->second.type != gdb::BreakType::kHardware) continue;
    if (absl::Status s = context_.cpu.debug().RemoveBreakpoint(address, GuestDebug::BreakKind::kExecute, 1);
        !s.ok()) {
      return s;
    }
  }
  lifted_at_ = address;
  return absl::OkStatus();
}

absl::Status GdbStub::RestoreLifted() {
  if (!lifted_at_) return absl::OkStatus();
  const uint64_t address = *lifted_at_;
  lifted_at_.reset();
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  if (software_.count(address)) {
    if (!context_.cpu.WriteVirtual(sregs->cr3, address, {&kInt3, 1})) {
      return absl::InternalError(absl::StrFormat("cannot re-insert the breakpoint at %#x", address));
    }
  }
  for (auto [it, end] = hardware_.equal_range(address); it != end; ++it) {
    if (it->second.type != gdb::BreakType::kHardware) continue;
    absl::StatusOr<int> slot =
        context_.cpu.debug().AddBreakpoint(address, GuestDebug::BreakKind::kExecute, 1);
    if (!slot.ok()) return slot.status();
  }
  return absl::OkStatus();
}

// ---- the target -------------------------------------------------------------------

std::string GdbStub::TargetXml() { return gdb::X86TargetXml(); }

absl::StatusOr<gdb::X86Registers> GdbStub::Registers() {
  absl::StatusOr<kvm_regs> r = context_.cpu.GetRegs();
  if (!r.ok()) return r.status();
  absl::StatusOr<kvm_sregs> s = context_.cpu.GetSregs();
  if (!s.ok()) return s.status();
  gdb::X86Registers g;
  const uint64_t gpr[16] = {r->rax, r->rbx, r->rcx, r->rdx, r->rsi, r->rdi, r->rbp, r->rsp,
                            r->r8,  r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15};
  std::copy(std::begin(gpr), std::end(gpr), g.gpr);
  g.rip = r->rip;
  g.rflags = r->rflags;
  const kvm_segment* segs[6] = {&s->cs, &s->ss, &s->ds, &s->es, &s->fs, &s->gs};
  for (int i = 0; i < 6; ++i) g.segment[i] = segs[i]->selector;
  g.fs_base = s->fs.base;
  g.gs_base = s->gs.base;
  g.cr0 = s->cr0;
  g.cr2 = s->cr2;
  g.cr3 = s->cr3;
  g.cr4 = s->cr4;
  g.efer = s->efer;
  return g;
}

absl::Status GdbStub::SetRegisters(const gdb::X86Registers& g) {
  absl::StatusOr<kvm_regs> r = context_.cpu.GetRegs();
  if (!r.ok()) return r.status();
  __u64* gpr[16] = {&r->rax, &r->rbx, &r->rcx, &r->rdx, &r->rsi, &r->rdi, &r->rbp, &r->rsp,
                       &r->r8,  &r->r9,  &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15};
  for (int i = 0; i < 16; ++i) *gpr[i] = g.gpr[i];
  r->rip = g.rip;
  r->rflags = g.rflags | 2;  // bit 1 is always set
  if (absl::Status st = context_.cpu.SetRegs(*r); !st.ok()) return st;
  absl::StatusOr<kvm_sregs> s = context_.cpu.GetSregs();
  if (!s.ok()) return s.status();
  if (s->fs.base != g.fs_base || s->gs.base != g.gs_base) {
    s->fs.base = g.fs_base;
    s->gs.base = g.gs_base;
    return context_.cpu.SetSregs(*s);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> GdbStub::ReadRegisters() {
  absl::StatusOr<gdb::X86Registers> g = Registers();
  if (!g.ok()) return g.status();
  return gdb::PackX86Registers(*g);
}

absl::Status GdbStub::WriteRegisters(std::span<const uint8_t> raw) {
  absl::StatusOr<gdb::X86Registers> g = Registers();
  if (!g.ok()) return g.status();
  if (!gdb::UnpackX86Registers(raw, *g)) {
    return absl::InvalidArgumentError("the register block does not fit the target description");
  }
  return SetRegisters(*g);
}

absl::StatusOr<std::vector<uint8_t>> GdbStub::ReadRegister(int number) {
  absl::StatusOr<gdb::X86Registers> g = Registers();
  if (!g.ok()) return g.status();
  std::optional<std::vector<uint8_t>> raw = gdb::PackX86Register(*g, number);
  if (!raw) return absl::InvalidArgumentError(absl::StrFormat("no register %d", number));
  return *raw;
}

absl::Status GdbStub::WriteRegister(int number, std::span<const uint8_t> raw) {
  absl::StatusOr<gdb::X86Registers> g = Registers();
  if (!g.ok()) return g.status();
  if (!gdb::UnpackX86Register(number, raw, *g)) {
    return absl::InvalidArgumentError(absl::StrFormat("register %d takes %d bytes", number,
                                                      gdb::X86RegisterSize(number)));
  }
  return SetRegisters(*g);
}

absl::StatusOr<std::vector<uint8_t>> GdbStub::ReadMemory(uint64_t address, size_t length) {
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  std::vector<uint8_t> bytes = context_.cpu.ReadVirtualUpTo(sregs->cr3, address, length);
  if (bytes.empty() && length > 0) {
    return absl::NotFoundError(absl::StrFormat("%#x is not mapped", address));
  }
  // Show the program, not the instruments: our int3s and the trap engine's hlts.
  const uint64_t end = address + bytes.size();
  for (const auto& [at, original] : software_) {
    if (at >= address && at < end) bytes[at - address] = original;
  }
  if (context_.traps != nullptr) {
    for (const trap::TrapSite& site : context_.traps->sites().sites()) {
      if (site.address >= address && site.address < end && !site.bytes.empty()) {
        bytes[site.address - address] = site.bytes[0];
      }
    }
  }
  return bytes;
}

absl::Status GdbStub::WriteMemory(uint64_t address, std::span<const uint8_t> data) {
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  std::vector<uint8_t> bytes(data.begin(), data.end());
  for (auto& [at, original] : software_) {  // keep our int3s, remember what is under them
    if (at >= address && at < address + bytes.size()) {
      original = bytes[at - address];
      bytes[at - address] = kInt3;
    }
  }
  if (!context_.cpu.WriteVirtual(sregs->cr3, address, bytes)) {
    return absl::NotFoundError(absl::StrFormat("%#x is not mapped", address));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> GdbStub::InUserCode(uint64_t address) {
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  return UserAccessible(context_.cpu.memory(), sregs->cr3, address);
}

absl::Status GdbStub::InsertBreakpoint(gdb::BreakType type, uint64_t address, int kind) {
  GuestDebug& debug = context_.cpu.debug();
  constexpr char kCpl0Only[] =
      "a breakpoint at %#x (user code, CPL3) cannot stop the guest on this host: on PVM an "
      "int3 at CPL3 goes to the guest's own #BP handler and hardware breakpoints and single "
      "steps fire at CPL0 only (docs/host-notes.md; `sigvisor probe`)";
  switch (type) {
    case gdb::BreakType::kSoftware: {
      if (software_.count(address)) return absl::OkStatus();
      if (context_.cpl0_emulated) {
        absl::StatusOr<bool> user = InUserCode(address);
        if (!user.ok()) return user.status();
        if (*user) return absl::FailedPreconditionError(absl::StrFormat(kCpl0Only, address));
      }
      absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
      if (!sregs.ok()) return sregs.status();
      uint8_t original = 0;
      if (!context_.cpu.ReadVirtual(sregs->cr3, address, {&original, 1}) ||
          !context_.cpu.WriteVirtual(sregs->cr3, address, {&kInt3, 1})) {
        return absl::NotFoundError(absl::StrFormat("%#x is not mapped", address));
      }
      software_[address] = original;
      return debug.SetSoftwareBreakpoints(true);
    }
    case gdb::BreakType::kHardware: {
      if (context_.cpl0_emulated) {
        absl::StatusOr<bool> user = InUserCode(address);
        if (user.ok() && *user) {
          return absl::FailedPreconditionError(absl::StrFormat(kCpl0Only, address));
        }
      }
      absl::StatusOr<int> slot = debug.AddBreakpoint(address, GuestDebug::BreakKind::kExecute, 1);
      if (!slot.ok()) return slot.status();
      hardware_.emplace(address, Hardware{type, 1});
      return absl::OkStatus();
    }
    case gdb::BreakType::kRead:
      return absl::UnimplementedError("x86 has no read-only watchpoints (use awatch)");
    case gdb::BreakType::kWrite:
    case gdb::BreakType::kAccess: {
      if (context_.cpl0_emulated) {
        return absl::FailedPreconditionError(
            "data watchpoints do not fire on this host (PVM): neither the VMM's nor the guest's "
            "debug registers trigger on data access (docs/host-notes.md; `sigvisor probe`)");
      }
      absl::StatusOr<int> slot = debug.AddBreakpoint(
          address,
          type == gdb::BreakType::kWrite ? GuestDebug::BreakKind::kWrite
                                         : GuestDebug::BreakKind::kAccess,
          kind);
      if (!slot.ok()) return slot.status();
      hardware_.emplace(address, Hardware{type, kind});
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("unknown breakpoint type");
}

absl::Status GdbStub::RemoveBreakpoint(gdb::BreakType type, uint64_t address, int kind) {
  GuestDebug& debug = context_.cpu.debug();
  if (type == gdb::BreakType::kSoftware) {
    auto it = software_.find(address);
    if (it == software_.end()) return absl::OkStatus();
    absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
    if (!sregs.ok()) return sregs.status();
    if (lifted_at_ != address) context_.cpu.WriteVirtual(sregs->cr3, address, {&it->second, 1});
    software_.erase(it);
    if (software_.empty()) return debug.SetSoftwareBreakpoints(false);
    return absl::OkStatus();
  }
  for (auto [it, end] = hardware_.equal_range(address); it != end; ++it) {
    if (it->second.type != type) continue;
    const int length = type == gdb::BreakType::kHardware ? 1 : kind;
    GuestDebug::BreakKind k = type == gdb::BreakType::kHardware ? GuestDebug::BreakKind::kExecute
                              : type == gdb::BreakType::kWrite  ? GuestDebug::BreakKind::kWrite
                                                                : GuestDebug::BreakKind::kAccess;
    hardware_.erase(it);
    if (lifted_at_ == address && type == gdb::BreakType::kHardware) return absl::OkStatus();
    absl::Status s = debug.RemoveBreakpoint(address, k, length);
    return s.code() == absl::StatusCode::kNotFound ? absl::OkStatus() : s;
  }
  return absl::OkStatus();
}

absl::Status GdbStub::SetPc(uint64_t pc) {
  absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
  if (!regs.ok()) return regs.status();
  regs->rip = pc;
  return context_.cpu.SetRegs(*regs);
}

}  // namespace sigvisor::x86
