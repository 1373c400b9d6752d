#!/usr/bin/env bash
# The measure -> ledger -> calibrate -> estimate loop through the real binary and a real SQLite file:
# a recorded tokens/s of a 2-node A100 job (ledger import), `gpuplan calibrate` into a CSV,
# `estimate --calibration` moves the prediction to the measurement, `estimate --ledger` says which
# numbers are measured, and `plan --ledger` without the pool's GPU is refused.
set -euo pipefail
bin=${1:?usage: calibrate_test.sh GPUPLAN_BINARY SOURCE_DIR}
[ -x /usr/bin/python3 ] || { echo "calibrate_test: needs /usr/bin/python3" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
job=(--model llama-3-8b --gpu a100-sxm-80gb --num-gpus 16 --network ib-hdr --zero 1)
expected=$("$bin" estimate "${job[@]}" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])')
measured=$(/usr/bin/python3 -c "print(round($expected * 0.75, 1))")
cat > "$tmp/m.csv" <<CSV
machine,pool,kind,value,unit,tool,raw_file,time_utc,context_json
node-01,a100-ib,tokens_per_s,$measured,tokens/s,train.log,train.log,2026-11-30T12:00:00Z,{}
CSV
"$bin" ledger import "$tmp/m.csv" --ledger "$tmp/l.db" > /dev/null
"$bin" calibrate "${job[@]}" --ledger "$tmp/l.db" --pool a100-ib > "$tmp/cal.csv" 2> "$tmp/cal.err"
grep -q '^framework_overhead,' "$tmp/cal.csv" || { echo "FAIL: no framework_overhead row"; cat "$tmp/cal.csv" "$tmp/cal.err"; exit 1; }
grep -q 'ledger row' "$tmp/cal.csv" || { echo "FAIL: the row does not cite its ledger row"; exit 1; }
after=$("$bin" estimate "${job[@]}" --calibration "$tmp/cal.csv" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])')
/usr/bin/python3 - "$expected" "$measured" "$after" <<'PY'
import sys
e, m, a = map(float, sys.argv[1:])
assert abs(a - m) < abs(e - m), f"calibrated {a} is not closer to the measured {m} than {e}"
assert abs(a - m) <= 0.01 * m, f"calibrated {a} is not within 1% of the measured {m}"
print(f"calibrate_test: expected {e:.0f}, measured {m:.0f}, calibrated {a:.0f} tokens/s")
PY
"$bin" estimate "${job[@]}" --ledger "$tmp/l.db" --pool a100-ib > "$tmp/est.txt"
grep -q 'measured numbers (ledger' "$tmp/est.txt" || { echo "FAIL: estimate --ledger does not say which numbers are measured"; exit 1; }
grep -q 'framework_overhead' "$tmp/est.txt" || { echo "FAIL: estimate --ledger does not name the measured key"; exit 1; }
set +e
"$bin" plan --model llama-3-8b --ledger "$tmp/l.db" > /dev/null 2> "$tmp/plan.err"
rc=$?
set -e
[ "$rc" = 1 ] || { echo "FAIL: plan --ledger without --gpu exit $rc, want 1"; exit 1; }
echo "calibrate_test: ok"
