#!/usr/bin/env bash
# The hardware-KVM lane: sigvisor's KVM tests on hardware-style KVM, on a machine
# whose own /dev/kvm is something else (this project's PVM hosts) or absent.
#
# QEMU's TCG emulates an AMD CPU with SVM and nested paging (-cpu max). Debian's own
# kernel boots on it with kvm and kvm-amd loaded, and its /dev/kvm runs guest CPL0
# directly, as VMX/SVM hardware does. This script builds that machine's image (the
# kernel and modules from Debian's package, busybox, and every test target tagged
# "kvm" with its runfiles and shared libraries), boots it, runs the tests inside
# (tests/hwkvm/init) and reports each one as `bazel test` does, as LABEL@hwkvm.
#
# Usage: tests/hwkvm/lane.sh [options] [TARGET...]     (from anywhere in the repo)
#   TARGET        test labels to run (default: every test tagged "kvm", unless
#                 --sigvisor is given)
#   --sigvisor 'ARGS'  also run `sigvisor ARGS` in the lane and show its output
#                 (repeatable), e.g. --sigvisor 'trace --workload divzero --stages'
#   --file PATH   copy PATH into the lane as /lane/files/NAME (repeatable; an ELF
#                 file's shared libraries come along), e.g. another build of sigvisor
#   --sh 'COMMAND'  also run a shell command in the lane (busybox's tools and bash) and
#                 show its output (repeatable), e.g. --file perf/startup.sh --file OLD
#                 --sh '/lane/files/startup.sh /lane/sigvisor 30 /lane/files/OLD'
#   --keep DIR    build the image and write the console log in DIR, and keep them
#   --smp N       the TCG machine's CPUs (default 1)
#   --tcg MODE    QEMU's TCG threads with --smp 2 or more: multi (default: a thread per
#                 CPU) or single (one thread runs them in turn). Nested SVM is fragile
#                 either way at -smp 2: under multi the lane's own kernel stalled (soft
#                 lockups on both CPUs) in 4 of 7 runs of //tests:smp_bench_test, whose
#                 many short guests run on 2 vCPUs, and in 0 of 5 under single; under
#                 single, Debian's kernel booted on 2 vCPUs by sigvisor failed in 4 of 6
#                 runs (a page-fault storm, a CPU spinning), and in 0 of 6 under multi.
#                 So: --tcg single for the bundled kernel's SMP tests, multi for Linux.
#   --memory MIB  its memory (default 3072)
#   --timeout S   each test's limit inside the lane, in seconds (default 900)
#   --limit S     the whole lane's limit, boot included (default 2400: 40 minutes)
#   --silence S   how long a silent heartbeat means the lane has stopped (default 120);
#                 the lane then boots again at the test it stopped under, once
# Needs what tools/setup.sh provides: qemu-system-x86, cpio, and the kernel and
# busybox packages it fetches into $SIGVISOR_LANE_CACHE (default
# /var/cache/sigvisor/hwkvm). Exit status: 0 when every test passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
workspace=$(pwd)

usage() { sed -n '/^# Usage:/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
keep="" smp=1 tcg=multi memory=3072 test_timeout=900 lane_limit=2400 silence=120 targets=() commands=() files=()
while (($#)); do
  case $1 in
    --keep) keep=${2:?--keep needs a directory}; shift 2 ;;
    --sigvisor) commands+=("${2:?--sigvisor needs the arguments}"); shift 2 ;;
    --sh) commands+=("sh ${2:?--sh needs a command}"); shift 2 ;;
    --file) files+=("$(realpath "${2:?--file needs a path}")"); shift 2 ;;
    --smp) smp=${2:?}; shift 2 ;;
    --tcg) tcg=${2:?}; shift 2 ;;
    --memory) memory=${2:?}; shift 2 ;;
    --timeout) test_timeout=${2:?}; shift 2 ;;
    --limit) lane_limit=${2:?}; shift 2 ;;
    --silence) silence=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "lane.sh: unknown option $1" >&2; usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ $tcg == multi || $tcg == single ]] || { echo "lane.sh: --tcg $tcg: give multi or single" >&2; exit 2; }

