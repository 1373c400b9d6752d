#!/usr/bin/env bash
# Every README example runs as written: each `./build/gpuplan ...` line of README.md's ```sh blocks runs, in the
# order written, in one scratch directory that sees the repository's examples/, data/ and docs/ (a line may
# read a file an earlier line wrote, e.g. plan.json), and must exit 0. Its output (stdout and stderr) must not
# cite the users' articles or internal notes, nor a path outside the repository.
# Usage: readme_examples_test.sh GPUPLAN_BINARY SOURCE_DIR
set -uo pipefail
BIN=$(readlink -f "$1")
SRC=$(readlink -f "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/build" "$T/home"
ln -s "$BIN" "$T/build/gpuplan"
for d in examples data docs; do ln -s "$SRC/$d" "$T/$d"; done
export HOME="$T/home" XDG_DATA_HOME="$T/home/.local/share"

# The example lines: inside ```sh fences, starting with ./build/gpuplan; a trailing "  # comment" is dropped.
mapfile -t lines < <(awk '/^```sh[[:space:]]*$/ {on=1; next} /^```/ {on=0} on && /^\.\/build\/gpuplan / {print}' "$SRC/README.md" |
                     sed -E 's/[[:space:]]{2,}#.*$//')
[ "${#lines[@]}" -ge 10 ] || { echo "FAIL: found only ${#lines[@]} example lines in README.md"; exit 1; }

fail=0
n=0
for line in "${lines[@]}"; do
  n=$((n + 1))
  out=$(cd "$T" && timeout 600 bash -c "$line" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL ($rc): $line"
    printf '%s\n' "$out" | tail -5 | sed 's/^/    /'
    fail=1
    continue
  fi
  if bad=$(printf '%s\n' "$out" | grep -nE 'seed ?0[0-9]|launch-serving-checks|exports-audit|shared/(reference|validation|fixtures|seeds)|\.\./shared' | head -3) && [ -n "$bad" ]; then
    echo "FAIL (cites an internal document): $line"
    printf '%s\n' "$bad" | sed 's/^/    /'
    fail=1
    continue
  fi
  echo "ok: $line"
done
[ "$fail" -eq 0 ] && echo "all $n README examples exit 0"
exit "$fail"
