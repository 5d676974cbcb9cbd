#include "vmm/app/cli/options.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vmm/app/launch/workloads.h"

namespace sigvisor::cli {
namespace {

// Flags several commands take, each defined once: its name and help here, its default
// in the command's options struct.

Flag Ipi(std::string* v) {
  return StringFlag("ipi", v,
                    "how the bundled kernel on several vCPUs sends IPIs: x2apic (the ICR MSR), "
                    "xapic (the ICR in MMIO) or pv (the VMM's send_ipi hypercall, as KVM's PV "
                    "send-IPI); empty: x2apic. Needs --vcpus 2 or more");
}

Flag Lapic(std::string* v) {
  return StringFlag("lapic", v,
                    "whose local APICs the bundled kernel's vCPUs have: kvm (KVM's in-kernel "
                    "ones: the APIC writes stay in KVM) or vmm (sigvisor's own: every APIC "
                    "access and halt exits to the VMM, which delivers and injects the IPIs); "
                    "empty: kvm. Needs --vcpus 2 or more");
}

Flag Image(std::string* v) {
  return StringFlag(
      "image", v,
      "the guest to boot: kernel (the bundled kernel, in the build --variant picks; "
      "`sigvisor images` lists the builds) or the path of an ELF64 file built against "
      "guest-kit/abi/sigvisor_abi.h, or of a Multiboot v1 kernel (booted as "
      "`qemu-system-x86_64 -kernel` boots it), or with --arch mips of an ELF32 MIPS file");
}
Flag Variant(std::string* v) {
  return StringFlag("variant", v,
                    "which build of the bundled kernel: baseline or accelerated, optionally with "
                    "key=value overrides (dr7=always|lazy, pda=gs|direct, uaccess=err_or|cerr, "
                    "dequeue=copy|pointer), e.g. accelerated,dr7=always; `sigvisor images` lists "
                    "the builds");
}
// "a, b or c": a list of names for help text.
std::string OneOf(std::vector<std::string> names) {
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " or ", last);
}

Flag Workload(std::string* v) {
  return StringFlag("workload", v,
                    absl::StrCat("the workload the bundled kernel's init runs: ",
                                 OneOf(launch::BundledKernelWorkloadNames()),
                                 " (docs/guest-kernel.md); empty: the image's default"));
}
Flag Ops(std::string* v) {
  return StringFlag("ops", v,
                    "operations in the workload's measured phase (a count); empty: the "
                    "workload's default (bench: 100, a study: its own)");
}
Flag Warmup(std::string* v) {
  return StringFlag("warmup", v,
                    "unmeasured ops before each phase of a signal workload (a count >= 1; no "
                    "phase's counts change); empty: 1 (bench --peer: 300, which levels a fresh "
                    "VM with QEMU's)");
}
Flag Cmdline(std::string* v) {
  return StringFlag("cmdline", v, "extra key=value words for the guest command line (boot info)");
}
Flag Memory(uint32_t* v) {
  return Uint32Flag("memory", v, "guest RAM in MiB (2 to 1024, a multiple of 2)");
}
Flag Timeout(absl::Duration* v) {
  Flag flag = DurationFlag(
      "timeout", v,
      "watchdog: stop a guest that runs longer than this (e.g. 20 seconds, 500ms, 10s, 2m)");
  flag.set = [v, parse = std::move(flag.set)](std::string_view text) {
    if (absl::Status s = parse(text); !s.ok()) return s;
    if (*v > kMaxTimeout) {
      return absl::InvalidArgumentError(absl::StrCat(
          "longer than the longest timeout, ", absl::FormatDuration(kMaxTimeout), " (a year)"));
    }
    return absl::OkStatus();
  };
  return flag;
}
Flag Json(bool* v) { return BoolFlag("json", v, "print one JSON document on stdout (schemas in docs/schema)"); }
Flag Kvm(std::string* v) { return StringFlag("kvm", v, "the KVM device to use"); }
Flag NoSandbox(bool* v) {
  return BoolFlag("no_sandbox", v,
                  "do not confine the run-loop thread with the seccomp allowlist (debugging)");
}
Flag Trap(std::string* v) {
  return StringFlag("trap", v,
                    "how guest debug-register accesses and segment loads reach the VMM: auto (the "
                    "cheapest that works here: patch), hw-gd, patch, pv (a debugreg=pv kernel "
                    "counts its own) or off");
}
Flag Inject(std::vector<std::string>* v) {
  return ListFlag("inject", v,
                  "inject a fault, SPEC = WHAT,WHEN[,OPTIONS] (docs/inject.md), e.g. exc=de,op=3 "
                  "or sig=usr1,op=2 or page=np,addr=stack,op=1; repeat for more");
}
Flag Seed(uint64_t* v) {
  return Uint64Flag("seed", v, "the seed that `--inject ...,random` draws its points from");
}
Flag Arch(std::string* v) {
  return StringFlag("arch", v,
                    "the guest architecture: x86_64 (KVM) or mips (the MIPS32r2 interpreter, "
                    "docs/mips-platform.md; --image is then an ELF32 MIPS file)");
}
Flag Cores(uint32_t* v) {
  return Uint32Flag("cores", v,
                    "the MIPS interpreter's cores (1 to 32): run --arch mips, and study tramp's "
                    "several-core rows");
}
Flag Traps(std::string* v) {
  return StringFlag("traps", v,
                    "trap mechanisms to measure each variant under, comma-separated (off, auto, "
                    "patch, hw-gd, pv: each build's debugreg=pv counterpart); empty: bench "
                    "off,auto, a study its own");
}
Flag Repetitions(std::string* v) {
  return StringFlag("repetitions", v,
                    "runs of each workload x variant x trap (a count); empty: bench 5, a study "
                    "its own");
}
void AddOutput(FlagTable& table, OutputOptions& o) {
  table.push_back(Json(&o.json));
  table.push_back(BoolFlag("csv", &o.csv, "print CSV on stdout instead of the text report"));
  table.push_back(StringFlag("svg", &o.svg, "also write an SVG chart to this file"));
}
void AddKvmRuns(FlagTable& table, KvmRunsOptions& o) {
  table.insert(table.end(), {Memory(&o.memory_mib), Timeout(&o.timeout), Kvm(&o.kvm),
                             Inject(&o.inject), Seed(&o.seed), NoSandbox(&o.no_sandbox)});
}

}  // namespace

