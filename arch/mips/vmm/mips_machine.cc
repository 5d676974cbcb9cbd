#include "arch/mips/vmm/mips_machine.h"

#include <time.h>

#include <cstring>
#include <optional>
#include <set>

#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cost_model.h"
#include "arch/mips/vmm/marker_netting.h"
#include "arch/mips/vmm/mips_backend.h"
#include "devices/malta/hypercall_mmio.h"
#include "devices/malta/malta_softres.h"
#include "devices/serial16550.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/base/clock.h"
#include "vmm/machine/boot_info.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/guest_protocol.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor::mips {
namespace {

// Boot registers (docs/mips-platform.md, "Boot").
constexpr int kA0 = 4, kA1 = 5, kA2 = 6, kA3 = 7;

// "pc 0x80100123 (kernel_main+0x13, cpl 0) word 0x27bdffe0 | core 0 pc ..." for a diagnosis.
std::string Describe(const GuestMemory& memory, const MipsElfImage& image,
                     const CpuLocation& where) {
  const uint64_t pc = where.pc;
  std::string text = absl::StrFormat("pc %#x (%s, cpl %d)", pc,
                                     image.Symbolize(static_cast<uint32_t>(pc)), where.cpl);
  if (pc >= 0x80000000u && pc < 0xc0000000u) {  // unmapped: read the word it would fetch
    auto word = memory.ReadObject<uint32_t>(pc & 0x1fffffffu);
    if (word.ok()) text += absl::StrFormat(" word %08x", *word);
  }
  if (!where.registers.empty()) text += " | " + where.registers;
  return text;
}

// Watches each phase's task for NetMarkerUserCode, from its BEGIN marker to its END:
// its user-mode instructions, and for a measured phase its entries into the per-op
// system call. The calibration phases are watched too: the tracker subtracts the
// counts of the first of a run of them, so that one's user instructions are kept.
class OperationWatch : public ExitInterceptor {
 public:
  explicit OperationWatch(MipsSystem& system) : system_(system) {}

  Interception Intercept(const VmExit&) override { return {}; }

  void OnPhaseMarker(const PhaseMarker& marker) override {
    if (marker.begin) {
      // The marker's exit belongs to the core that runs the phase's task.
      const uint32_t asid = system_.core(system_.current_core()).entry_hi() & kEntryHiAsidMask;
      calibrating_ = marker.calibration;
      std::optional<uint32_t> syscall;
      if (!calibrating_) {
        open_ = OperationMarks{.phase = marker.name, .ops = marker.ops,
                               .op_syscall = marker.op_syscall};
        if (marker.op_syscall) syscall = static_cast<uint32_t>(*marker.op_syscall);
      }
      system_.WatchTask(asid, syscall);
      return;
    }
    const uint64_t user = system_.TaskUserInstructions();
    system_.StopWatchingTask();
    if (calibrating_) {
      calibrating_ = false;
      if (!after_calibration_) calibration_user_ = user;  // the first of a run
      after_calibration_ = true;
      return;
    }
    after_calibration_ = false;
    if (!open_) return;
    const MipsSystem::TaskMarks& marks = system_.task_marks();
    open_->entries = marks.entries;
    open_->core = marks.core;
    open_->cores = system_.core_count();
    open_->one_core = marks.one_core;
    open_->first = marks.first;
    open_->last = marks.last;
    open_->phase_user = user;
    open_->calibration_user = calibration_user_;
    ended_.push_back(*std::move(open_));
    open_.reset();
  }

  // The measured phases that ended, in order.
  const std::vector<OperationMarks>& ended() const { return ended_; }

