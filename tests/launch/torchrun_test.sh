#!/usr/bin/env bash
# A real torchrun: `gpuplan export` writes the torchrun, DeepSpeed and accelerate artefacts of a small
# pinned job (4 GPUs as 2 nodes x 2), then the exported launch.sh runs twice in the background as the two
# "nodes" on localhost (c10d rendezvous, gloo on the CPU) with tests/launch/tiny_train.py, which
# checks the world, the ranks and micro x accumulation x dp = global batch against the exported
# config and runs one optimizer step. Every rank must print GPUPLAN_TINY_TRAIN_OK.
# The accelerate launch.sh runs `accelerate launch`: tests/launch/accelerate_stub.py stands in for it
# (accelerate's argument names, torchrun started as accelerate's launcher does).
# Needs Debian's python3-torch and python3-yaml (/usr/bin/python3); fails, never skips, without them.
# Usage: torchrun_test.sh GPUPLAN_BINARY SOURCE_DIR
set -euo pipefail

BIN="${1:?usage: torchrun_test.sh GPUPLAN_BINARY SOURCE_DIR}"
SRC="${2:?usage: torchrun_test.sh GPUPLAN_BINARY SOURCE_DIR}"
PY=/usr/bin/python3
NODES=2
NPROC=2
GLOBAL_BATCH=8

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[ -x "$BIN" ] || fail "gpuplan binary '$BIN' is missing"
[ -f "$SRC/tests/launch/tiny_train.py" ] || fail "$SRC/tests/launch/tiny_train.py is missing"
[ -x "$PY" ] || fail "$PY is missing (apt-get install python3)"
"$PY" -c 'import torch' 2>/dev/null || fail "$PY has no torch (apt-get install python3-torch)"
"$PY" -c 'import yaml' 2>/dev/null || fail "$PY has no yaml (apt-get install python3-yaml)"
"$PY" -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_available() and d.is_gloo_available() else 1)' ||
  fail "$PY's torch has no gloo backend"
command -v timeout >/dev/null || fail "timeout (coreutils) is missing"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# A small pinned job: gpt2 on 4 cheap GPUs, micro-batch 1, global batch 8 -> accumulation 2 at dp 4.
cat >"$WORK/job.yaml" <<EOF
model: {preset: gpt2}
training: {method: full, seq_len: 512, micro_batch: 1, global_batch: $GLOBAL_BATCH, precision: bf16}
parallel: {tp: 1, pp: 1, zero: 2}
cluster: {gpu: a10-24gb, num_gpus: $((NODES * NPROC)), gpus_per_node: $NPROC}
EOF

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Runs DIR/launch.sh as NODES background "nodes" and checks one OK line per rank.
run_nodes() {
  local dir="$1" tag="$2" port rank status=0
  port="$(free_port)"
  PIDS=()
  for ((rank = 0; rank < NODES; rank++)); do
    # setsid: each node is its own process group, so cleanup can stop its workers too.
    # PET_REDIRECTS/PET_TEE (torchrun's --redirects/--tee): Debian 12's torch 1.13 on Python 3.11 cannot
    # parse their default "0" (IntFlag iteration skips NONE); 1 = stdout to a file, teed to the console
    # with a "[defaultN]:" prefix.
    GPUPLAN_HEAD=127.0.0.1 GPUPLAN_PORT="$port" GPUPLAN_JOB_ID="tiny-$tag" GPUPLAN_NODE_RANK="$rank" \
      TORCHRUN="$PY -m torch.distributed.run" ACCELERATE="$PY $SRC/tests/launch/accelerate_stub.py" PET_REDIRECTS=1 PET_TEE=1 GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 \
      TINY_EXPECT_NODES="$NODES" TINY_EXPECT_NPROC="$NPROC" TINY_EXPECT_GLOBAL_BATCH="$GLOBAL_BATCH" \
      TINY_MICRO=1 TINY_ACCUM=$((GLOBAL_BATCH / (NODES * NPROC))) \
      setsid timeout 300 bash "$dir/launch.sh" >"$WORK/$tag-node$rank.log" 2>&1 &
    PIDS+=("$!")
  done
  for pid in "${PIDS[@]}"; do wait "$pid" || status=$?; done
  PIDS=()
  if [ "$status" -ne 0 ]; then
    for ((rank = 0; rank < NODES; rank++)); do echo "--- $tag node $rank ---" >&2; tail -n 40 "$WORK/$tag-node$rank.log" >&2; done
    fail "$tag: a node exited with status $status (124 = timeout 300 s)"
  fi
  local ok
  ok="$(cat "$WORK/$tag-node"*.log | grep -c 'GPUPLAN_TINY_TRAIN_OK rank=[0-9]* world=4 ' || true)"
  local ranks
  ranks="$(cat "$WORK/$tag-node"*.log | sed -n 's/^\(\[default[0-9]*\]:\)\{0,1\}GPUPLAN_TINY_TRAIN_OK rank=\([0-9]*\) .*/\2/p' | sort -n | tr '\n' ' ')"
  [ "$ok" -eq $((NODES * NPROC)) ] && [ "$ranks" = "0 1 2 3 " ] ||
    { cat "$WORK/$tag-node"*.log >&2; fail "$tag: expected one GPUPLAN_TINY_TRAIN_OK per rank 0..3, got ranks '$ranks'"; }
  echo "ok: $tag: $ok ranks ran one optimizer step (micro x accumulation x dp = $GLOBAL_BATCH)"
}

ran=()
for engine in torchrun deepspeed accelerate; do
  out="$WORK/$engine"
  "$BIN" export "$WORK/job.yaml" --to "$engine" --out "$out" --script "$SRC/tests/launch/tiny_train.py" --job-name "tiny-$engine" \
    >"$WORK/$engine-export.log" 2>&1 || { cat "$WORK/$engine-export.log" >&2; fail "gpuplan export --to $engine failed"; }
  [ -x "$out/launch.sh" ] || fail "$engine: launch.sh is missing or not executable"
  [ -f "$out/fabric.env" ] || fail "$engine: fabric.env is missing"
  case "$engine" in
    deepspeed)
      "$PY" - "$out/ds_config.json" "$GLOBAL_BATCH" <<'EOF' || fail "deepspeed: ds_config.json does not carry the job's batch"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["train_batch_size"] == int(sys.argv[2]), c
assert c["train_micro_batch_size_per_gpu"] == 1 and c["gradient_accumulation_steps"] == 2, c
assert c["zero_optimization"]["stage"] == 2, c
EOF
      ;;
    accelerate)
      "$PY" - "$out/accelerate.yaml" <<'EOF' || fail "accelerate: accelerate.yaml does not carry the job's layout"
import sys, yaml
y = yaml.safe_load(open(sys.argv[1]))
assert y["num_processes"] == 4 and y["num_machines"] == 2, y
assert y["distributed_type"] == "FSDP" and y["fsdp_config"]["fsdp_reshard_after_forward"] is False, y
EOF
      ;;
    torchrun)
      grep -q '^\$TORCHRUN ' "$out/launch.sh" || fail "torchrun: launch.sh has no \$TORCHRUN line"
      ;;
  esac
  run_nodes "$out" "$engine"
  ran+=("$engine")
done
[ "${#ran[@]}" -eq 3 ] || fail "only ${ran[*]} ran"
echo "PASS: torchrun runs the exported ${ran[*]} launches (2 nodes x 2 processes, gloo)"
