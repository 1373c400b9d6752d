#!/usr/bin/env bash
# gpuplan probe --bench storage DIR runs a real fio (sequential write, sequential read, random 4k
# read on a 64 MiB scratch file) and records positive MB/s and IOPS with the raw output's hash.
# usage: fio_test.sh GPUPLAN_BINARY SOURCE_DIR [SHARED_DIR]
set -euo pipefail
BIN="${1:?gpuplan binary}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v fio >/dev/null || fail "fio (Debian package fio) is needed"
command -v sqlite3 >/dev/null || fail "sqlite3 (Debian package sqlite3) is needed"
command -v sha256sum >/dev/null || fail "sha256sum (coreutils) is needed"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
L="$T/ledger.db"
mkdir "$T/scratch"
q() { sqlite3 "$L" "$1"; }

"$BIN" probe --ledger "$L" --bench storage "$T/scratch" > "$T/out.txt" 2> "$T/err.txt" || fail "probe --bench storage exited $?: $(cat "$T/err.txt")"
grep "^storage\|^note" "$T/out.txt"
for k in storage_seq_read_mb_per_s storage_seq_write_mb_per_s storage_randread_4k_mb_per_s storage_randread_4k_iops storage_seq_read_iops; do
  [ "$(q "SELECT COUNT(*) FROM measurements WHERE kind = '$k' AND tool = 'fio' AND value > 0")" = 1 ] || fail "$k: no positive value recorded"
done
# Each fio run's raw JSON is kept next to the ledger, named by its SHA-256, which sha256sum agrees with.
q "SELECT DISTINCT raw_sha256 || ' ' || raw_file FROM measurements WHERE tool = 'fio'" > "$T/raw.txt"
[ "$(wc -l < "$T/raw.txt")" = 3 ] || fail "expected 3 fio raw outputs, got $(wc -l < "$T/raw.txt")"
while read -r sha file; do
  [ -f "$file" ] || fail "raw output $file missing"
  [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$sha" ] || fail "sha256sum of $file differs from the ledger's $sha"
  /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$file" || fail "$file is not fio JSON"
done < "$T/raw.txt"
# direct or buffered is recorded with each measurement, and said when buffered.
direct="$(q "SELECT json_extract(context_json, '\$.direct') FROM measurements WHERE kind = 'storage_seq_read_mb_per_s'")"
if [ "$direct" = 0 ]; then grep -q "^note: O_DIRECT" "$T/out.txt" || fail "buffered run not said"; fi
[ -z "$(ls -A "$T/scratch")" ] || fail "the scratch file was left behind: $(ls "$T/scratch")"
# A folder that does not exist is bad input (exit 1), with nothing recorded.
set +e
"$BIN" probe --ledger "$T/other.db" --bench storage "$T/nowhere" 2> "$T/bad.txt"; rc=$?
set -e
[ "$rc" = 1 ] || fail "--bench storage on a missing folder: exit $rc, expected 1"
grep -q "nowhere" "$T/bad.txt" || fail "the error does not name the folder: $(cat "$T/bad.txt")"
[ ! -e "$T/other.db" ] || fail "a failed --bench storage wrote a ledger (the command records all or nothing)"
echo "ok: fio ran on $T/scratch (direct=$direct); MB/s and IOPS recorded with hashes that sha256sum confirms"
