#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, property, golden, e2e, validation),
# then the unit/property/e2e/golden tests again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPUPLAN_SANITIZE=ON -DGPUPLAN_BUILD_BENCH=OFF > /dev/null
cmake --build build-asan -j "$(nproc)" > /dev/null
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L "unit|property|e2e|golden"
# Fuzzing: libFuzzer harnesses (clang) in build-fuzz, the saved reproducers replayed, 30 s per harness.
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" bash scripts/fuzz.sh  # 9 harnesses; 30 s each keeps CI near 25 minutes
