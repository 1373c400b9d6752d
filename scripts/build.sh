#!/usr/bin/env bash
# Configures and builds gpuplan in ./build (Release with debug info).
#   bash scripts/build.sh              everything: the binary, the tests, the benchmarks (scripts/test.sh)
#   bash scripts/build.sh --binary     only the gpuplan binary: no GoogleTest or Benchmark needed (scripts/demo.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--binary" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUPLAN_BUILD_TESTS=OFF -DGPUPLAN_BUILD_BENCH=OFF > /dev/null
  cmake --build build -j "$(nproc)" --target gpuplan
elif [ -n "${1:-}" ]; then
  echo "usage: bash scripts/build.sh [--binary]" >&2
  exit 1
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUPLAN_BUILD_TESTS=ON -DGPUPLAN_BUILD_BENCH=ON > /dev/null
  cmake --build build -j "$(nproc)"
fi