FlagTable RunFlags(RunOptions& o) {
  return {
      Image(&o.image),
      Variant(&o.variant),
      Workload(&o.workload),
      Ops(&o.ops),
      Warmup(&o.warmup),
      Cmdline(&o.cmdline),
      Memory(&o.memory_mib),
      Timeout(&o.timeout),
      Json(&o.json),
      BoolFlag("quiet", &o.quiet, "do not stream the guest console"),
      Kvm(&o.kvm),
      Trap(&o.trap),
      StringFlag("gdb", &o.gdb,
                 "wait for gdb on [ADDR:]PORT (loopback by default) before the first guest "
                 "instruction (at most --timeout, when given) and serve the GDB remote protocol"),
      NoSandbox(&o.no_sandbox),
      Uint64Flag("max_output", &o.max_output,
                 "stream at most this many bytes of guest console output; the rest is dropped "
                 "and the report says so"),
      ListFlag("module", &o.modules,
               "a module for a Multiboot kernel, FILE or FILE=STRING (the string the kernel "
               "sees; default FILE); repeat the flag for more modules, in order"),
      StringFlag("initrd", &o.initrd,
                 "an initramfs for a Linux kernel (--image bzImage), instead of the embedded "
                 "one whose init runs sigvisor's workloads"),
      BoolFlag("irqchip", &o.irqchip,
               "give a Multiboot kernel an in-kernel irqchip (KVM_CREATE_IRQCHIP: LAPIC, "
               "IOAPIC, PIC) for timers and interrupts"),
      Int32Flag("vcpus", &o.vcpus,
                "vCPUs: for a Multiboot kernel 1 to 64, vCPU 0 boots, the others wait for "
                "INIT/SIPI through the in-kernel LAPIC (implies --irqchip), fw_cfg reports the "
                "count; for the bundled kernel built with smp=on (--variant smp=on) 1 to its "
                "SMP note's count (8), with --trap off, the kernel starting each AP itself"),
      Ipi(&o.ipi),
      Lapic(&o.lapic),
      Inject(&o.inject),
      Seed(&o.seed),
      Arch(&o.arch),
      Cores(&o.cores),
      StringFlag("restore", &o.restore,
                 "a snapshot directory (sigvisor snapshot --out DIR): restore that VM instead "
                 "of booting and give its guest this run's --workload, --ops and --warmup"),
      BoolFlag("block_phase_interrupts", &o.block_phase_interrupts,
               "inject no interrupt between a phase's BEGIN and END markers, so that a kernel "
               "with timers (Linux) measures each phase alone: its ticks wait for the END "
               "(docs/linux-workloads.md)"),
      BoolFlag("check_signal_frames", &o.check_signal_frames,
               "with a signal=pv build: the VMM computes every signal frame and sigreturn but "
               "lets the kernel write them, then compares them byte for byte (docs/pv-signals.md)"),
  };
}

