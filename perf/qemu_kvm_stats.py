#!/usr/bin/env python3
"""KVM's own statistics for a guest under QEMU, per op: what `bench --peer` cannot show.

sigvisor reads KVM's statistics per phase; QEMU keeps no such ledger, but QMP's
`query-stats` (QEMU 7.1 and later) returns the same per-vCPU counters. This runs the
bundled kernel under `qemu-system-x86_64 -accel kvm` with one long phase, samples
those counters every INTERVAL seconds, and prints the rates between samples and, for
the steady middle of the phase, the counters per op (ops per second from the guest's
own timing line). Compare with `sigvisor run --workload W --ops N --json`, whose
phases carry `kvm_stats`.

Usage: perf/qemu_kvm_stats.py IMAGE [WORKLOAD] [OPS] [INTERVAL] [TSC_KHZ]
  IMAGE     the bundled kernel as a file: `sigvisor image -o kernel.elf`
  WORKLOAD  default divzero; OPS default 5000 (long enough for several samples where
            guest CPL0 is emulated); INTERVAL default 0.5 s; TSC_KHZ default from
            /proc/cpuinfo.
Nothing here is a test: rates move with the host's load.
"""
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

KEYS = ["exits", "insn_emulation", "insn_emulation_fail", "req_event", "pf_taken",
        "irq_injections", "io_exits", "signal_exits", "fpu_reload"]


class Qmp:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.file = self.sock.makefile("rw")
        json.loads(self.file.readline())  # the greeting
        self.call("qmp_capabilities")

    def call(self, command, **arguments):
        request = {"execute": command}
        if arguments:
            request["arguments"] = arguments
        self.file.write(json.dumps(request) + "\n")
        self.file.flush()
        while True:  # skip asynchronous events
            reply = json.loads(self.file.readline())
            if "return" in reply or "error" in reply:
                return reply

    def vcpu_stats(self):
        totals = {}
        for vcpu in self.call("query-stats", target="vcpu").get("return", []):
            for stat in vcpu["stats"]:
                if isinstance(stat["value"], int):
                    totals[stat["name"]] = totals.get(stat["name"], 0) + stat["value"]
        return totals


def host_tsc_khz():
    """The TSC rate the guest's cycles are in: the guest TSC runs at the host's, whose
    rate /proc/cpuinfo gives to the kHz on a constant-TSC CPU (KVM_GET_TSC_KHZ agrees
    on this project's hosts); give TSC_KHZ where it does not."""
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) * 1000
    sys.exit("no 'cpu MHz' in /proc/cpuinfo: give TSC_KHZ")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    image = sys.argv[1]
    if not os.path.isfile(image):
        sys.exit(f"qemu_kvm_stats: no image file '{image}' (sigvisor image -o kernel.elf)")
    workload = sys.argv[2] if len(sys.argv) > 2 else "divzero"
    ops = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    interval = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
    tsc_khz = float(sys.argv[5]) if len(sys.argv) > 5 else host_tsc_khz()
    with tempfile.TemporaryDirectory(prefix="qemu-kvm-stats-") as work:
        samples, output = run_sampled(image, workload, ops, interval, work)
    return report(samples, output, tsc_khz)


def run_sampled(image, workload, ops, interval, work):
    """Runs QEMU with its QMP socket in `work`; returns the samples and the console."""
    qmp_path, console = os.path.join(work, "qmp.sock"), os.path.join(work, "console")
    errors = open(os.path.join(work, "stderr"), "w+")
    qemu = subprocess.Popen(
        ["qemu-system-x86_64", "-accel", "kvm", "-kernel", image, "-append",
         f"kernel workload={workload} ops={ops}", "-display", "none", "-serial",
         f"file:{console}", "-monitor", "none", "-no-reboot", "-m", "64", "-device",
         "isa-debug-exit,iobase=0xf4,iosize=4", "-qmp", f"unix:{qmp_path},server=on,wait=off"],
        stderr=errors)
    for _ in range(500):
        if os.path.exists(qmp_path) or qemu.poll() is not None:
            break
        time.sleep(0.01)
    try:
        qmp = Qmp(qmp_path)
    except (OSError, ValueError):
        qemu.kill()
        qemu.wait()
        errors.seek(0)
        why = (errors.read().strip().splitlines() or ["no message"])[-1]
        sys.exit(f"qemu_kvm_stats: QEMU ended before its QMP socket answered: {why}")
    samples = []
    while qemu.poll() is None:
        try:
            samples.append((time.monotonic(), qmp.vcpu_stats()))
        except (OSError, ValueError):
            break  # QEMU went away between poll() and the query
        time.sleep(interval)
    qemu.wait()
    with open(console) as text:
        return samples, text.read()


def report(samples, output, tsc_khz):
    """Prints the rates between samples and, over the phase's steady middle, per op."""
    print("t (s)  " + "  ".join(KEYS) + "   (per second)")
    rates = []
    for (t0, a), (t1, b) in zip(samples, samples[1:]):
        rate = {k: (b.get(k, 0) - a.get(k, 0)) / (t1 - t0) for k in KEYS}
        rates.append(rate)
        print(f"{t0 - samples[0][0]:5.1f}  " + "  ".join(f"{rate[k]:.0f}" for k in KEYS))
    # The phase: the guest's timing lines, e.g. "divzero: 5000 signal, N tsc cycles per signal".
    lines = re.findall(r"^(.*?): (\d+) \S+, (\d+) tsc cycles per", output, re.M)
    if not lines or len(rates) < 5:
        print("no timing line, or too few samples for a steady middle:\n" + output[-400:])
        return 1
    name, _, cycles = lines[-1]
    ops_per_s = tsc_khz * 1000 / int(cycles)
    # The steady middle: drop the firmware before the phase and the tail after it by
    # keeping the samples whose instruction rate is within 10% of the median of the
    # second half (the phase dominates a long run's end).
    late = statistics.median(r["insn_emulation"] for r in rates[len(rates) // 2:])
    steady = [r for r in rates if abs(r["insn_emulation"] - late) < 0.1 * late]
    print(f"\n{name}: {ops_per_s:.0f} ops/s from its timing line; per op over "
          f"{len(steady)} steady samples:")
    for k in KEYS:
        print(f"  {k:20s} {statistics.median(r[k] for r in steady) / ops_per_s:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
