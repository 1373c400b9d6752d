#!/usr/bin/env bash
# `gpuplan fleet --export slurm` read by a real Slurm: munged, slurmctld and three slurmd (this host's name and
# NAME-n2, NAME-n3, all on this host with their own ports, each with 2 GPUs of type a100-sxm-80gb as gres), one
# partition per node named as the fleet's pool groups (left, right, solo). The fleet: a 13B full fine-tune that
# fits only on two groups' cards (a heterogeneous job: "#SBATCH hetjob") and a small pretraining run. Every exported
# sbatch script must pass `sbatch --test-only` (the directives as this Slurm reads them), and the exported
# slurm.conf fragment must name the same partitions and gres. The setup follows tests/launch/slurm_test.sh.
# Runs as root; needs slurm-wlm and munge. Fails, never skips, when a piece is missing.
# Usage: fleet_slurm_test.sh GPUPLAN_BINARY SOURCE_DIR
set -euo pipefail

BIN="${1:?usage: fleet_slurm_test.sh GPUPLAN_BINARY SOURCE_DIR}"
PY=/usr/bin/python3
LIMIT_S=120
fail() {
  echo "fleet_slurm_test: FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || fail "must run as root (slurmd)"
[ -x "$BIN" ] || fail "gpuplan binary '$BIN' is missing"
for prog in munged mungekey munge unmunge slurmctld slurmd sbatch sinfo scontrol; do
  command -v "$prog" >/dev/null || fail "$prog is missing (apt-get install munge slurm-wlm)"
done
NODE1="$(hostname -s)"
[ -n "$NODE1" ] && [ "$NODE1" != localhost ] || fail "hostname -s gives '$NODE1'"
getent hosts "$NODE1" >/dev/null || fail "this host's name '$NODE1' does not resolve (add it to /etc/hosts)"
NODES=("$NODE1" "$NODE1-n2" "$NODE1-n3")
GROUPS_=(left right solo)

T="$(mktemp -d /tmp/gpuplan-fleet-slurm.XXXXXX)"
chmod 755 "$T"
PIDS=()
export SLURM_CONF="$T/etc/slurm.conf"
cleanup() {
  local status=$?
  set +e
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  if [ "$status" -ne 0 ]; then
    for f in "$T"/log/*.log; do [ -f "$f" ] && { echo "--- $f (last 20 lines) ---" >&2; tail -n 20 "$f" >&2; }; done
  fi
  rm -rf "$T"
}
trap cleanup EXIT
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
wait_for() {
  local what="$1"
  shift
  local deadline=$((SECONDS + LIMIT_S)) pid
  until "$@" >/dev/null 2>&1; do
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || fail "$what: a daemon (pid $pid) exited"; done
    [ "$SECONDS" -lt "$deadline" ] || fail "$what: not after ${LIMIT_S} s"
    sleep 0.2
  done
}
mkdir -p "$T/key" "$T/munge" "$T/etc" "$T/state" "$T/log" "$T/dev" "$T/run"
for n in "${NODES[@]}"; do mkdir -p "$T/spool/$n"; done
chmod 700 "$T/key"
chmod 755 "$T/munge"
SOCK="$T/munge/munge.socket"
mungekey --create --keyfile="$T/key/munge.key" || fail "mungekey could not create a key"
munged --foreground --socket="$SOCK" --key-file="$T/key/munge.key" --pid-file="$T/key/munged.pid" \
  --seed-file="$T/key/munged.seed" --log-file="$T/log/munged.log" >"$T/log/munged.out" 2>&1 &
PIDS+=("$!")
munge_ok() { munge --socket="$SOCK" -n | unmunge --socket="$SOCK"; }
wait_for "munged answering" munge_ok

ln -s /dev/null "$T/dev/gpu0"
ln -s /dev/null "$T/dev/gpu1"
: >"$T/etc/plugstack.conf"
CTLD_PORT="$(free_port)"
{
  cat <<EOF
ClusterName=gpuplanfleet
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd-%n.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd-%n.log
PlugStackConfig=$T/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
EOF
  for i in 0 1 2; do
    echo "NodeName=${NODES[i]} NodeHostname=localhost NodeAddr=127.0.0.1 Port=$(free_port) CPUs=1 RealMemory=1000 Gres=gpu:a100-sxm-80gb:2"
  done
  for i in 0 1 2; do echo "PartitionName=${GROUPS_[i]} Nodes=${NODES[i]} MaxTime=INFINITE State=UP"; done
} >"$SLURM_CONF"
cat >"$T/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=$(IFS=,; echo "${NODES[*]}") Name=gpu Type=a100-sxm-80gb File=$T/dev/gpu[0-1]
EOF
slurmctld -D -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 &
PIDS+=("$!")
wait_for "slurmctld answering" scontrol ping
for n in "${NODES[@]}"; do
  slurmd -D -N "$n" -f "$SLURM_CONF" >"$T/log/slurmd-$n.out" 2>&1 &
  PIDS+=("$!")
done
all_idle() { [ "$(sinfo -h -N -t idle -o '%N' | sort -u | wc -l)" -eq 3 ]; }
wait_for "three nodes idle in sinfo" all_idle
echo "ok: slurmctld and 3 slurmd up ($(sinfo -h -N -o '%N:%P:%G' | tr '\n' ' '))"

cat >"$T/fleet.yaml" <<EOF
pool:
  pool: threes
  groups:
$(for g in "${GROUPS_[@]}"; do echo "    - {name: $g, gpu: a100-sxm-80gb, nodes: 1, gpus_per_node: 2, network: ib-hdr, price_per_gpu_hour: 1.1}"; done)
jobs:
  - name: big
    kind: training
    model: {preset: llama-2-13b}
    training: {seq_len: 2048, global_batch: 32, tokens: 1e8}
  - name: small
    kind: training
    model: {preset: gpt2}
    training: {seq_len: 512, global_batch: 8, tokens: 1e8}
EOF
OUT="$T/export"
"$BIN" fleet "$T/fleet.yaml" --export slurm --out "$OUT" >"$T/log/fleet.log" 2>&1 || { cat "$T/log/fleet.log" >&2; fail "gpuplan fleet --export slurm failed"; }
[ -f "$OUT/big.sbatch" ] && [ -f "$OUT/small.sbatch" ] || { cat "$T/log/fleet.log" >&2; fail "no sbatch script for each job"; }
grep -q "^#SBATCH hetjob" "$OUT/big.sbatch" || { cat "$T/log/fleet.log" "$OUT/big.sbatch" >&2; fail "the 13B job does not span two groups"; }
for g in "${GROUPS_[@]}"; do
  grep -q "^PartitionName=$g " "$OUT/slurm.conf" || fail "the exported slurm.conf has no partition $g"
  grep -q "Gres=gpu:a100-sxm-80gb:2 " "$OUT/slurm.conf" || fail "the exported slurm.conf has no gres gpu:a100-sxm-80gb:2"
done
cd "$OUT"
for s in big.sbatch small.sbatch; do
  sbatch --test-only "$s" >"$T/log/test-only-$s.log" 2>&1 || { cat "$s" "$T/log/test-only-$s.log" >&2; fail "sbatch --test-only refused $s"; }
  grep -q "to start at" "$T/log/test-only-$s.log" || { cat "$s" "$T/log/test-only-$s.log" >&2; fail "sbatch --test-only did not schedule $s"; }
  echo "ok: sbatch --test-only accepts $s ($(tr -d '\n' <"$T/log/test-only-$s.log"))"
done
echo "fleet_slurm_test: ok"