FlagTable SnapshotFlags(SnapshotOptions& o) {
  return {
      Image(&o.image),
      Variant(&o.variant),
      Memory(&o.memory_mib),
      Timeout(&o.timeout),
      Json(&o.json),
      Kvm(&o.kvm),
      StringFlag("trap", &o.trap,
                 "the trap mechanism the kernel boots with: off (restores then take off, patch "
                 "or hw-gd) or pv (a debugreg=pv kernel takes its page at boot; restores take pv)"),
      Int32Flag("vcpus", &o.vcpus,
                "vCPUs: 1, or for the bundled kernel built with smp=on (the build --vcpus 2 "
                "boots without --variant) up to its SMP note's count (8); saved before the "
                "kernel starts its APs, restored with them"),
      Ipi(&o.ipi),
      Lapic(&o.lapic),
      NoSandbox(&o.no_sandbox),
      StringFlag("out", &o.out, "the directory to save the VM in (created if missing)"),
  };
}

FlagTable TraceFlags(TraceOptions& o) {
  return {
      Image(&o.image),
      Variant(&o.variant),
      Workload(&o.workload),
      Ops(&o.ops),
      StringFlag("phase", &o.phase,
                 "the measured phase to trace (e.g. sig_hndl for --workload lat_sig); empty: the "
                 "workload's first"),
      Cmdline(&o.cmdline),
      Memory(&o.memory_mib),
      Timeout(&o.timeout),
      Json(&o.json),
      Kvm(&o.kvm),
      Trap(&o.trap),
      StringFlag("diff", &o.diff,
                 "a second --variant to trace the same op in, shown side by side with the first "
                 "(e.g. dr7=lazy), or linux=KERNEL: a Linux kernel's op beside the bundled "
                 "kernel's, stage by stage"),
      BoolFlag("stages", &o.stages,
               "print only the summary and the signal-path stages of one op (no listing)"),
      NoSandbox(&o.no_sandbox),
      StringFlag("symbols", &o.symbols,
                 "a Linux kernel's System.map: names its code in the trace instead of the "
                 "kernel's own kallsyms (needed only for a kernel built without them); the "
                 "kernel runs with nokaslr"),
      StringFlag("restore", &o.restore,
                 "a snapshot directory (sigvisor snapshot --out DIR): trace a restore of that "
                 "VM instead of a boot, its guest given --workload and --ops (per-op counts are "
                 "a booted trace's; docs/snapshots.md)"),
  };
}

FlagTable ProbeFlags(ProbeCommandOptions& o) {
  return {
      Uint32Flag("iterations", &o.iterations, "trapping operations per measured loop"),
      Uint32Flag("repeats", &o.repeats, "measured loops per mechanism (the median is shown)"),
      Json(&o.json),
      Kvm(&o.kvm),
  };
}

FlagTable ImagesFlags(ImagesOptions& o) { return {Json(&o.json)}; }