cache=${SIGVISOR_LANE_CACHE:-/var/cache/sigvisor/hwkvm}
fail() { echo "hwkvm lane: $*" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 is missing: run tools/setup.sh"
command -v cpio >/dev/null || fail "cpio is missing: run tools/setup.sh"
kernel_deb=$(ls "$cache"/linux-image-*-amd64_*.deb 2>/dev/null | sort -V | tail -1 || true)
busybox_deb=$(ls "$cache"/busybox-static_*.deb 2>/dev/null | tail -1 || true)
[[ -n $kernel_deb && -n $busybox_deb ]] ||
  fail "Debian's kernel and busybox-static packages are not in $cache: run tools/setup.sh"

if [[ -n $keep ]]; then
  mkdir -p "$keep"
  work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
started=$SECONDS

# --- The tests and their command lines -------------------------------------------
if ((${#targets[@]} == 0 && ${#commands[@]} == 0)); then
  mapfile -t targets < <(bazel query --noshow_progress 'attr(tags, "\bkvm\b", tests(//...))' 2>/dev/null)
fi
((${#targets[@]} + ${#commands[@]})) || fail "no test targets"
echo "hwkvm lane: building ${#targets[@]} test targets and sigvisor" >&2
bazel build --noshow_progress //vmm/app/cli:sigvisor "${targets[@]}" >&2 || fail "the build failed"
bin=$(bazel info bazel-bin 2>/dev/null)
bin=$(readlink -f "$bin")

# A test's arguments as its BUILD file gives them; `$(location //pkg:name)` is the
# runfiles path pkg/name, as Bazel expands it for a test.
declare -A test_args
package="" label=""
while IFS= read -r line; do
  case $line in
    "# $workspace/"*BUILD*:*:*)  # where the rule is: its package
      package=${line#"# $workspace/"}; package=${package%/BUILD*} ;;
    "# "*) ;;
    *"name = "*) label=${line#*\"}; label=//$package:${label%%\"*} ;;
    *"args = ["*)
      args=${line#*\[}; args=${args%\]*}
      args=$(sed -E 's/"//g; s/, / /g; s#\$\(location //([^:)]*):([^)]*)\)#\1/\2#g' <<<"$args")
      test_args[$label]=$args ;;
  esac
done < <(((${#targets[@]})) &&
         bazel query --noshow_progress --output=build "set(${targets[*]})" 2>/dev/null)

# --- The image ---------------------------------------------------------------------
root=$work/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,root,lane,lib/modules,lib64,lib/x86_64-linux-gnu}

# Kernel and modules, unpacked once per package version.
kver=$(basename "$kernel_deb"); kver=${kver#linux-image-}; kver=${kver%%_*}
unpacked=$(tools/unpack_kernel.sh "$cache") || fail "cannot unpack $(basename "$kernel_deb")"
modules=$unpacked/lib/modules/$kver/kernel
for module in virt/lib/irqbypass drivers/crypto/ccp/ccp arch/x86/kvm/kvm arch/x86/kvm/kvm-amd; do
  file=$(ls "$modules/$module".ko* | head -1)
  case $file in
    *.xz) xz -dc "$file" >"$root/lib/modules/$(basename "$module").ko" ;;
    *) cp "$file" "$root/lib/modules/$(basename "$module").ko" ;;
  esac
done
dpkg-deb --fsys-tarfile "$busybox_deb" | tar -x -O ./bin/busybox >"$root/bin/busybox"
chmod +x "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
# Shell tests start with `#!/usr/bin/env bash`: the machine's own bash comes along.
mkdir -p "$root/usr/bin"
ln -s /bin/busybox "$root/usr/bin/env"
cp "$(readlink -f /bin/bash)" "$root/bin/bash"
cp tests/hwkvm/init "$root/init"
# The Linux-guest tests boot this kernel under sigvisor inside the lane too
# ($SIGVISOR_LINUX_KERNEL, which the lane's init sets).
cp "$unpacked/vmlinuz" "$root/lane/vmlinuz"
cp tests/hwkvm/gtest_cases.awk "$root/lane/"

# Each test's runfiles tree at its own absolute path, its symlinks pointing at the
# real files, which are copied once each to their own absolute paths: the binaries'
# $ORIGIN-relative library paths then resolve inside the image as they do here.
declare -A copied
copy_real() {
  local real=$1
  [[ -z ${copied[$real]:-} ]] || return 0
  copied[$real]=1
  mkdir -p "$root$(dirname "$real")"
  cp -rL "$real" "$root$real"
}
executables=()
: >"$root/lane/tests"
for target in "${targets[@]}"; do
  package=${target#//}; package=${package%%:*}; name=${target##*:}
  executable=$bin/$package/$name
  runfiles=$(readlink -f "$executable.runfiles")
  [[ -d $runfiles ]] || fail "$target has no runfiles at $runfiles"
  while IFS= read -r -d '' entry; do
    dest=$root$entry
    mkdir -p "$(dirname "$dest")"
    if [[ -L $entry ]]; then
      real=$(readlink -f "$entry")
      copy_real "$real"
      ln -sfn "$real" "$dest"
    else
      cp "$entry" "$dest"
    fi
  done < <(find "$runfiles" \( -type l -o -type f \) -print0)
  executables+=("$(readlink -f "$executable")")
  echo "$target|$runfiles|$package/$name|${test_args[$target]:-}" >>"$root/lane/tests"
done
copy_real "$bin/_solib_k8"
cp "$(readlink -f "$bin/vmm/app/cli/sigvisor")" "$root/lane/sigvisor"
executables+=("$(readlink -f "$bin/vmm/app/cli/sigvisor")" /bin/bash)
printf '%s\n' "${commands[@]}" >"$root/lane/commands"
mkdir -p "$root/lane/files"
for file in "${files[@]}"; do
  [[ -f $file ]] || fail "--file $file: not a file"
  cp "$file" "$root/lane/files/"
  [[ $(head -c 4 "$file") == $'\x7fELF' ]] && executables+=("$file")
done

# The system's shared libraries the executables load (their own libraries resolve
# through _solib_k8 above), and the dynamic loader. A shell test's script is no ELF
# file: ldd refuses it, and that is no error here.
while read -r library; do
  cp -L "$library" "$root/lib/x86_64-linux-gnu/"
done < <(for e in "${executables[@]}"; do ldd "$e" 2>/dev/null || true; done |
           awk '$3 ~ /^\/(usr\/)?lib/ {print $3}' | sort -u)
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"

(cd "$root" && find . | cpio -o -H newc --quiet) >"$work/initrd.cpio"
echo "hwkvm lane: image $(du -m "$work/initrd.cpio" | cut -f1) MiB, kernel $kver," \
  "${#targets[@]} tests; booting QEMU TCG (-cpu max, -smp $smp, thread=$tcg, ${memory} MiB)" >&2

# --- Boot, run, report -------------------------------------------------------------
# The lane's own kernel can stop under nested SVM on TCG: once, in CI, it went silent
# under //tests:linux_trace_test (131-293 s in every other run) until the lane's limit
# 36 minutes later, init's per-test `timeout` never firing. So init writes a heartbeat
# on a second serial port every $beat seconds, and a heartbeat silent for $silence
# seconds means the lane has stopped (its kernel, or QEMU), whatever a test is doing: a
# slow test is init's `timeout` to end. The lane then asks QEMU's monitor where the CPU
# is, stops QEMU and boots again at the item it stopped under; an item the lane stops
# under twice is NO STATUS, and the next boot starts after it. Each stop is reported.
beat=10
# The whole run's limit: every test at its limit plus the boot, at most --limit (a
# lane that hangs must not outlast CI's own limit).
limit=$((test_timeout * (${#targets[@]} + ${#commands[@]}) + 300))
((limit <= lane_limit)) || limit=$lane_limit
deadline=$((SECONDS + limit))
console=$work/console.log
report=$work/report.txt
: >"$console"
: >"$report"
items=("${targets[@]}")
for command in "${commands[@]}"; do
  case $command in "sh "*) items+=("${command#sh }") ;; *) items+=("sigvisor $command") ;; esac
done

# cpu_state: where QEMU's CPU is, from its monitor, sampled twice a second apart (a RIP
# that moves is a CPU that runs), or that the monitor did not answer (QEMU is stuck).
cpu_state() {
  local sample registers states=()
  for sample in 1 2; do
    ((sample == 1)) || sleep 1
    timeout 2 sh -c 'printf "info registers\n" >"$1"' _ "$work/monitor.in" ||
      { echo "QEMU's monitor did not answer"; return; }
    registers=$(timeout 2 cat "$work/monitor.out" | tr -d '\r' |
                  grep -oE '(RIP|CPL|HLT)=[0-9a-f]+' | tail -3 | tr '\n' ' ')
    [[ -n $registers ]] || { echo "QEMU's monitor did not answer"; return; }
    states+=("${registers% }")
  done
  echo "its CPU at ${states[0]}, then ${states[1]}"
}

# boot_lane FIRST: boots the lane at item FIRST (its tests, then its commands, counted
# from 0) and reports what it prints until it powers off, stops beating, or runs out of
# time. Sets ended (done, stopped, exited or limit), at (the item it ended under, or the
# one it was about to run) and running (1: that item had begun).
boot_lane() {
  local item=$(($1 - 1)) in_log=0 current="" line="" partial="" done_seen=0
  local heartbeat=$work/heartbeat heard=$SECONDS checked=$SECONDS size=0 now_size qemu qemu_out
  : >"$heartbeat"
  rm -f "$work/monitor.in" "$work/monitor.out"
  mkfifo "$work/monitor.in" "$work/monitor.out"
  exec {qemu_out}< <(exec qemu-system-x86_64 -accel "tcg,thread=$tcg" -cpu max \
    -smp "$smp" -m "$memory" -kernel "$unpacked/vmlinuz" -initrd "$work/initrd.cpio" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off nokaslr hwkvm_timeout=$test_timeout hwkvm_first=$1 hwkvm_beat=$beat" \
    -display none -monitor "pipe:$work/monitor" -serial stdio -serial "file:$heartbeat" \
    -no-reboot </dev/null 2>&1)
  qemu=$!
  ended=""
  while [[ -z $ended ]]; do
    if IFS= read -r -t 5 -u "$qemu_out" line; then
      line=$partial${line%$'\r'} partial=""
      printf '%s\n' "$line" >>"$console"
      case $line in
        HWKVM-BEGIN\ *)
          item=$((item + 1)) current=${line#HWKVM-BEGIN }
          echo "hwkvm lane: $current ..." ;;
        HWKVM-END\ *)
          read -r _ label rc seconds <<<"$line"
          rc=${rc#rc=}; seconds=${seconds#seconds=}
          if [[ $rc == 0 ]]; then verdict=PASSED; else verdict=FAILED; fi
          printf '%-60s %s in %ss\n' "$label@hwkvm" "$verdict" "$seconds"
          current="" ;;
        HWKVM-LOG-BEGIN\ *) in_log=1; echo "==================== Test output for ${line#HWKVM-LOG-BEGIN }@hwkvm:" ;;
        HWKVM-LOG-END\ *) in_log=0; echo "================================================================================" ;;
        HWKVM-CMD-BEGIN\ *)
          item=$((item + 1)) current=${line#HWKVM-CMD-BEGIN } in_log=1
          echo "==================== $current (in the hardware lane):" ;;
        HWKVM-CMD-END\ *) in_log=0 current=""; echo "==================== ${line#HWKVM-CMD-END }" ;;
        HWKVM-DONE\ *) done_seen=1; echo "$line" ;;
        HWKVM-LANE-ERROR*) lane_error=1; echo "$line" ;;
        hwkvm:\ *|"  cases: "*|"  skipped "*) echo "$line" ;;
        *) ((in_log)) && echo "$line" ;;
      esac
    elif (($? > 128)); then  # no whole line within 5 s
      partial+=$line
    else  # QEMU has exited
      [[ -z $partial$line ]] || printf '%s\n' "$partial$line" >>"$console"
      ((done_seen)) && ended=done || ended=exited
      break
    fi
    ((SECONDS - checked >= 5)) || continue
    checked=$SECONDS
    now_size=$(stat -c %s "$heartbeat")
    ((now_size == size)) || { size=$now_size; heard=$SECONDS; }
    if ((SECONDS >= deadline)); then
      ended=limit
    elif ((SECONDS - heard >= silence)); then
      ended=stopped
      where=$(cpu_state)
    fi
  done
  [[ $ended == done || $ended == exited ]] || kill "$qemu" 2>/dev/null
  exec {qemu_out}<&-
  wait "$qemu" 2>/dev/null
  if [[ -n $current ]]; then at=$item running=1; else at=$((item + 1)) running=0; fi
}

set +e
exec {out}> >(tee -a "$report")
tee_pid=$!
first=0 retried=-1 stops=() lane_error=0
while :; do
  boot_lane "$first" >&$out
  # Done, or the lane cannot run at all (init said why): no second boot.
  [[ $ended == done ]] || ((lane_error)) && break
  if [[ $ended == limit ]]; then
    echo "hwkvm lane: the lane's limit of $limit s was reached" >&$out
    ((running)) || break  # the rest are not run
  elif ((at >= ${#items[@]})); then  # after the last item: nothing is lost
    echo "hwkvm lane: the lane $ended after its last item" >&$out
    break
  else
    case $ended in
      stopped) why="no heartbeat for $silence s; $where" ;;
      exited) why="QEMU exited; the console's last line: $(tail -n 1 "$console")" ;;
    esac
    stops+=("${items[at]}")
    if ((at != retried)); then
      echo "hwkvm lane: the lane stopped under ${items[at]} ($why): booting again at it," \
        "its second and last try" >&$out
      retried=$at first=$at
      continue
    fi
    echo "hwkvm lane: the lane stopped under ${items[at]} again ($why): booting again after it" >&$out
    first=$((at + 1))
  fi
  # The item it ended under has no status; after the limit, the rest are not run.
  if ((at < ${#targets[@]})); then
    printf '%-60s %s\n' "${items[at]}@hwkvm" "NO STATUS" >&$out
  elif ((at < ${#items[@]})); then
    echo "==================== rc=255: the lane stopped under it" >&$out
  fi
  [[ $ended == limit ]] && break
done
exec {out}>&-
wait "$tee_pid"
set -e

# The summary, from what was reported.
passed=$(grep -cE '^//[^ ]+@hwkvm +PASSED' "$report" || true)
failed=$(grep -cE '^//[^ ]+@hwkvm +(FAILED|NO STATUS)' "$report" || true)
read -r cases_run cases_skipped < <(awk '/^  cases: / {r += $2; s += $6} END {print r + 0, s + 0}' "$report")
missing=$((${#targets[@]} - passed - failed))
failed_commands=$(grep -cE '^==================== rc=[1-9]' "$report" || true)
stopped=""
for stop in "${stops[@]}"; do stopped+="${stopped:+, }$stop"; done
[[ -z $stopped ]] || stopped="; the lane stopped ${#stops[@]} time(s), under $stopped"
echo "hwkvm lane: ${#targets[@]} targets: $passed passed, $failed failed, $missing not run;" \
  "$cases_run test cases run, $cases_skipped skipped$stopped; $((SECONDS - started)) s"
if [[ $ended != done ]] || ((failed || missing || failed_commands)); then
  if [[ $ended != done ]]; then  # init's own error (HWKVM-LANE-ERROR) among them
    echo "hwkvm lane: the lane did not finish; the console's last lines:" >&2
    tail -n 30 "$console" >&2
  fi
  exit 1
fi
