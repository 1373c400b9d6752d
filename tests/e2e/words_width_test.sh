#!/usr/bin/env bash
# Words and width: what reaches a user never cites the users' articles ("seed 00x", their section marks and
# quotes), internal notes or a path outside the repository, and the default text output fits 120 columns.
# Usage: words_width_test.sh GPUPLAN_BINARY SOURCE_DIR [SHARED_DIR]
set -uo pipefail
G=$(readlink -f "$1")
SRC=$(readlink -f "$2")
SHARED=${3:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
ln -s "$SRC/examples" examples
export HOME="$T/home" XDG_DATA_HOME="$T/home/.local/share"
fail=0
bad='seed ?0[0-9]|the seeds|seeds'"'"'|launch-serving-checks|exports-audit|notes\.md|shared/(reference|validation|fixtures|seeds)|\.\./shared'

# words FILE WHAT: FILE must not cite internal documents.
words() {
  local hits
  hits=$(grep -nE "$bad" "$1" | head -3)
  if [ -n "$hits" ]; then echo "FAIL words: $2"; printf '%s\n' "$hits" | cut -c1-200 | sed 's/^/    /'; fail=1; fi
}
# width FILE WHAT: no line of FILE wider than 120 columns (characters; CJK counts 2).
width() {
  local over
  over=$(python3 -c '
import sys, unicodedata
for n, l in enumerate(open(sys.argv[1], encoding="utf-8", errors="replace"), 1):
    l = l.rstrip("\n")
    w = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in l)
    if w > 120: print(f"{n}: {w} columns: {l[:100]}...")' "$1" | head -3)
  if [ -n "$over" ]; then echo "FAIL width: $2"; printf '%s\n' "$over" | sed 's/^/    /'; fail=1; fi
}
run() {  # run NAME CMD...: output to NAME.txt, any exit code but 3 (internal) accepted
  "$@" > "$T/out.txt" 2>&1
  local rc=$?
  [ "$rc" -eq 3 ] && { echo "FAIL internal error: $*"; fail=1; }
  return 0
}

# --help of every command (and the top-level usage).
for c in "" memory estimate serving plan export import verify checklist probe ledger calibrate diagnose validate models catalog fleet; do
  run "$G" $c --help
  words "$T/out.txt" "gpuplan $c --help"
  width "$T/out.txt" "gpuplan $c --help"
done

run "$G" plan examples/70b-full-finetune.yaml
words out.txt "plan 70b"; width out.txt "plan 70b"
run "$G" plan examples/7b-lora-one-card.yaml
words out.txt "plan 7b lora"; width out.txt "plan 7b lora"
run "$G" plan examples/70b-full-finetune.yaml --json
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' out.txt || { echo "FAIL plan --json is not JSON"; fail=1; }
cp out.txt plan.json
run "$G" estimate examples/70b-full-finetune.yaml --gpu h100 --num-gpus 32 --tp 8 --zero 3 --recompute full --micro-batch 1 --network ib-ndr --nics-per-node 8
words out.txt "estimate"; width out.txt "estimate"
run "$G" memory examples/7b-full-finetune-1node.yaml
words out.txt "memory"; width out.txt "memory"
run "$G" serving examples/serving-llama3-8b-vllm.yaml
words out.txt "serving 8b"; width out.txt "serving 8b"
run "$G" fleet examples/fleet-lab.yaml
words out.txt "fleet"; width out.txt "fleet"
run "$G" fleet examples/fleet-lab.yaml --simulate examples/fleet-lab-trace.csv
words out.txt "fleet --simulate"; width out.txt "fleet --simulate"
run "$G" serving examples/serving-llama3-70b-24gb.yaml
words out.txt "serving 70b on 24 GB"; width out.txt "serving 70b on 24 GB"
run "$G" checklist examples/70b-full-finetune.yaml
words out.txt "checklist"; width out.txt "checklist"
run "$G" checklist plan.json --plan 2
words out.txt "checklist plan.json"; width out.txt "checklist plan.json"
for s in slow-multinode oom nccl-timeout loss-nan slow-checkpoint; do
  run "$G" diagnose examples/70b-full-finetune.yaml --gpu h100 --num-gpus 32 --symptom "$s" --gpu-util 35 --cpu-util 95
  words out.txt "diagnose --symptom $s"; width out.txt "diagnose --symptom $s"
done
for k in gpus links instances storage; do
  run "$G" catalog "$k"
  width out.txt "catalog $k"
done
run "$G" export examples/70b-full-finetune.yaml --to fabric --out fab/
for f in fab/*; do words "$f" "export --to fabric: $(basename "$f")"; done
run "$G" export examples/70b-full-finetune.yaml --to slurm --out slurm/
for f in slurm/*; do words "$f" "export --to slurm: $(basename "$f")"; done
# verify reads real tool outputs; copied here so the paths it prints are the user's own.
if [ -n "$SHARED" ] && [ -d "$SHARED/fixtures/tool-outputs" ]; then
  mkdir -p outs
  for f in nccl-tests/01 perftest/01 nvidia-smi-topo/01 ibstat/01 nccl-debug/03 dcgm/03; do
    src=$(ls "$SHARED/fixtures/tool-outputs/${f%/*}/${f#*/}"-*.txt 2>/dev/null | grep -v source | head -1)
    [ -n "$src" ] && cp "$src" "outs/$(basename "$src")"
  done
  run "$G" verify --plan plan.json outs/*
  words out.txt "verify"; width out.txt "verify"
  run "$G" diagnose examples/70b-full-finetune.yaml --gpu h100 --num-gpus 32 --gpus-per-node 8 --file outs/*net-socket*.txt
  words out.txt "diagnose --log"; width out.txt "diagnose --log"
fi
[ "$fail" -eq 0 ] && echo "words and width: ok"
exit "$fail"