FlagTable ImageFlags(ImageOptions& o) {
  return {
      Variant(&o.variant),
      StringFlag("o", &o.o, "the file to write the kernel image to (-o FILE)"),
      Arch(&o.arch),
  };
}

FlagTable SitesFlags(SitesOptions& o) {
  return {
      Image(&o.image),
      Variant(&o.variant),
      Json(&o.json),
      BoolFlag("uaccess", &o.uaccess,
               "list the kernel's user-access instructions (its exception table) instead: the "
               "at= addresses for page injections"),
  };
}

FlagTable BenchFlags(BenchOptions& o) {
  FlagTable table = {
      StringFlag("workloads", &o.workloads,
                 absl::StrCat("workloads, comma-separated (",
                              absl::StrJoin(launch::BenchWorkloadNames(), ", "),
                              ") or all (those of one vCPU); empty: ",
                              absl::StrJoin(launch::BenchDefaultWorkloadNames(), ","))),
      StringFlag("variants", &o.variants,
                 "kernel builds, separated by ';' or spaces (each a --variant spec, e.g. "
                 "'baseline; accelerated,dr7=always', or linux=PATH: a stock Linux kernel "
                 "beside them), or all; empty: baseline;accelerated. A spec may end in "
                 "@vcpus=N, @ipi=x2apic|xapic|pv and/or @lapic=kvm|vmm: its runs' machine, as "
                 "run's --vcpus, --ipi and --lapic (e.g. 'smp=on@vcpus=2@ipi=pv@lapic=vmm'; "
                 "the xcpu_ workloads need @vcpus=2)"),
      Traps(&o.traps),
      Ops(&o.ops),
      Warmup(&o.warmup),
      Repetitions(&o.repetitions),
      StringFlag("shard", &o.shard,
                 "run only slice i of n of the matrix (i/n, 1 <= i <= n), or `auto`: the slice "
                 "from a Slurm job array or a Kubernetes Indexed Job "
                 "(docs/bench-on-a-scheduler.md); `sigvisor merge` combines the slices' --json "
                 "results"),
  };
  AddOutput(table, o.output);
  AddKvmRuns(table, o.runs);
  table.push_back(BoolFlag("restore", &o.restore,
                           "boot each build once to its quiescent point, save it, and restore "
                           "that snapshot for every run instead of booting (the bundled kernel; "
                           "per-op counts are a booted run's; docs/snapshots.md)"));
  table.push_back(StringFlag("snapshots", &o.snapshots,
                             "restore each build's snapshot from DIR/<build name>/ (and its "
                             "debugreg=pv counterpart's, with --traps pv) for every run instead "
                             "of booting: one set of snapshots that every shard restores "
                             "(docs/bench-on-a-scheduler.md); a build without one, or whose "
                             "snapshot does not fit it or this host, is refused"));
  table.push_back(StringFlag("save_snapshots", &o.save_snapshots,
                             "boot each build of --variants (and its debugreg=pv counterpart, "
                             "with --traps pv) to its quiescent point, save it in "
                             "DIR/<build name>/ and stop, running nothing else: the snapshots "
                             "--snapshots DIR restores"));
  table.push_back(StringFlag("peer", &o.peer,
                             "also run the same workloads on the same image under QEMU, "
                             "comma-separated (qemu-kvm, qemu-tcg), and print them side by "
                             "side; a peer that cannot run here is skipped with a reason"));
  return table;
}

FlagTable StudyFlags(StudyOptions& o) {
  FlagTable table = {Ops(&o.ops), Repetitions(&o.repetitions), Traps(&o.traps)};
  AddOutput(table, o.output);
  AddKvmRuns(table, o.runs);
  table.push_back(Cores(&o.cores));
  table.push_back(StringFlag("linux", &o.linux_kernel,
                             "a Linux kernel (vmlinuz) to trace one op of each seed study's "
                             "workload in: the study's Linux column, beside its builds"));
  return table;
}

FlagTable MergeFlags(MergeOptions& o) {
  FlagTable table;
  AddOutput(table, o.output);
  return table;
}

}  // namespace sigvisor::cli
