#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/exit_status.h"

namespace sigvisor::cli {
namespace {

std::string FlagError(const Command& command, const absl::Status& status);

// One command's entry: its flag table over a fresh options struct, parsed, then run.
template <typename Options, FlagTable (*kFlags)(Options&), int (*kRun)(const Options&)>
constexpr Command Define(std::string_view name, std::string_view summary,
                         std::string_view description) {
  return {name, summary, description,
          [] {
            Options defaults;
            FlagTable table = kFlags(defaults);
            for (Flag& flag : table) flag.set = nullptr;  // they would write to `defaults`
            return table;
          },
          [](const Command& self, std::span<char* const> argv) {
            Options options;
            if (absl::Status s = ParseFlags(kFlags(options), argv, options); !s.ok()) {
              return ReportError(FlagError(self, s));
            }
            return kRun(options);
          }};
}

}  // namespace

std::span<const Command> Commands() {
  static const Command kCommands[] = {
      Define<RunOptions, RunFlags, RunCommand>("run", "boot a guest, stream its console, report its VM exits",
       "Boots a guest (by default the bundled kernel) in a fresh KVM VM and streams its\n"
       "console. At the end it prints the outcome, the exit table (per reason: count,\n"
       "mean and max VMM handling time), KVM's own statistics and one block per phase the\n"
       "guest measured (BEGIN/END markers), per operation. Exit status: the guest's own\n"
       "(0-122); 123 when the guest's status is above 122 (the report gives it); 124 when\n"
       "the guest failed (triple fault, panic, timeout, ...), with a one-line diagnosis on\n"
       "stderr; 125 when sigvisor failed (bad input, no KVM, ...): see `sigvisor help`.\n"
       "\nWith --trap, the guest's debug-register accesses and segment-register loads\n"
       "trap to the VMM, which emulates them (DR7 lazily) and counts them by kind and\n"
       "site, per phase and per op. auto picks patch (see docs/traps.md).\n"
       "\nExamples:\n"
       "  sigvisor run\n"
       "  sigvisor run --workload console --ops 100 --json\n"
       "  sigvisor run --workload divzero --ops 100 --trap=auto\n"
       "  sigvisor run --image path/to/guest.elf --timeout 5s\n"
       "  sigvisor run --image multiboot-kernel.elf --cmdline 'a=1' --module initrd=init\n"
       "     (a Multiboot v1 kernel, booted as `qemu-system-x86_64 -kernel` boots it)\n"
       "  sigvisor run --image smp-kernel.elf --vcpus 4\n"
       "     (APs started by the kernel's INIT/SIPI through the in-kernel LAPIC)\n"
       "  sigvisor run --workload divzero --gdb 1234   (then: gdb FILE -ex 'target remote :1234')\n"
       "  sigvisor run --workload lat_sig --inject sig=usr1,op=3,phase=sig_hndl --json\n"
       "     (fault injection: exceptions, host signals, page faults; see docs/inject.md)\n"
       "  sigvisor run --arch mips --variant tramp=vdso --cores 4 --workload lat_sig\n"
       "     (the bundled MIPS kernel on sigvisor's MIPS32r2 interpreter; no KVM needed)"),
      Define<ProbeCommandOptions, ProbeFlags, ProbeCommand>("probe", "measure what this host's KVM does and what trapping costs",
       "Boots tiny calibration guests and reports whether guest CPL0 is emulated (PVM) or\n"
       "native, whether SYSCALL enters CPL0, whether INT n works from CPL3, and which trap\n"
       "mechanisms reach the VMM, with their round-trip cost (median over --repeats loops of\n"
       "--iterations operations, minus an empty loop)."),
      Define<ImagesOptions, ImagesFlags, ImagesCommand>("images", "list the builds of the bundled kernel (its --variant values)",
       "Lists the builds of the bundled kernel (--image kernel, the default), x86-64 and\n"
       "MIPS, by the --variant value that picks each, with its seed settings and sizes.\n"
       "They are --variant values, not --image names: --image takes `kernel` or the path\n"
       "of an ELF file.\n"
       "\nExamples:\n"
       "  sigvisor images\n"
       "  sigvisor run --variant accelerated,dr7=always\n"
       "  sigvisor run --arch mips --variant tramp=vdso"),
      Define<ImageOptions, ImageFlags, ImageCommand>("image", "write a build of the bundled kernel out as an ELF file (-o FILE)",
       "Writes the bundled kernel in build --variant (see `sigvisor images`) to FILE,\n"
       "byte for byte the image `sigvisor run --variant V` boots. The file carries both\n"
       "entries: the direct 64-bit one sigvisor uses and a Multiboot v1 header with a\n"
       "32-bit entry that sets up long mode itself, so QEMU boots it too; without\n"
       "sigvisor's hypercall device the kernel talks to COM1 and isa-debug-exit. An\n"
       "existing file is replaced; a directory or an unwritable path is refused (status 125).\n"
       "\nExamples:\n"
       "  sigvisor image -o kernel.elf\n"
       "  sigvisor image --variant accelerated,dr7=always -o dr7-always.elf\n"
       "  sigvisor run --image kernel.elf --workload divzero --ops 100\n"
       "  qemu-system-x86_64 -accel kvm -kernel kernel.elf -append 'kernel workload=divzero ops=100' \\\n"
       "     -display none -serial stdio -device isa-debug-exit,iobase=0xf4,iosize=4\n"
       "  sigvisor image --arch mips --variant tramp=vdso -o mips.elf   (an ELF32 MIPS image;\n"
       "     qemu-system-mipsel -M malta -cpu 74Kf -kernel mips.elf boots it too)"),
      Define<SitesOptions, SitesFlags, SitesCommand>("sites", "list an image's trap sites (debug-register moves, segment loads)",
       "Scans the image's executable sections with Capstone (restarting at each ELF\n"
       "symbol) and lists every instruction --trap=patch arms: moves to and from DR0-DR7\n"
       "and segment-register loads (mov/pop to a segment register, lfs/lgs/lss, swapgs,\n"
       "wrfsbase/wrgsbase, wrmsr), with address, symbol+offset, bytes and disassembly.\n"
       "\nWith --uaccess it lists instead the kernel's user-access instructions (its\n"
       "exception table: each access and the fixup a fault there resumes at), the\n"
       "addresses to aim page injections at (docs/inject.md).\n"
       "\nExamples:\n"
       "  sigvisor sites\n"
       "  sigvisor sites --image path/to/guest.elf --json\n"
       "  sigvisor sites --uaccess --variant uaccess=cerr"),
      Define<TraceOptions, TraceFlags, TraceCommand>("trace", "single-step a measured phase: every instruction, per-function profile",
       "Boots the bundled kernel with --workload and --ops K and single-steps the guest\n"
       "(KVM_GUESTDBG_SINGLESTEP) from the measured phase's BEGIN marker to its END:\n"
       "every instruction with address, symbol+offset, bytes and Capstone's disassembly,\n"
       "exits, traps, exceptions and privilege changes marked where they happen. Code the\n"
       "host does not step (CPL3 on PVM hosts) is one opaque step with its entry and exit.\n"
       "Then a summary per op: kernel instructions per function and per stage of signal\n"
       "delivery, checked against the kernel instruction count the ledger reports.\n"
       "\nExamples:\n"
       "  sigvisor trace --workload divzero --ops 1\n"
       "  sigvisor trace --workload divzero --ops 1 --stages\n"
       "  sigvisor trace --workload divzero --ops 1 --variant dr7=always --diff dr7=lazy\n"
       "  sigvisor trace --workload lat_sig --phase sig_hndl --ops 1 --json"),
      Define<BenchOptions, BenchFlags, BenchCommand>("bench", "run workloads x kernel variants x trap mechanisms, variants interleaved",
       "Runs a matrix of the bundled kernel's workloads x builds (--variants) x trap\n"
       "mechanisms (--traps) x --repetitions in one process, one fresh VM per run, the\n"
       "variants alternating (A B A B ...) so that drift touches all alike. Per cell and\n"
       "phase: exits, traps and kernel instructions per op, which must agree across\n"
       "repetitions (flagged when not), and time per op as median [min - max]. Progress\n"
       "goes to stderr; Ctrl-C stops after the current run and reports what completed.\n"
       "--shard i/n runs one slice of the matrix; `sigvisor merge` combines the slices'\n"
       "--json results. Exit status: 0 complete, 1 runs failed or missing, 125 bad input.\n"
       "\nExamples:\n"
       "  sigvisor bench\n"
       "  sigvisor bench --workloads divzero --variants 'baseline;dr7=lazy' --traps off,auto\n"
       "  sigvisor bench --variants all --repetitions 10 --json > bench.json\n"
       "  sigvisor bench --shard 2/4 --json > part2.json    # then: sigvisor merge part*.json\n"
       "  sigvisor bench --csv --svg bench.svg\n"
       "\nSide by side with QEMU (--peer): the same workloads on the same image (one\n"
       "--variants build, traps off) under `qemu-system-x86_64 -kernel` with -accel kvm\n"
       "and/or tcg, where the image boots through its Multiboot header and talks to COM1\n"
       "and isa-debug-exit. Per workload: total run time (QEMU: the whole process); per\n"
       "phase: time per op from the guest's own TSC timing line, and for sigvisor only\n"
       "exits, traps and kernel instructions per op (QEMU has no ledger). A QEMU that is\n"
       "not on PATH, or an accelerator that does not start here, is reported as skipped.\n"
       "  sigvisor bench --peer qemu-kvm,qemu-tcg --workloads divzero,lat_sig --ops 100\n"
       "  sigvisor bench --peer qemu-tcg --repetitions 3 --json > side-by-side.json"),
      Define<StudyOptions, StudyFlags, StudyCommand>("study", "reproduce a seed's experiment: dr7, pda, cerr, dequeue, all, or tramp (MIPS)",
       "Runs one seed's experiment (docs/seeds.md, 000-003) as a bench of the baseline\n"
       "against the build with the seed's change, prints a table shaped like the seed's,\n"
       "then the VM-level figures (time, kernel instructions, exits and traps per op; the\n"
       "kernel's text size, the signal object's size and stack, bloat-o-meter) and for each\n"
       "whether it goes the seed's way; one that goes against it is marked FINDING.\n"
       "  dr7      seed 000: divzero, dr7=always vs lazy, traps off and patch\n"
       "  pda      seed 001: pipe_rw, pda=gs vs direct, traps off and patch, kernel text\n"
       "  cerr     seed 002: lat_sig sig inst/sig hndl, uaccess=err_or vs cerr, size, stack\n"
       "  dequeue  seed 003: sigpingpong mean/stddev, dequeue=copy vs pointer, bloat-o-meter\n"
       "  all      the four, in that order (a minute or two here)\n"
       "  tramp    seed 004 on the MIPS interpreter (no KVM): lat_sig sig hndl, tramp=stack\n"
       "           vs vdso, on 1 core and on --cores N (default 4): instructions, I-cache\n"
       "           lines flushed, IPIs and modelled time per signal, and wall time; on its own\n"
       "--ops, --repetitions and --traps override every chosen study's own.\n"
       "\nExamples:\n"
       "  sigvisor study all\n"
       "  sigvisor study dr7 --repetitions 20 --svg dr7.svg\n"
       "  sigvisor study cerr dequeue --json > studies.json\n"
       "  sigvisor study tramp --cores 8"),
      Define<MergeOptions, MergeFlags, MergeCommand>("merge", "combine `sigvisor bench --shard i/n --json` results into one",
       "Reads the JSON results of bench runs of one matrix cut into shards (any order) and\n"
       "prints the combined result as text, --json or --csv, as `sigvisor bench` would\n"
       "have printed it in one run. Refuses results of different matrices, kernel builds\n"
       "or hosts and a shard given twice; missing shards leave the result INCOMPLETE\n"
       "(exit status 1).\n"
       "\nExample:\n"
       "  sigvisor merge part1.json part2.json part3.json part4.json --json > bench.json"),
  };
  return kCommands;
}

const Command* FindCommand(std::string_view name) {
  for (const Command& command : Commands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

int ReportError(std::string_view message) {
  std::fprintf(stderr, "sigvisor: error: %.*s\n", static_cast<int>(message.size()),
               message.data());
  return kExitSigvisorFailed;
}

int ReportError(const absl::Status& status) { return ReportError(std::string(status.message())); }

namespace {

// A flag the command's table lacks is another command's ("does not apply") or no
// command's ("unknown flag"); any other parse error says so itself.
std::string FlagError(const Command& command, const absl::Status& status) {
  if (!absl::IsNotFound(status)) return std::string(status.message());
  const std::string name(status.message());
  const std::string spelled = Spelled(name);
  for (const Command& other : Commands()) {
    for (const Flag& flag : other.flags()) {
      if (flag.name == name) {
        return absl::StrFormat("%s does not apply to `sigvisor %s` (see `sigvisor help %s`)",
                               spelled, command.name, command.name);
      }
    }
  }
  return absl::StrFormat("unknown flag %s (see `sigvisor help %s`)", spelled, command.name);
}

}  // namespace

std::string HelpText(const Command* command) {
  std::string out;
  if (command == nullptr) {
    out = "sigvisor: a KVM hypervisor for measuring the cost of signal delivery.\n\n"
          "usage: sigvisor <command> [flags]\n\ncommands:\n";
    for (const Command& c : Commands()) {
      absl::StrAppendFormat(&out, "  %-8s %s\n", c.name, c.summary);
    }
    out += "  help     show this, or `sigvisor help <command>` for a command's flags\n";
    out += "\n--version prints the version and the commit sigvisor was built from (every JSON\n"
           "document names both in its \"sigvisor\" member).\n\n";
    out += ExitStatusHelp();
    return out;
  }
  absl::StrAppendFormat(&out, "usage: sigvisor %s [flags]\n\n%s\n\nflags:\n", command->name,
                        command->description);
  out += FlagHelp(command->flags());
  return out;
}

}  // namespace sigvisor::cli
