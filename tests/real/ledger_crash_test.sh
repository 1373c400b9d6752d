#!/usr/bin/env bash
# The ledger under real processes: two writers at once (2 x 1,000 measurements into a new file), then
# a kill -9 loop (a writer killed at a random point, N times). Every measurement whose commit was
# acknowledged ('ack N' printed after each COMMIT) must be there, and PRAGMA integrity_check = ok.
# usage: ledger_crash_test.sh GPUPLAN_BINARY SOURCE_DIR [SHARED_DIR]
set -euo pipefail
BIN="${1:?gpuplan binary}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 (the CLI, Debian package sqlite3) is needed to check the file"
[ -x "$BIN" ] || fail "no gpuplan binary at $BIN"
T="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
L="$T/ledger.db"
HEADER="id,machine,pool,kind,value,unit,tool,raw_sha256,raw_file,time_utc,version,context_json"
gen() {  # gen MACHINE ROWS > file
  awk -v m="$1" -v n="$2" -v h="$HEADER" 'BEGIN { print h; for (i = 1; i <= n; i++) printf ",%s,crash-pool,busbw_gb_per_s,%d,GB/s,all_reduce_perf,,,,,\n", m, i }'
}
q() { sqlite3 "$L" "$1"; }
count_of() { q "SELECT COUNT(*) FROM measurements m JOIN machines h ON h.id = m.machine_id WHERE h.hostname = '$1'"; }
last_ack() { awk '/^ack /{n=$2} END{print n+0}' "$1"; }

# --- 1. two writers at once, both creating the same new file ---------------------------------
gen writer-a 1000 > "$T/a.csv"
gen writer-b 1000 > "$T/b.csv"
"$BIN" ledger import "$T/a.csv" --ledger "$L" --batch 10 --ack > "$T/a.out" 2> "$T/a.err" & PA=$!
"$BIN" ledger import "$T/b.csv" --ledger "$L" --batch 10 --ack > "$T/b.out" 2> "$T/b.err" & PB=$!
PIDS=("$PA" "$PB")
wait "$PA" || fail "writer a exited $?: $(cat "$T/a.err")"
wait "$PB" || fail "writer b exited $?: $(cat "$T/b.err")"
PIDS=()
[ "$(last_ack "$T/a.out")" = 1000 ] || fail "writer a acknowledged $(last_ack "$T/a.out") of 1000"
[ "$(last_ack "$T/b.out")" = 1000 ] || fail "writer b acknowledged $(last_ack "$T/b.out") of 1000"
[ "$(count_of writer-a)" = 1000 ] || fail "writer a: $(count_of writer-a) rows in the ledger, 1000 acknowledged"
[ "$(count_of writer-b)" = 1000 ] || fail "writer b: $(count_of writer-b) rows in the ledger, 1000 acknowledged"
# Each writer's values 1..1000 exactly once.
[ "$(q "SELECT COUNT(DISTINCT value) FROM measurements")" = 1000 ] || fail "values lost or duplicated"
[ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after concurrent writers: $(q 'PRAGMA integrity_check')"
[ "$(q 'PRAGMA journal_mode')" = wal ] || fail "the ledger is not in WAL mode"
echo "ok: 2 concurrent writers x 1000 measurements, all acknowledged and present, integrity ok"

# --- 2. kill -9 loop ----------------------------------------------------------------------------
N="${LEDGER_CRASH_ROUNDS:-25}"
gen placeholder 3000 > "$T/template.csv"
RANDOM=20261201  # a fixed seed: the same kill points every run (printed below)
total_acked=0
killed_mid=0
for i in $(seq 1 "$N"); do
  m="crash-$i"
  sed "s/,placeholder,/,$m,/" "$T/template.csv" > "$T/c.csv"
  after=$(( (RANDOM % 60) + 1 ))  # kill after at least this many acknowledged rows ...
  # The ack file exists (empty) before the writer starts: the loop below must never read a stale one.
  out="$T/c$i.out"
  : > "$out"
  # Odd rounds commit row by row; even rounds 250 rows per transaction, so the kill lands inside a
  # large write and must leave none of it.
  batch=$(( i % 2 ? 1 : 250 ))
  "$BIN" ledger import "$T/c.csv" --ledger "$L" --batch "$batch" --ack > "$out" 2> "$T/c.err" & PC=$!
  PIDS=("$PC")
  # ... waiting on the acks themselves (no fixed sleep); the writer keeps committing meanwhile,
  # so the kill lands at an arbitrary point of a later write.
  while kill -0 "$PC" 2>/dev/null && [ "$(last_ack "$out")" -lt "$after" ]; do sleep 0.01; done
  kill -9 "$PC" 2>/dev/null || true
  wait "$PC" 2>/dev/null || true
  PIDS=()
  acked=$(last_ack "$out")
  [ -s "$T/c.err" ] && fail "round $i: the writer reported an error: $(cat "$T/c.err")"
  have=$(count_of "$m")
  # Acknowledged commits are all there; at most one more commit may have landed before its ack was
  # printed; and never part of a transaction.
  [ "$have" -ge "$acked" ] || fail "round $i (kill after $after rows): $acked acknowledged, only $have in the ledger"
  [ "$have" -le $((acked + batch)) ] || fail "round $i: $have rows but only $acked acknowledged"
  [ $((have % batch)) = 0 ] || fail "round $i: $have rows is not a whole number of $batch-row transactions (a partial write)"
  [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "round $i: integrity_check: $(q 'PRAGMA integrity_check')"
  total_acked=$((total_acked + acked))
  killed_mid=$((killed_mid + (acked < 3000)))
done
[ "$(count_of writer-a)" = 1000 ] && [ "$(count_of writer-b)" = 1000 ] || fail "the kill loop lost earlier rows"
# The file still takes writes and reads through gpuplan.
"$BIN" ledger import "$T/a.csv" --ledger "$L" > /dev/null || fail "import after the kill loop failed"
"$BIN" ledger list --ledger "$L" | grep -q "writer-a" || fail "ledger list after the kill loop"
[ "$(q 'PRAGMA integrity_check')" = ok ] || fail "final integrity_check"
[ "$killed_mid" -gt 0 ] || fail "no writer was killed before it finished: the loop tested nothing"
echo "ok: $N writers killed with kill -9 ($total_acked acknowledged rows), nothing acknowledged lost, integrity ok"
