#!/usr/bin/env bash
# The real probe on this machine: it runs, records a machine row and measurements that match
# /proc, and says what it could not measure (here: no GPU, no RDMA, no cpufreq governor).
# usage: probe_test.sh GPUPLAN_BINARY SOURCE_DIR [SHARED_DIR]
set -euo pipefail
BIN="${1:?gpuplan binary}"
SRC="${2:?source dir}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 (Debian package sqlite3) is needed to read the ledger"
[ -x /usr/bin/python3 ] || fail "/usr/bin/python3 is needed to read the JSON output"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
L="$T/ledger.db"
q() { sqlite3 "$L" "$1"; }

"$BIN" probe --ledger "$L" --pool ci > "$T/out.txt" 2> "$T/err.txt" || fail "probe exited $?: $(cat "$T/err.txt")"
cat "$T/out.txt"
host="$(cat /proc/sys/kernel/hostname)"
grep -q "^host       $host\$" "$T/out.txt" || fail "probe did not print the hostname $host"
threads="$(grep -c '^processor' /proc/cpuinfo)"
ram_bytes=$(( $(awk '/^MemTotal:/{print $2}' /proc/meminfo) * 1024 ))
[ "$(q "SELECT hostname || '|' || (SELECT name FROM pools WHERE id = pool_id) FROM machines")" = "$host|ci" ] || fail "machine row"
m() { q "SELECT value FROM measurements WHERE kind = '$1' ORDER BY id DESC LIMIT 1"; }
[ "$(m cpu_threads)" = "$threads.0" ] || fail "cpu_threads $(m cpu_threads), /proc/cpuinfo has $threads"
[ "$(printf '%.0f' "$(m ram_bytes)")" = "$ram_bytes" ] || fail "ram_bytes $(m ram_bytes), /proc/meminfo says $ram_bytes"
[ "$(q "SELECT COUNT(*) FROM measurements WHERE tool = 'gpuplan probe' AND version <> '' AND length(raw_sha256) = 64")" -gt 3 ] ||
  fail "probe measurements without tool, version or hash"
# NUMA from hwloc (Linux backend on /), the node count the kernel's /sys/devices/system/node has.
nodes="$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
grep -q "^numa       $nodes node(s) (from hwloc 2\.[0-9.]*: " "$T/out.txt" ||
  fail "numa line does not say hwloc 2.x with the $nodes node(s) of /sys/devices/system/node: $(grep '^numa' "$T/out.txt")"
# What it could not measure, and why: whatever this machine lacks must be said.
if ! command -v nvidia-smi >/dev/null; then
  grep -q "^not measured: gpus: no GPU: nvidia-smi not found" "$T/out.txt" || fail "no GPU here, and probe did not say so"
else
  grep -q "^gpu " "$T/out.txt" || grep -q "^not measured: gpus:" "$T/out.txt" || fail "nvidia-smi present: no gpu line and no gap"
fi
if [ ! -d /sys/class/infiniband ] || [ -z "$(ls -A /sys/class/infiniband)" ]; then
  grep -q "^not measured: rdma: no RDMA here" "$T/out.txt" || fail "no RDMA here, and probe did not say so"
else
  grep -q "^rdma " "$T/out.txt" || fail "/sys/class/infiniband has devices but probe printed no rdma line"
fi
if [ ! -e /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor ]; then
  grep -q "^not measured: governor:" "$T/out.txt" || fail "no cpufreq governor, and probe did not say so"
else
  grep -q "governor $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor)" "$T/out.txt" || fail "governor not printed"
fi

