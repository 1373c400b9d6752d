#!/usr/bin/env bash
# A real Slurm: munged, slurmctld and two slurmd (this host's name and NAME-n2, both on this host with
# their own ports, each with 2 GPUs as gres) started here from a generated slurm.conf; `gpuplan
# export --to slurm` writes the sbatch script of a pinned 2-node x 2-GPU job, which is checked with
# `sbatch --test-only` and then submitted with `sbatch --wait` from the export directory. The job's
# srun runs the exported launch.sh once per node; torchrun (Debian's python3-torch, gloo on the CPU)
# runs tests/launch/tiny_train.py, which checks the world and the batch arithmetic against
# ds_config.json and runs one optimizer step. The job must exit 0 and its output hold one
# GPUPLAN_TINY_TRAIN_OK line per rank (4).
#
# The first node is named after this host (hostname -s, which must resolve) because the sbatch
# script takes the rendezvous host from `scontrol show hostnames`, the node names: on a real cluster
# they are host names. (Slurm reads NodeName=localhost as "this host's name", so that one cannot be
# used.) The second node, NAME-n2, sorts after it (the first node of the job's list hosts the
# rendezvous) and needs no name resolution: nothing connects to it by name. The GPUs are
# gres entries whose File= are symlinks to /dev/null (Slurm drops file-less GPUs and wants a
# character device); nothing uses them.
#
# Runs as root (slurmd must be able to start the job's processes); needs slurm-wlm (slurmctld,
# slurmd, sbatch, srun, sinfo, scontrol, scancel), munge, /usr/bin/python3 with torch and yaml.
# Fails, never skips, when a piece is missing. Every daemon is stopped and the temp dir removed on exit.
# Usage: slurm_test.sh GPUPLAN_BINARY SOURCE_DIR
set -euo pipefail

BIN="${1:?usage: slurm_test.sh GPUPLAN_BINARY SOURCE_DIR}"
SRC="${2:?usage: slurm_test.sh GPUPLAN_BINARY SOURCE_DIR}"
PY=/usr/bin/python3
NODES=2
NPROC=2
GLOBAL_BATCH=8
LIMIT_S=300  # for the daemons to come up and for the job to finish

