#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, property, golden, e2e, validation),
# then the unit/property/e2e/golden tests again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
# Stage times are printed (docs/testing.md has the budget: the whole script under 25 minutes on 2 cores).
bash scripts/deps.sh --test
stage() { echo "== test.sh: $1 done at ${SECONDS}s"; }
# ccache, where it is installed, for all three trees (build, build-asan, build-fuzz via scripts/fuzz.sh).
if command -v ccache > /dev/null && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
bash scripts/build.sh
stage build
ctest --test-dir build --output-on-failure -j "$(nproc)"
stage "ctest (all labels)"
# The sanitizer tree: Debug (assertions on) with line tables only (-g1: file:line in every report, a third
# less compile time than -g); only the labels it runs are built (no validation binaries). The property
# tests draw fewer random cases here (testing_util::PropertyCases); the plain build above draws them all.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1" -DGPUPLAN_SANITIZE=ON \
  -DGPUPLAN_BUILD_BENCH=OFF > /dev/null
cmake --build build-asan -j "$(nproc)" --target tests_unit tests_property tests_e2e tests_golden > /dev/null
stage "build-asan"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L "unit|property|e2e|golden"
stage "ctest under ASan/UBSan"
# Fuzzing: libFuzzer harnesses (clang) in build-fuzz, the saved reproducers replayed, then a fixed number of inputs
# per harness from a fixed seed (--ci): the same inputs here as on any machine, so CI never meets a crash that a
# clean local run did not. Longer random runs (scripts/fuzz.sh, --long) are how new crashes are found.
bash scripts/fuzz.sh --ci