 private:
  MipsSystem& system_;
  bool calibrating_ = false;
  bool after_calibration_ = false;
  std::optional<uint64_t> calibration_user_;
  std::optional<OperationMarks> open_;
  std::vector<OperationMarks> ended_;
};

// Nets every reported phase of the markers' user code (marker_netting.h); a phase that
// cannot be netted exactly gets a warning saying why.
void NetPhases(const std::vector<OperationMarks>& ended, RunResult& result) {
  size_t next = 0;
  for (PhaseResult& phase : result.phases) {
    while (next < ended.size() && ended[next].phase != phase.name) ++next;
    if (next == ended.size()) break;
    if (std::optional<std::string> why = NetMarkerUserCode(ended[next++], phase)) {
      result.warnings.push_back(*std::move(why));
    }
  }
}

// CPU time of the whole process (the run loop may be on a thread of its own).
uint64_t ProcessCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

absl::StatusOr<MipsMachineReport> BootAndRun(const MipsElfImage& image,
                                             const MipsMachineConfig& config) {
  if (config.memory_bytes < (1ull << 20) || config.memory_bytes > kMaxMemory ||
      config.memory_bytes % (1ull << 20) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("guest memory of %d MiB: the MIPS machine takes 1 to 256 MiB in whole MiB",
                        config.memory_bytes >> 20));
  }
  // The image may load anywhere in RAM (its own exception vectors at physical 0 are
  // usual) except over the boot info.
  for (const MipsSegment& seg : image.segments()) {
    if (seg.paddr < kBootInfoAddress + sizeof(sigvisor_boot_info) &&
        kBootInfoAddress < seg.paddr + seg.memsz) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a segment at physical %#x (%#x bytes) overlaps the boot info at %#x; link the "
          "kernel at 0x80100000",
          seg.paddr, seg.memsz, kBootInfoAddress));
    }
  }
  MipsMachineReport report;
  const uint64_t setup_start = MonotonicNs();
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(config.memory_bytes);
  if (!memory.ok()) return memory.status();
  if (absl::Status s = image.Load(*memory); !s.ok()) return s;
  if (absl::Status s = WriteBootInfo(
          *memory, kBootInfoAddress,
          {.image_end = image.load_end(),
           .tsc_khz = kCountKhz,
           .vdso_gpa = config.vdso ? static_cast<uint32_t>(kVdsoAddress) : 0,
           .cmdline = config.cmdline});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::span<uint8_t>> ram = memory->Span(0, memory->size());
  if (!ram.ok()) return ram.status();

  Bus bus;
  const Bus& devices = bus;
  absl::StatusOr<std::unique_ptr<MipsSystem>> system = MipsSystem::Create(
      *ram, config.cores,
      [&devices](uint64_t paddr) { return devices.Find(AddressSpace::kMmio, paddr) != nullptr; },
      config.quantum, config.vdso ? std::optional<uint64_t>(kVdsoAddress) : std::nullopt);
  if (!system.ok()) return system.status();
  for (int i = 0; i < config.cores; ++i) {
    MipsCore& core = (*system)->core(i);
    core.set_block_engine(config.block_engine);
    core.Reset(image.entry());
    core.set_gpr(kA0, SIGVISOR_BOOT_INFO_MAGIC);
    core.set_gpr(kA1, kKseg0Base + static_cast<uint32_t>(kBootInfoAddress));
    core.set_gpr(kA2, static_cast<uint32_t>(i));
    core.set_gpr(kA3, static_cast<uint32_t>(config.cores));
  }
  MipsBackend backend(**system);

  OperationWatch operations(**system);
  SessionOptions options = config.session;
  options.interceptors.push_back(&operations);
  const GuestMemory& ram_view = *memory;
  options.describe = [&ram_view, &image](const CpuLocation& where) {
    return Describe(ram_view, image, where);
  };
  HypercallTable hypercalls;
  HypercallMmioWindow hypercall_window(hypercalls);
  options.hypercalls = &hypercall_window;
  Session session(backend, bus, options);
  auto console = [&session](std::string_view text) { session.ConsoleWrite(text); };
  GuestProtocol protocol(*memory, console);
  protocol.set_orders(config.cmdline);  // the kernel asks for them once booted
  if (absl::Status s = protocol.Register(hypercalls); !s.ok()) return s;
  Serial16550 serial(console);
  MaltaSoftReset softres;
  for (const absl::Status& s : {
           bus.Register(AddressSpace::kMmio, kSerialAddress, Serial16550::kPortCount, &serial),
           bus.Register(AddressSpace::kMmio, MaltaSoftReset::kAddress, MaltaSoftReset::kBytes,
                        &softres),
           bus.Register(AddressSpace::kMmio, kHypercallAddress, HypercallMmioWindow::kWindowBytes,
                        &hypercall_window),
       }) {
    if (!s.ok()) return s;
  }
  // The devices came after the system (they need the Session): check here that none
  // sits under the vdso page, which the cores would answer first.
  for (uint64_t pa = kVdsoAddress; config.vdso && pa < kVdsoAddress + VdsoPage::kBytes; ++pa) {
    if (bus.Find(AddressSpace::kMmio, pa) != nullptr) {
      return absl::InternalError(absl::StrFormat("a device at %#x under the vdso page", pa));
    }
  }
  report.setup_ns = MonotonicNs() - setup_start;

  const uint64_t cpu_start = ProcessCpuNs();
  report.result = session.Run();
  NetPhases(operations.ended(), report.result);
  const uint64_t cpu_ns = ProcessCpuNs() - cpu_start;
  if (report.result.outcome == Outcome::kExited && softres.powered_off()) {
    report.result.exit_code = 0;  // Malta's reset: a clean power-off
  }
  for (int i = 0; i < config.cores; ++i) report.cores.push_back((*system)->core(i).counters());
  report.total = (*system)->Total();
  if (const VdsoPage* vdso = (*system)->vdso()) {
    std::set<const uint8_t*> pages;
    for (int i = 0; i < config.cores; ++i) pages.insert((*system)->core(i).vdso_host());
    report.vdso = {.supplied = true,
                   .address = (*system)->vdso_address(),
                   .host_pages = static_cast<int>(pages.size()),
                   .intact = vdso->Intact()};
  }
  report.modelled_seconds = CostModel::Seconds(report.total.modelled_cycles());
  if (report.result.run_ns > 0) {
    report.instructions_per_second = static_cast<double>(report.total.instructions) * 1e9 /
                                     static_cast<double>(report.result.run_ns);
  }
  if (cpu_ns > 0) {
    report.instructions_per_cpu_second =
        static_cast<double>(report.total.instructions) * 1e9 / static_cast<double>(cpu_ns);
  }
  return report;
}

}  // namespace sigvisor::mips
