#!/usr/bin/env bash
# gpuplan verify on every real tool output in ../shared/fixtures/tool-outputs/ (the binary, as a user
# runs it): every file recognised, JSON valid, exit codes 0/1/2 as documented; a truncated copy warns at
# its line; a non-tool file is named as unrecognised; halving a passing ib_write_bw output fails it;
# checklist prints the commands and its verify line reads the outputs back.
# usage: verify_fixtures_test.sh GPUPLAN_BINARY SOURCE_DIR SHARED_DIR
set -euo pipefail
BIN="${1:?gpuplan binary}"
SRC="${2:?source dir}"
SHARED="${3:?shared dir}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$BIN" ] || fail "no gpuplan binary at $BIN"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
SRC="$(cd "$SRC" && pwd)"
PY=/usr/bin/python3
[ -x "$PY" ] || fail "/usr/bin/python3 (Debian python3) is needed to read the JSON"
FIX="$SHARED/fixtures/tool-outputs"
[ -d "$FIX" ] || fail "no fixtures at $FIX"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT

mapfile -t FILES < <(find "$FIX" -type f -name '*.txt' ! -name '*.source.txt' | sort)
[ "${#FILES[@]}" = 84 ] || fail "expected 84 fixtures, found ${#FILES[@]}"

# 1. Every fixture at once: recognised, parsed, exit 2 (some of them are failing machines).
set +e
"$BIN" verify --json "${FILES[@]}" > "$T/all.json"
rc=$?
set -e
[ "$rc" = 2 ] || fail "verify of all fixtures exited $rc, expected 2 (dcgm/02 and nccl-debug/06 fail)"
"$PY" - "$T/all.json" <<'EOF' || fail "the JSON of verify is not what docs/checks.md says"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["unrecognised"] == [], d["unrecognised"]
assert len(d["files"]) == 84
for f in d["files"]:
    assert f["kind"] != "unrecognised", f["file"]
    assert f["readings"], f["file"]
    for r in f["readings"]:
        assert r["where"].startswith(f["file"] + ":"), r
for c in d["checks"]:
    assert c["verdict"] in ("pass", "warn", "fail", "n/a"), c
    if c["id"] is not None:
        assert c["source"] and c["troubleshooting"] and c["rule"].startswith("data/checks.csv:"), c
    if c["verdict"] in ("warn", "fail") and c["id"] is not None:
        assert c["next"], c
s = d["summary"]
assert s["fail"] >= 5 and s["pass"] >= 50, s
assert d["exit_code"] == 2
EOF

# 2. A healthy output alone exits 0; a non-tool file is named and exits 1.
"$BIN" verify "$FIX/nvidia-smi-topo/04-h100-8gpu-nv18.txt" > "$T/ok.txt" || fail "topo -m of a healthy H100 box exited $?"
printf 'these are my notes\nnot a tool output\n' > "$T/notes.txt"
set +e
"$BIN" verify "$T/notes.txt" "$FIX/nvidia-smi-topo/04-h100-8gpu-nv18.txt" > "$T/unrec.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "an unrecognised file must exit 1, got $rc"
grep -q "notes.txt.*UNRECOGNISED" "$T/unrec.txt" || fail "the unrecognised file is not named: $(cat "$T/unrec.txt")"

# 3. A truncated copy (cut inside row 22 of the p4de sweep) warns at that line.
head -c "$(head -n 21 "$FIX/nccl-tests/04-allreduce-aws-p4de-2node-efa.txt" | wc -c)" "$FIX/nccl-tests/04-allreduce-aws-p4de-2node-efa.txt" > "$T/cut.txt"
sed -n 22p "$FIX/nccl-tests/04-allreduce-aws-p4de-2node-efa.txt" | cut -c1-40 >> "$T/cut.txt"
"$BIN" verify --json "$T/cut.txt" > "$T/cut.json" || true
"$PY" - "$T/cut.json" "$T/cut.txt" <<'EOF' || fail "the truncated copy does not warn at line 22"
import json, sys
d = json.load(open(sys.argv[1]))
w = [x["where"] for x in d["files"][0]["warnings"]]
assert sys.argv[2] + ":22" in w, w
EOF

