#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test once: the unit and property tests under AddressSanitizer +
# UBSan, every other label (e2e, golden, validation, launch, real, text, badinput, the page in a real browser) in the
# plain build; then the load test of `gpuplan web` and the fuzz harnesses on fixed inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Stage times are printed (docs/testing.md has the budget: the whole script under 25 minutes on 2 cores).
bash scripts/deps.sh --test
stage() { echo "== test.sh: $1 done at ${SECONDS}s"; }
jobs=$(nproc)
# ccache, where it is installed, for all three trees (build, build-asan, build-fuzz via scripts/fuzz.sh).
if command -v ccache > /dev/null && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi

# The plain tree (RelWithDebInfo as scripts/build.sh, line tables only): the binary, the benchmarks (built so they keep compiling, not
# run) and the tests that run the binary or read whole outputs. No test file is built in both trees.
# A test binary a tree does not build shows in CTest as <target>_NOT_BUILT (unlabelled): -E leaves those out; the
# binaries of the labels a tree runs are build targets above, so a failed one stops the script there.
# Line tables only (-g1, not -g): file:line in every backtrace, about a fifth less compile time per file and a
# quarter of the object size (docs/testing.md).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DGPUPLAN_BUILD_TESTS=ON -DGPUPLAN_BUILD_BENCH=ON > /dev/null
cmake --build build -j "$jobs" --target gpuplan tests_e2e tests_golden tests_validation benches
stage "build (plain)"
ctest --test-dir build --output-on-failure -j "$jobs" -LE '^(unit|property)$' -E '_NOT_BUILT$'
stage "ctest (e2e, golden, validation, launch, real, text, badinput)"

# The sanitizer tree: Debug (assertions on) with line tables only (-g1: file:line in every report), the library
# layers the tests spend their time in at -O1 (CMakeLists.txt). The property tests draw fewer random cases here
# (testing_util::PropertyCases; GPUPLAN_PROPERTY_CASES=full draws them all).
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1" -DGPUPLAN_SANITIZE=ON \
  -DGPUPLAN_BUILD_BENCH=OFF > /dev/null
cmake --build build-asan -j "$jobs" --target gpuplan tests_unit tests_property > build-asan/build.log 2>&1 ||
  { tail -60 build-asan/build.log; echo "test.sh: the sanitizer build failed (build-asan/build.log)" >&2; exit 1; }
stage "build (sanitizers)"
ctest --test-dir build-asan --output-on-failure -j "$jobs" -L '^(unit|property)$' -E '_NOT_BUILT$'
stage "ctest (unit, property; sanitizers)"

# The load test of `gpuplan web` (wrk on loopback, 30 s: 8 connections on /api/estimate, 2 on /api/plan), on the
# sanitized binary: the requests/s and RSS it prints are a sanitizer's (docs/web.md has the plain binary's); what it
# checks is zero errors, /healthz alive and a clean exit under concurrent requests, with every access checked.
bash bench/web_load.sh --binary build-asan/gpuplan
stage "web load test (sanitizers)"

# Fuzzing: libFuzzer harnesses (clang) in build-fuzz, the saved reproducers replayed, then a fixed number of inputs
# per harness from a fixed seed (--ci): the same inputs here as on any machine, so CI never meets a crash that a
# clean local run did not. Longer random runs (scripts/fuzz.sh, --long) are how new crashes are found.
bash scripts/fuzz.sh --ci
stage fuzz
