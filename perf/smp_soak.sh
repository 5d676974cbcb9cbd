#!/usr/bin/env bash
# The soak of the workloads across CPUs (docs/smp.md): RUNS runs of each of them, on
# VCPUS vCPUs, each way of sending IPIs, OPS ops each. Every run must end with status
# 0, with the same exits and guest-counted IPIs per vCPU as the first run of its kind,
# and with at least one interrupt injected per op into each of vCPUs 0 and 1 (the IPI
# each receives). Halts are not compared: they depend on the host's scheduling
# (docs/smp.md). LAPIC vmm runs them with the VMM's own local APICs (run --lapic vmm):
# then only the APIC's exits (io, mmio, msr) must match, since halts, kicks and
# interrupt windows reach the VMM too and follow the host's timing.
#
# Usage: perf/smp_soak.sh SIGVISOR [RUNS [OPS [VCPUS [IPIS [LAPIC]]]]]
#   defaults: 50 runs, 1000 ops, 4 vCPUs, IPIS "x2apic xapic pv", LAPIC kvm
# Prints one line per workload and way, then "soak: N runs, M failed"; exits 1 if any
# failed. Needs bash and awk only, so it runs in the hardware lane:
#   tests/hwkvm/lane.sh --smp 2 --file perf/smp_soak.sh \
#     --sh '/lane/files/smp_soak.sh /lane/sigvisor 50 1000 4'
set -u
sigvisor=${1:?usage: smp_soak.sh SIGVISOR [RUNS [OPS [VCPUS [IPIS [LAPIC]]]]]}
runs=${2:-50} ops=${3:-1000} vcpus=${4:-4} ipis=${5:-x2apic xapic pv} lapic=${6:-kvm}
workloads="xcpu_pingpong xcpu_kick xcpu_wake"
out=$(mktemp) || exit 125
trap 'rm -f "$out"' EXIT

# The phase's counts per vCPU from the run's JSON (docs/json.md, "Several vCPUs"), one
# line: "vCPU 0: N exits, D device exits, S sent, R received, M interrupts; vCPU 1: ...".
# The exits that reached the VMM (with LAPIC vmm: its device exits, io, mmio and msr) and the IPIs the kernel counted sending and sent to it (guest_ipis) must
# be the same in every run; KVM's injections (irq_injections) must not be fewer than
# the IPIs the rule sends (--ops on each of vCPUs 0 and 1), and may be more: KVM counts
# an injection again when an exit cut its delivery short.
counts() {
  # Each vCPU's object starts with "vcpu", then "exits": {"total", "by_reason"} (the JSON
  # keeps the documented order), then KVM's figures and the guest's IPI counts.
  awk '/"vcpus": \[/ { on = 1 }
       !on { next }
       /"vcpu": / { v = $0; gsub(/[^0-9]/, "", v); cpu = v + 0; if (cpu + 1 > n) n = cpu + 1
                    need_total = 1; need_reasons = 1; need_irq = 1; need_ipis = 1; device[cpu] = 0 }
       need_total && /"total": / { v = $0; gsub(/[^0-9]/, "", v); exits[cpu] = v; need_total = 0 }
       need_reasons && /"by_reason": \{/ { in_reasons = 1; need_reasons = 0 }
       in_reasons && /"(io|mmio|msr)": / { v = $0; gsub(/[^0-9]/, "", v); device[cpu] += v }
       in_reasons && /\}/ { in_reasons = 0 }
       need_irq && /"irq_injections": / { v = $0; gsub(/[^0-9]/, "", v); irq[cpu] = v; need_irq = 0 }
       need_ipis && /"sent": / { v = $0; gsub(/[^0-9]/, "", v); sent[cpu] = v }
       need_ipis && /"received": / { v = $0; gsub(/[^0-9]/, "", v); received[cpu] = v; need_ipis = 0 }
       END { for (c = 0; c < n; c++)
               printf "vCPU %d: %s exits, %d device exits, %s sent, %s received, %s interrupts; ", c, exits[c], device[c], sent[c], received[c], irq[c] }' "$1"
}

# The exits and the guest's IPI counts (what must match exactly), and whether vCPUs 0
# and 1 each had at least OPS injections.
exits_of() {
  if [[ $lapic == vmm ]]; then
    sed -E 's/ [0-9]+ exits,//g; s/, [0-9]+ interrupts//g' <<<"$1"
  else
    sed -E 's/, [0-9]+ interrupts//g' <<<"$1"
  fi
}
enough_interrupts() {
  awk -v ops="$2" '{ for (i = 1; i <= NF; i++) if ($i == "interrupts;") { n++; if (n <= 2 && $(i - 1) + 0 < ops) bad = 1 } }
                   END { exit bad }' <<<"$1"
}

total=0 failed=0
for ipi in $ipis; do
  for workload in $workloads; do
    first="" differ=0 bad=0 start=$SECONDS
    for ((run = 1; run <= runs; run++)); do
      total=$((total + 1))
      if ! "$sigvisor" run --vcpus "$vcpus" --ipi "$ipi" --lapic "$lapic" --workload "$workload" \
        --ops "$ops" --json --quiet --timeout 600 >"$out" 2>&1; then
        bad=$((bad + 1))
        echo "  $workload $ipi run $run: status $?: $(tail -n 3 "$out" | tr '\n' ' ')"
        continue
      fi
      got=$(counts "$out")
      if ! enough_interrupts "$got" "$ops"; then
        differ=$((differ + 1))
        echo "  $workload $ipi run $run: fewer interrupts than IPIs: $got"
      fi
      if [[ -z $first ]]; then
        first=$got
      elif [[ $(exits_of "$got") != "$(exits_of "$first")" ]]; then
        differ=$((differ + 1))
        echo "  $workload $ipi run $run: exits or IPIs differ: $got"
      fi
    done
    failed=$((failed + bad + differ))
    echo "$workload --ipi $ipi --lapic $lapic --vcpus $vcpus: $runs runs of $ops ops, $bad failed," \
      "$differ with other counts, $((SECONDS - start)) s; the first: $first"
  done
done
echo "soak: $total runs, $failed failed"
[[ $failed -eq 0 ]]