# 4. ib_write_bw at 98.01 Gb/s on a 100G port passes; the same output at half the bandwidth fails.
W="$FIX/perftest/01-ib_write_bw-oci-roce-4qp-100g.txt"
"$BIN" verify --line-rate-gbps 100 "$W" > "$T/bw.txt" || fail "98 Gb/s on 100G should pass (exit $?)"
sed 's/98\.01              98\.01/49.00              49.00/' "$W" > "$T/half.txt"
grep -q '49.00' "$T/half.txt" || fail "could not halve the fixture"
set +e
"$BIN" verify --line-rate-gbps 100 "$T/half.txt" > "$T/half_out.txt"
rc=$?
set -e
[ "$rc" = 2 ] || fail "49 Gb/s on 100G must fail (exit 2), got $rc"
grep -q "fail *ib-bw-80pct" "$T/half_out.txt" || fail "no ib-bw-80pct failure: $(cat "$T/half_out.txt")"
grep -q "docs/troubleshooting.md#slow-network" "$T/half_out.txt" || fail "the failure does not lead to the troubleshooting section"

# 5. checklist for a job: commands, numbers, and the verify line that reads the outputs back.
"$BIN" checklist "$SRC/examples/7b-full-finetune-1node.yaml" > "$T/list.txt" || fail "checklist exited $?"
for want in "nvidia-smi topo -m > topo.txt" "all_reduce_perf -b 8 -e" "nvidia-smi -q -d CLOCK,PERFORMANCE" "lspci -vv" "dcgmi diag -r 2" \
            "expect: peak busbw >=" "then: gpuplan verify --plan"; do
  grep -qF -- "$want" "$T/list.txt" || fail "checklist lacks '$want'"
done
cp "$FIX/nvidia-smi-topo/03-a100-8gpu-nv12.txt" "$T/topo.txt"
(cd "$T" && "$BIN" verify --plan "$SRC/examples/7b-full-finetune-1node.yaml" topo.txt > verify_plan.txt) || fail "verify --plan exited $?"
grep -q "against pinned job .*7b-full-finetune-1node.yaml" "$T/verify_plan.txt" || fail "verify --plan does not name the plan"
# 6. verify --ledger: every reading of every fixture lands in the ledger, each with its output's hash.
command -v sqlite3 >/dev/null || fail "sqlite3 (Debian package sqlite3) is needed to read the ledger back"
set +e
"$BIN" verify --json --ledger "$T/ledger.db" --machine fixture-host --pool fixtures "${FILES[@]}" > "$T/ledger.json"
rc=$?
set -e
[ "$rc" = 2 ] || fail "verify --ledger exited $rc, expected 2 as without it"
want="$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(f["readings"]) for f in d["files"]), d["ledger"]["measurements_recorded"])' "$T/ledger.json")"
read -r readings recorded <<< "$want"
[ "$readings" = "$recorded" ] || fail "verify read $readings readings but recorded $recorded"
[ "$(sqlite3 "$T/ledger.db" "SELECT COUNT(*) FROM measurements JOIN machines ON machines.id = measurements.machine_id WHERE machines.hostname = 'fixture-host'")" = "$readings" ] || fail "the ledger does not hold the $readings readings"
[ "$(sqlite3 "$T/ledger.db" "SELECT COUNT(DISTINCT raw_sha256) FROM measurements")" = 84 ] || fail "expected one raw hash per fixture"
sha="$(sha256sum "$FIX/nccl-tests/01-allreduce-oci-a100-2node-ib.txt" | cut -d' ' -f1)"
[ "$(sqlite3 "$T/ledger.db" "SELECT value FROM measurements WHERE kind = 'busbw_peak_gb_per_s' AND raw_sha256 = '$sha'")" = "189.6" ] || fail "the peak busbw of nccl-tests/01 is not in the ledger with its hash"
# 7. What verify recorded is what calibrate reads: the 2x p4de all_reduce becomes the EFA link efficiency.
"$BIN" verify --ledger "$T/p4de.db" --machine p4de-1 --pool p4de "$FIX/nccl-tests/04-allreduce-aws-p4de-2node-efa.txt" > /dev/null
printf 'model:\n  preset: llama-2-7b\ncluster:\n  gpu: a100-sxm-80gb\n  num_gpus: 16\n  gpus_per_node: 8\n  network: efa-v1\n  nics_per_node: 4\n' > "$T/p4de.yaml"
"$BIN" calibrate "$T/p4de.yaml" --ledger "$T/p4de.db" --pool p4de > "$T/cal.csv" 2> "$T/cal.err" || fail "calibrate on verify's readings exited $?: $(cat "$T/cal.err")"
grep -q '^link_eff\.efa,.*04-allreduce-aws-p4de-2node-efa.txt' "$T/cal.csv" || fail "calibrate did not turn verify's busbw into link_eff.efa: $(cat "$T/cal.csv" "$T/cal.err")"
echo "ok: ${#FILES[@]} fixtures verified, $recorded readings recorded, calibrate reads them"