fail() {
  echo "slurm_test: FAIL: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "must run as root (slurmd starts the job's processes as the submitting user)"
[ -x "$BIN" ] || fail "gpuplan binary '$BIN' is missing"
[ -f "$SRC/tests/launch/tiny_train.py" ] || fail "$SRC/tests/launch/tiny_train.py is missing"
for prog in munged mungekey munge unmunge; do command -v "$prog" >/dev/null || fail "$prog is missing (apt-get install munge)"; done
for prog in slurmctld slurmd; do command -v "$prog" >/dev/null || fail "$prog is missing (apt-get install slurm-wlm)"; done
for prog in sbatch srun sinfo scontrol scancel squeue; do command -v "$prog" >/dev/null || fail "$prog is missing (apt-get install slurm-client)"; done
command -v timeout >/dev/null || fail "timeout (coreutils) is missing"
[ -x "$PY" ] || fail "$PY is missing (apt-get install python3)"
"$PY" -c 'import torch' 2>/dev/null || fail "$PY has no torch (apt-get install python3-torch)"
"$PY" -c 'import yaml' 2>/dev/null || fail "$PY has no yaml (apt-get install python3-yaml)"

NODE1="$(hostname -s)"
[ -n "$NODE1" ] && [ "$NODE1" != localhost ] || fail "hostname -s gives '$NODE1': the first node needs this host's own name"
getent hosts "$NODE1" >/dev/null || fail "this host's name '$NODE1' does not resolve (add it to /etc/hosts): it is the first Slurm node"
NODE2="$NODE1-n2"  # sorts after NODE1, so NODE1 heads the job's node list

T="$(mktemp -d /tmp/gpuplan-slurm.XXXXXX)"
chmod 755 "$T"
PIDS=()
JOB=""
export SLURM_CONF="$T/etc/slurm.conf"
cleanup() {
  local status=$?
  set +e
  if [ -n "$JOB" ]; then scancel "$JOB" 2>/dev/null; fi
  # The daemons in reverse order (slurmd before slurmctld, munged last), each by its own pid.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  if [ "$status" -ne 0 ]; then
    for f in "$T"/log/*.log; do [ -f "$f" ] && { echo "--- $f (last 20 lines) ---" >&2; tail -n 20 "$f" >&2; }; done
  fi
  rm -rf "$T"
}
trap cleanup EXIT

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
# Polls a check (a command) until it succeeds, at most LIMIT_S seconds, failing at once when one
# of our daemons has died; the sleep only paces the poll.
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

mkdir -p "$T/key" "$T/munge" "$T/etc" "$T/state" "$T/spool/$NODE1" "$T/spool/$NODE2" "$T/log" "$T/dev" "$T/run"
chmod 700 "$T/key"    # munged refuses a key others can read
chmod 755 "$T/munge"  # and a socket directory others cannot enter

# ---- munge, with its own key, socket, pid, seed and log ----
SOCK="$T/munge/munge.socket"
mungekey --create --keyfile="$T/key/munge.key" || fail "mungekey could not create a key"
munged --foreground --socket="$SOCK" --key-file="$T/key/munge.key" --pid-file="$T/key/munged.pid" \
  --seed-file="$T/key/munged.seed" --log-file="$T/log/munged.log" >"$T/log/munged.out" 2>&1 &
PIDS+=("$!")
munge_ok() { munge --socket="$SOCK" -n | unmunge --socket="$SOCK"; }
wait_for "munged answering on $SOCK" munge_ok

# ---- slurm.conf: one controller, two slurmd on this host with 2 gres GPUs each ----
CTLD_PORT="$(free_port)"
PORT1="$(free_port)"
PORT2="$(free_port)"
ln -s /dev/null "$T/dev/gpu0"
ln -s /dev/null "$T/dev/gpu1"
: >"$T/etc/plugstack.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=gpuplantest
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$PORT1
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
NodeName=$NODE1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$PORT1 CPUs=1 RealMemory=1000 Gres=gpu:2
NodeName=$NODE2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$PORT2 CPUs=1 RealMemory=1000 Gres=gpu:2
PartitionName=debug Nodes=$NODE1,$NODE2 Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$T/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=$NODE1,$NODE2 Name=gpu File=$T/dev/gpu[0-1]
EOF

slurmctld -D -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 &
PIDS+=("$!")
wait_for "slurmctld answering" scontrol ping
for node in "$NODE1" "$NODE2"; do
  slurmd -D -N "$node" -f "$SLURM_CONF" >"$T/log/slurmd-$node.out" 2>&1 &
  PIDS+=("$!")
done
both_idle() { [ "$(sinfo -h -N -t idle -o '%N' | sort -u | tr '\n' ' ')" = "$(printf '%s\n' "$NODE1" "$NODE2" | sort | tr '\n' ' ')" ]; }
wait_for "both nodes idle in sinfo" both_idle
echo "ok: slurmctld and 2 slurmd up ($(sinfo -h -N -o '%N:%T:%G' | tr '\n' ' '))"

# ---- export: a pinned 2 x 2 job, the DeepSpeed engine, the tiny training script ----
cat >"$T/job.yaml" <<EOF
model: {preset: gpt2}
training: {method: full, seq_len: 512, micro_batch: 1, global_batch: $GLOBAL_BATCH, precision: bf16, tokens: 1000000}
parallel: {tp: 1, pp: 1, zero: 2}
cluster: {gpu: a10-24gb, num_gpus: $((NODES * NPROC)), gpus_per_node: $NPROC}
EOF
RDZV_PORT="$(free_port)"
OUT="$T/export"
"$BIN" export "$T/job.yaml" --to slurm --engine deepspeed --out "$OUT" --script "$SRC/tests/launch/tiny_train.py" \
  --port "$RDZV_PORT" --job-name gpuplan-slurm-test >"$T/log/export.log" 2>&1 || { cat "$T/log/export.log" >&2; fail "gpuplan export --to slurm failed"; }
for f in gpuplan.sbatch launch.sh fabric.env ds_config.json; do [ -f "$OUT/$f" ] || fail "export wrote no $f"; done
grep -q "^#SBATCH --nodes=$NODES\$" "$OUT/gpuplan.sbatch" || fail "gpuplan.sbatch has no --nodes=$NODES"
grep -q "^#SBATCH --gpus-per-node=$NPROC\$" "$OUT/gpuplan.sbatch" || fail "gpuplan.sbatch has no --gpus-per-node=$NPROC"
# A million tokens take minutes: the limit is the 10-minute floor. Its directive carries a trailing
# comment, as the others do; the job's TimeLimit below shows Slurm read it.
grep -q "^#SBATCH --time=0-00:10:00  # " "$OUT/gpuplan.sbatch" || fail "gpuplan.sbatch has no --time=0-00:10:00"

cd "$OUT"
# The directives as this Slurm reads them: a bad one is refused here.
sbatch --test-only gpuplan.sbatch >"$T/log/test-only.log" 2>&1 || { cat "$T/log/test-only.log" >&2; fail "sbatch --test-only refused gpuplan.sbatch"; }
grep -q "to start at" "$T/log/test-only.log" || { cat "$T/log/test-only.log" >&2; fail "sbatch --test-only did not schedule the job"; }
echo "ok: sbatch --test-only accepts the directives ($(tr -d '\n' <"$T/log/test-only.log"))"

# ---- the job: sbatch passes this environment to the job (the default --export=ALL) ----
# PET_REDIRECTS/PET_TEE: Debian 12's torch 1.13 on Python 3.11 cannot parse torchrun's default "0".
export TORCHRUN="$PY -m torch.distributed.run" PET_REDIRECTS=1 PET_TEE=1 GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1
export TINY_EXPECT_NODES="$NODES" TINY_EXPECT_NPROC="$NPROC" TINY_EXPECT_GLOBAL_BATCH="$GLOBAL_BATCH"
status=0
timeout "$LIMIT_S" sbatch --wait gpuplan.sbatch >"$T/log/sbatch.log" 2>&1 || status=$?
JOB="$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$T/log/sbatch.log")"
[ -n "$JOB" ] || { cat "$T/log/sbatch.log" >&2; fail "sbatch did not submit gpuplan.sbatch"; }
[ "$status" -ne 124 ] || fail "job $JOB still running after ${LIMIT_S} s (cancelled)"
state="$(scontrol show job "$JOB" -o 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\) .* ExitCode=\([0-9:]*\).*/\1 \2/p')"
LOG="$OUT/gpuplan-slurm-test-$JOB.out"
[ -f "$LOG" ] || fail "job $JOB wrote no $LOG (state: ${state:-unknown})"
JOB_DONE="$JOB"
JOB=""
[ "$status" -eq 0 ] || { cat "$LOG" >&2; fail "sbatch --wait exited $status (the job's exit code; state: ${state:-unknown})"; }
[ "$state" = "COMPLETED 0:0" ] || { cat "$LOG" >&2; fail "job ended as '${state:-unknown}', not COMPLETED 0:0"; }
limit="$(scontrol show job "$JOB_DONE" -o | sed -n 's/.* TimeLimit=\([0-9:-]*\) .*/\1/p')"
[ "$limit" = "00:10:00" ] || fail "the job's TimeLimit is '$limit', not the exported --time 00:10:00"

grep -q "^gpuplan: job [0-9]* on $NODES node(s) (.*), rendezvous $NODE1:$RDZV_PORT\$" "$LOG" ||
  { cat "$LOG" >&2; fail "the sbatch script did not take the rendezvous from the first node ($NODE1:$RDZV_PORT)"; }
ranks="$(sed -n 's/^\(\[default[0-9]*\]:\)\{0,1\}GPUPLAN_TINY_TRAIN_OK rank=\([0-9]*\) world=4.*/\2/p' "$LOG" | sort -n | tr '\n' ' ')"
[ "$ranks" = "0 1 2 3 " ] || { cat "$LOG" >&2; fail "expected one GPUPLAN_TINY_TRAIN_OK per rank 0..3 (world 4), got ranks '$ranks'"; }
echo "ok: Slurm job ran gpuplan.sbatch on $NODES nodes: ranks $ranks each ran one optimizer step (global batch $GLOBAL_BATCH)"
