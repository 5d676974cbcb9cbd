#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine for a test: munged, slurmctld and
# slurmd from Debian's packages (tools/setup.sh), all state under DIR, started and
# stopped by PID so that nothing else on the machine is touched.
#
#   single_node.sh up DIR PORT     start; prints the SLURM_CONF path; waits for the node
#   single_node.sh down DIR        stop what `up` started in DIR (also after a failure)
#
# Needs root (munged runs as munge, the Slurm daemons as root). PORT and PORT+1 are
# slurmctld's and slurmd's ports.
set -uo pipefail
action=${1:?usage: single_node.sh up DIR PORT | down DIR}
dir=${2:?}

stop_pid_file() {  # stop the process in a pid file and wait for it (at most 10 s)
  local file=$1 pid
  [[ -s $file ]] || return 0
  pid=$(cat "$file")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null
}

if [[ $action == down ]]; then
  SLURM_CONF=$dir/slurm.conf scontrol shutdown >/dev/null 2>&1
  stop_pid_file "$dir/slurmd.pid"
  stop_pid_file "$dir/slurmctld.pid"
  stop_pid_file "$dir/munged.pid"
  exit 0
fi

port=${3:?}
host=$(hostname -s)
for tool in munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol; do
  command -v "$tool" >/dev/null || { echo "single_node.sh: $tool is missing (tools/setup.sh installs Slurm and munge)" >&2; exit 2; }
done
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chown munge:munge "$dir/munge"

# munge: its own key, socket and pid file under DIR.
key=$dir/munge/munge.key
[[ -s $key ]] || dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
chown munge:munge "$key"; chmod 0400 "$key"
socket=$dir/munge/munge.socket
runuser -u munge -- munged --key-file="$key" --socket="$socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" --force ||
  { echo "single_node.sh: munged did not start" >&2; exit 1; }
cp "$dir/munge/munged.pid" "$dir/munged.pid"

cat >"$dir/slurm.conf" <<CONF
ClusterName=sigvisor-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" || { echo "single_node.sh: slurmctld did not start" >&2; cat "$dir/slurmctld.log" >&2; exit 1; }
slurmd -f "$SLURM_CONF" || { echo "single_node.sh: slurmd did not start" >&2; cat "$dir/slurmd.log" >&2; exit 1; }
for _ in $(seq 120); do
  [[ $(sinfo -h -N -o %t 2>/dev/null) == idle ]] && { echo "$SLURM_CONF"; exit 0; }
  sleep 0.5
done
echo "single_node.sh: the node did not become idle in 60 s: $(sinfo -h -N 2>&1)" >&2
exit 1