# --json: the same facts, machine-readable; the facts are the machine row's facts_json.
"$BIN" probe --ledger "$L" --json > "$T/out.json" || fail "probe --json exited $?"
/usr/bin/python3 - "$T/out.json" "$threads" <<'PY' || fail "probe --json content"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["facts"]["cpu"]["threads"] == int(sys.argv[2]), j["facts"]["cpu"]
assert j["ledger"]["measurements_recorded"] > 3
assert all({"item", "reason"} <= set(g) for g in j["facts"]["not_measured"])
assert j["facts"]["numa_source"].startswith("hwloc 2."), j["facts"]["numa_source"]
assert j["facts"]["hwloc"]["pus"] == int(sys.argv[2]), j["facts"]["hwloc"]
PY
[ "$(q "SELECT json_extract(facts_json, '\$.cpu.threads') FROM machines")" = "$threads" ] || fail "facts_json in the machine row"

# --bench cpu records per-core data-loader throughput; --bench gpu says why it cannot run here.
"$BIN" probe --ledger "$L" --bench cpu > "$T/cpu.txt" || fail "probe --bench cpu exited $?"
[ "$(q "SELECT value > 0 FROM measurements WHERE kind = 'cpu_tokenize_tokens_per_s_per_core'")" = 1 ] || fail "no cpu tokens/s"
set +e
"$BIN" probe --ledger "$L" --no-record --bench gpu > "$T/gpu.txt"
rc=$?
set -e
if ! command -v nvidia-smi >/dev/null; then
  [ "$rc" = 2 ] || fail "--bench gpu without a GPU: exit $rc, expected 2"
  grep -q "^gpu bench  not run: .*nvidia-smi not found" "$T/gpu.txt" || fail "--bench gpu did not say why: $(cat "$T/gpu.txt")"
fi

# ledger list / show / export / forget on what probe wrote.
"$BIN" ledger list --ledger "$L" | grep -q "^$host " || fail "ledger list does not show $host"
"$BIN" ledger show "$host" --ledger "$L" | grep -q "^cpu_threads .* gpuplan probe " || fail "ledger show: no cpu_threads row"
n="$(q 'SELECT COUNT(*) FROM measurements')"
"$BIN" ledger export --ledger "$L" --format csv > "$T/export.csv"
[ "$(($(wc -l < "$T/export.csv") - 1))" = "$n" ] || fail "export has $(($(wc -l < "$T/export.csv") - 1)) rows, the ledger $n"
set +e
"$BIN" ledger forget --machine "$host" --ledger "$L" > "$T/forget.txt"; rc=$?
set -e
[ "$rc" = 1 ] || fail "forget without --yes: exit $rc, expected 1"
grep -q "would remove $n measurement(s), 1 machine(s)" "$T/forget.txt" || fail "forget count: $(cat "$T/forget.txt")"
[ "$(q 'SELECT COUNT(*) FROM measurements')" = "$n" ] || fail "forget without --yes removed something"
"$BIN" ledger forget --machine "$host" --ledger "$L" --yes | grep -q "removed $n measurement(s), 1 machine(s)" || fail "forget --yes"
[ "$(q 'SELECT COUNT(*) FROM measurements')" = 0 ] || fail "forget --yes left measurements"
[ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"

# The recorded 8-GPU node through the same command.
"$BIN" probe --recorded "$SRC/tests/fixtures/probe/h100-8gpu-ib-node" --ledger "$L" --pool h100-ib > "$T/h100.txt" || fail "recorded probe"
[ "$(q "SELECT COUNT(*) FROM measurements WHERE kind = 'gpu_memory_bytes'")" = 8 ] || fail "recorded node: 8 GPUs expected"
grep -q "0000:db:00.0 gpu x8 (max x16) .*narrower than its maximum" "$T/h100.txt" || fail "recorded node: the x8 GPU link not flagged"
grep -q "^numa       2 node(s) (from hwloc 2\.[0-9.]*: 2 package(s), 104 cores, 208 PUs); node0 cpus 0-51,104-155 (52 cores, 104 PUs)" "$T/h100.txt" ||
  fail "recorded node: NUMA not read by hwloc from the recorded tree: $(grep '^numa' "$T/h100.txt")"
echo "ok: probe of $host recorded and read back; gaps reported; ledger list/show/export/forget"
