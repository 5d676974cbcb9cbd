#include "vmm/cli/flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, image, "kernel",
          "the guest to boot: kernel (the bundled kernel, in the build --variant picks; "
          "`sigvisor images` lists the builds) or the path of an ELF64 file built against "
          "guest-kit/abi/sigvisor_abi.h, or of a Multiboot v1 kernel (booted as "
          "`qemu-system-x86_64 -kernel` boots it), or with --arch mips of an ELF32 MIPS file");
ABSL_FLAG(std::string, variant, "baseline",
          "which build of the bundled kernel: baseline or accelerated, optionally with "
          "key=value overrides (dr7=always|lazy, pda=gs|direct, uaccess=err_or|cerr, "
          "dequeue=copy|pointer), e.g. accelerated,dr7=always; `sigvisor images` lists "
          "the builds");
ABSL_FLAG(std::string, workload, "",
          "the workload the bundled kernel's init runs: summary, divzero, lat_sig, "
          "sigpingpong, pipe_rw, hello, console, hostsig, fault or selftest (README.md, "
          "\"Workloads\"); empty: the image's default");
ABSL_FLAG(std::string, ops, "",
          "operations in the workload's measured phase (a count); empty: the workload's "
          "default (bench: 100, a study: its own)");
ABSL_FLAG(std::string, cmdline, "",
          "extra key=value words for the guest command line (boot info)");
ABSL_FLAG(std::vector<std::string>, inject, {},
          "run, bench, study: inject a fault, SPEC = WHAT,WHEN[,OPTIONS] (docs/inject.md), e.g. "
          "exc=de,op=3 or sig=usr1,op=2 or page=np,addr=stack,op=1; repeat for more");
ABSL_FLAG(uint64_t, seed, 1,
          "run, bench, study: the seed that `--inject ...,random` draws its points from");
ABSL_FLAG(bool, uaccess, false,
          "sites: list the kernel's user-access instructions (its exception table) instead: "
          "the at= addresses for page injections");
ABSL_FLAG(std::vector<std::string>, module, {},
          "run: a module for a Multiboot kernel, FILE or FILE=STRING (the string the kernel "
          "sees; default FILE); repeat the flag for more modules, in order");
ABSL_FLAG(bool, irqchip, false,
          "run: give a Multiboot kernel an in-kernel irqchip (KVM_CREATE_IRQCHIP: LAPIC, "
          "IOAPIC, PIC) for timers and interrupts");
ABSL_FLAG(int32_t, vcpus, 1,
          "run: vCPUs for a Multiboot kernel (1 to 64); vCPU 0 boots, the others wait for "
          "INIT/SIPI through the in-kernel LAPIC (implies --irqchip); fw_cfg reports the count");
ABSL_FLAG(uint32_t, memory, 32, "guest RAM in MiB (2 to 1024, a multiple of 2)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(60),
          "watchdog: stop a guest that runs longer than this (e.g. 500ms, 10s, 2m)");
ABSL_FLAG(bool, json, false, "print one JSON document on stdout (schema in README.md)");
ABSL_FLAG(bool, quiet, false, "do not stream the guest console");
ABSL_FLAG(std::string, kvm, "/dev/kvm", "the KVM device to use");
ABSL_FLAG(bool, no_sandbox, false,
          "run, trace, bench, study: do not confine the run-loop thread with the seccomp "
          "allowlist (debugging)");
ABSL_FLAG(uint64_t, max_output, uint64_t{64} << 20,
          "run: stream at most this many bytes of guest console output; the rest is "
          "dropped and the report says so");
ABSL_FLAG(uint32_t, iterations, 200, "probe: trapping operations per measured loop");
ABSL_FLAG(uint32_t, repeats, 3, "probe: measured loops per mechanism (the median is shown)");
ABSL_FLAG(std::string, trap, "off",
          "how guest debug-register accesses and segment loads reach the VMM: auto (the "
          "cheapest that works here: patch), hw-gd, patch, pv (a debugreg=pv kernel counts "
          "its own) or off");
ABSL_FLAG(std::string, phase, "",
          "trace: the measured phase to trace (e.g. sig_hndl for --workload lat_sig); empty: "
          "the workload's first");
ABSL_FLAG(std::string, diff, "",
          "trace: a second --variant to trace the same op in, shown side by side with the "
          "first (e.g. dr7=lazy)");
ABSL_FLAG(bool, stages, false,
          "trace: print only the summary and the signal-path stages of one op (no listing)");
ABSL_FLAG(std::string, gdb, "",
          "run: wait for gdb on [ADDR:]PORT (loopback by default) before the first guest "
          "instruction and serve the GDB remote protocol");
// bench, study, merge (vmm/cli/bench_command.cc, study_command.cc, merge_command.cc).
ABSL_FLAG(std::string, workloads, "",
          "bench: workloads, comma-separated (divzero, lat_sig, sigpingpong, pipe_rw, hello, "
          "console) or all; empty: divzero,lat_sig,sigpingpong,pipe_rw");
ABSL_FLAG(std::string, variants, "",
          "bench: kernel builds, separated by ';' or spaces (each a --variant spec, e.g. "
          "'baseline; accelerated,dr7=always'), or all; empty: baseline;accelerated");
ABSL_FLAG(std::string, traps, "",
          "bench, study: trap mechanisms to measure each variant under, comma-separated "
          "(off, auto, patch, hw-gd, pv: each build's debugreg=pv counterpart); empty: bench "
          "off,auto, a study its own");
ABSL_FLAG(std::string, repetitions, "",
          "bench, study: runs of each workload x variant x trap (a count); empty: bench 5, "
          "a study its own");
ABSL_FLAG(std::string, shard, "",
          "bench: run only slice i of n of the matrix (i/n, 1 <= i <= n), or `auto`: the "
          "slice from a Slurm job array or a Kubernetes Indexed Job "
          "(docs/bench-on-a-scheduler.md); `sigvisor merge` combines the slices' --json "
          "results");
ABSL_FLAG(bool, csv, false, "print CSV on stdout instead of the text report");
ABSL_FLAG(std::string, svg, "", "also write an SVG chart to this file");
ABSL_FLAG(std::string, o, "", "image: the file to write the kernel image to (-o FILE)");
ABSL_FLAG(std::string, peer, "",
          "bench: also run the same workloads on the same image under QEMU, comma-separated "
          "(qemu-kvm, qemu-tcg), and print them side by side; a peer that cannot run here is "
          "skipped with a reason");
ABSL_FLAG(std::string, arch, "x86_64",
          "run: the guest architecture: x86_64 (KVM) or mips (the MIPS32r2 interpreter, "
          "docs/mips-platform.md; --image is then an ELF32 MIPS file)");
ABSL_FLAG(uint32_t, cores, 1, "run --arch mips: the number of emulated cores (1 to 32)");
