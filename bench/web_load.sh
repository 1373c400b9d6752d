#!/usr/bin/env bash
# Load test of `gpuplan web` on loopback (docs/web.md "Load test"): wrk with 8 connections on POST /api/estimate
# and, at the same time, 2 connections on POST /api/plan, for 30 s. Prints requests/s and p99 latency of each,
# the non-2xx responses and socket errors (the script fails unless both are zero) and the server's resident
# memory (VmRSS) before and after. Needs wrk (Debian package wrk).
#   bash bench/web_load.sh                       30 s, build/gpuplan
#   bash bench/web_load.sh --duration 5          a short run
#   bash bench/web_load.sh --binary PATH
set -euo pipefail
cd "$(dirname "$0")/.."
duration=30
binary=build/gpuplan
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    *) echo "usage: bash bench/web_load.sh [--duration SECONDS] [--binary PATH]" >&2; exit 1 ;;
  esac
done
command -v wrk > /dev/null || { echo "web_load: wrk is not installed (apt-get install wrk)" >&2; exit 77; }
[ -x "$binary" ] || { echo "web_load: no binary at $binary (bash scripts/build.sh --binary)" >&2; exit 1; }
tmp=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2> /dev/null && wait "$server" 2> /dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The request bodies: an example job as the API takes it ({"job": "<the YAML text>"}).
body() { python3 -c 'import json, sys; print(json.dumps({"job": open(sys.argv[1]).read()}))' "$1"; }
body examples/7b-full-finetune-1node.yaml > "$tmp/estimate.json"
body examples/13b-full-finetune-1node.yaml > "$tmp/plan.json"

"$binary" web --port 0 > "$tmp/server.out" 2> "$tmp/server.err" &
server=$!
url=""
for _ in $(seq 100); do
  url=$(grep -o 'http://[^ ]*/' "$tmp/server.out" || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "web_load: the server did not start:" >&2; cat "$tmp/server.err" >&2; exit 1; }
rss() { awk '/^VmRSS/ {print $2 " " $3}' "/proc/$server/status"; }
rss_before=$(rss)
for route in estimate plan; do  # one request each: the server answers before the clock starts
  code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$tmp/$route.json" "${url}api/$route")
  [ "$code" = 200 ] || { echo "web_load: POST /api/$route answered $code" >&2; exit 1; }
done

GPUPLAN_WEB_BODY="$tmp/estimate.json" wrk -t 2 -c 8 -d "${duration}s" --timeout 30s --latency -s bench/web_load.lua \
  "${url}api/estimate" > "$tmp/estimate.wrk" &
w1=$!
GPUPLAN_WEB_BODY="$tmp/plan.json" wrk -t 1 -c 2 -d "${duration}s" --timeout 30s --latency -s bench/web_load.lua \
  "${url}api/plan" > "$tmp/plan.wrk" &
w2=$!
wait "$w1" "$w2"
rss_after=$(rss)
health=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "${url}healthz")
kill -TERM "$server"
wait "$server"
server_rc=$?
server=""

# wrk's summary: "Requests/sec:", the latency distribution's "99%" line, "Non-2xx or 3xx responses:" and
# "Socket errors: connect A, read B, write C, timeout D" (both absent when zero).
failed=0
printf "gpuplan web load test: %s s on loopback (%s)\n" "$duration" "$binary"
printf "%-9s %5s %12s %12s %10s %14s\n" "route" "conns" "requests/s" "p99 latency" "non-2xx" "socket errors"
for route in estimate plan; do
  f="$tmp/$route.wrk"
  conns=$([ "$route" = estimate ] && echo 8 || echo 2)
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$f")
  p99=$(awk '$1 == "99%" {print $2}' "$f")
  non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$f")
  socket=$(awk '/Socket errors:/ {gsub(",", ""); print $4 + $6 + $8 + $10}' "$f")
  non2xx=${non2xx:-0}
  socket=${socket:-0}
  printf "%-9s %5s %12s %12s %10s %14s\n" "$route" "$conns" "${rps:-?}" "${p99:-?}" "$non2xx" "$socket"
  if [ -z "$rps" ] || [ "$non2xx" != 0 ] || [ "$socket" != 0 ]; then failed=1; cat "$f" >&2; fi
done
printf "server RSS: %s before, %s after\n" "$rss_before" "$rss_after"
printf "/healthz after the load: %s; server exit on SIGTERM: %s\n" "$health" "$server_rc"
[ "$health" = 200 ] || failed=1
[ "$server_rc" = 0 ] || failed=1
if [ "$failed" != 0 ]; then
  echo "web_load: FAILED (errors above)" >&2
  exit 1
fi
