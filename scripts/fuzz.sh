#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang in build-fuzz, replays every saved reproducer
# in fuzz/regressions/<harness>/ (each must pass), then fuzzes each harness for FUZZ_SECONDS
# (default 60), FUZZ_JOBS of them at a time (default: the core count). Exits non-zero on a crash,
# a timeout, an out-of-memory or a failing replay; a new crash input is saved to
# fuzz/regressions/<harness>/ (fix it, or move it to fuzz/pending/ with a line in its README).
#
#   scripts/fuzz.sh                     the CI stage (60 s per harness)
#   scripts/fuzz.sh --long              600 s per harness (FUZZ_SECONDS sets any length)
#   scripts/fuzz.sh job catalog         only these harnesses
#   scripts/fuzz.sh --replay            build and replay the reproducers only
#   scripts/fuzz.sh --pending           replay fuzz/pending/ too and say which still fail (never fails)
#   scripts/fuzz.sh --ci                a fixed number of inputs per harness from seed 1 (what CI runs): the same
#                                       inputs on every machine, so a clean local run means a clean CI run
set -euo pipefail
cd "$(dirname "$0")/.."

all=(job hf_config catalog calibration validation verify import plan_json ledger pool)
seconds="${FUZZ_SECONDS:-60}"
replay_only=0
pending=0
ci=0
harnesses=()
for a in "$@"; do
  case "$a" in
    --long) seconds="${FUZZ_SECONDS:-600}" ;;
    --replay) replay_only=1 ;;
    --pending) pending=1 ;;
    --ci) ci=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) [[ " ${all[*]} " == *" $a "* ]] || { echo "fuzz.sh: unknown harness '$a' (${all[*]})" >&2; exit 1; }
       harnesses+=("$a") ;;
  esac
done
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all[@]}")
jobs="${FUZZ_JOBS:-$(nproc)}"

# --ci: inputs per harness, about 15 s each on 2 loaded cores (the corpus replay comes on top).
declare -A ci_runs=([job]=30000 [hf_config]=60000 [catalog]=800 [calibration]=2000 [validation]=20000 [verify]=50000
                    [import]=3000 [plan_json]=120000 [ledger]=8000 [pool]=3000)
declare -A max_len=([job]=4096 [hf_config]=4096 [catalog]=8192 [calibration]=8192 [validation]=8192 [verify]=16384 [import]=8192
                   [plan_json]=16384 [ledger]=8192 [pool]=8192)

for tool in clang clang++; do
  command -v "$tool" > /dev/null || { echo "fuzz.sh: $tool not found (bash scripts/deps.sh --test installs it)" >&2; exit 1; }
done

# -O1 and line tables only: the fuzzers build in about half the time of RelWithDebInfo and still
# symbolize. Only the fuzz targets are built (not the CLI, the planner or the tests).
build=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DGPUPLAN_FUZZ=ON -DBUILD_TESTING=OFF \
  -DGPUPLAN_BUILD_BENCH=OFF > /dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("${h}_fuzzer"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" > "$build/fuzz-build.log" 2>&1 || {
  tail -40 "$build/fuzz-build.log"; echo "fuzz.sh: build failed ($build/fuzz-build.log)" >&2; exit 1; }

echo "== fuzz: built ${#targets[@]} harnesses in ${SECONDS}s"
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
common=(-timeout=10 -rss_limit_mb=2048)
logs="$build/fuzz-logs"
mkdir -p "$logs"
fail=0

# Files of a reproducer folder (README lines are not inputs).
inputs() { [ -d "$1" ] && find "$1" -maxdepth 1 -type f ! -name 'README*' ! -name '.*' | sort; true; }

replay() {  # replay DIR HARNESS -> 0 when every input passes
  local dir="$1" h="$2" bad=0 f
  while IFS= read -r f; do
    [ -n "$f" ] || continue
    if "$build/fuzz/${h}_fuzzer" "${common[@]}" "$f" > "$logs/replay.log" 2>&1; then
      echo "  pass  $f"
    else
      echo "  FAIL  $f"; grep -E "FUZZ FAILURE|ERROR: |runtime error|SUMMARY" "$logs/replay.log" | head -3 | sed 's/^/        /' || true
      bad=1
    fi
  done < <(inputs "$dir")
  return $bad
}

echo "== fuzz: replaying fuzz/regressions/"
for h in "${harnesses[@]}"; do
  replay "fuzz/regressions/$h" "$h" || fail=1
done
if [ "$pending" = 1 ]; then
  echo "== fuzz: fuzz/pending/ (known failures owned elsewhere; informative only)"
  for h in "${harnesses[@]}"; do replay "fuzz/pending/$h" "$h" || true; done
fi
if [ "$fail" != 0 ]; then echo "fuzz.sh: a saved reproducer fails (above)" >&2; exit 1; fi
[ "$replay_only" = 1 ] && exit 0

if [ "$ci" = 1 ]; then
  echo "== fuzz: a fixed number of inputs per harness from seed 1, $jobs at a time (logs in $logs/)"
else
  echo "== fuzz: ${seconds}s per harness, $jobs at a time (logs in $logs/)"
fi
run_one() {  # run_one HARNESS: fuzz it, new crashes to fuzz/regressions/HARNESS/, exit status to .rc
  local h="$1" corpus="$build/corpus/$h" dict=() limit=(-max_total_time="$seconds") rc=0
  mkdir -p "$corpus" "fuzz/regressions/$h"
  [ -f "fuzz/dict/$h.dict" ] && dict=(-dict="fuzz/dict/$h.dict")
  if [ "$ci" = 1 ]; then  # a fresh corpus folder: the same start on every machine
    rm -rf "$corpus"; mkdir -p "$corpus"
    limit=(-runs="${ci_runs[$h]}" -seed=1)
  fi
  "$build/fuzz/${h}_fuzzer" "${common[@]}" -max_len="${max_len[$h]}" "${limit[@]}" \
    -print_final_stats=1 -artifact_prefix="fuzz/regressions/$h/" "${dict[@]}" \
    "$corpus" "fuzz/corpus/$h" > "$logs/$h.log" 2>&1 || rc=$?
  echo "$rc" > "$logs/$h.rc"
}
for h in "${harnesses[@]}"; do
  rm -f "$logs/$h.rc"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  run_one "$h" &
done
wait
for h in "${harnesses[@]}"; do
  rc=$(cat "$logs/$h.rc" 2> /dev/null || echo 99)
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$logs/$h.log" | grep -oE '[0-9]+$' || echo '?')
  cov=$(grep -oE 'cov: [0-9]+' "$logs/$h.log" | tail -1 || true)
  if [ "$rc" = 0 ]; then
    echo "  ok    $h: ${runs} runs, ${cov:-cov ?}"
  else
    fail=1
    echo "  CRASH $h (exit $rc): $(grep -oE "Test unit written to [^ ]+" "$logs/$h.log" | tail -1 || true)"
    grep -E "FUZZ FAILURE|ERROR: |runtime error|SUMMARY" "$logs/$h.log" | head -5 | sed 's/^/        /' || true
  fi
done
if [ "$fail" != 0 ]; then
  echo "fuzz.sh: crash found; the input is in fuzz/regressions/<harness>/ (full log in $logs/)" >&2
  exit 1
fi
echo "fuzz.sh: no crash (${SECONDS}s in all)"
