#!/usr/bin/env bash
# Installs what gpuplan needs from Debian 12 packages, only what is missing.
#   bash scripts/deps.sh          what building and running the gpuplan binary needs (scripts/demo.sh)
#   bash scripts/deps.sh --test   that plus what the tests, benchmarks and fuzzers need (scripts/test.sh)
set -euo pipefail
# Build and run: a C++20 compiler and CMake; yaml-cpp and nlohmann-json (job files, JSON output);
# libtomlplusplus-dev: the TOML parser behind `gpuplan import` of torchtitan configs; SQLite: the resource
# ledger; hwloc through pkg-config: the probe's CPU and NUMA topology; libcpp-httplib-dev: the HTTP server of
# `gpuplan web` (it brings the TLS, zlib and brotli headers its pkg-config flags name).
pkgs=(build-essential cmake libyaml-cpp-dev nlohmann-json3-dev libtomlplusplus-dev libsqlite3-dev libhwloc-dev pkg-config
      libcpp-httplib-dev)
if [ "${1:-}" = "--test" ]; then
  # Tests: GoogleTest/GoogleMock, Google Benchmark (bench/), python3-torch (tests/groundtruth: PyTorch on the CPU),
  # slurm-wlm + munge (the real Slurm that tests/launch/slurm_test.sh starts on localhost and submits the exported
  # sbatch script to), python3-yaml/-toml (the launch tests read the exports back), python3-jsonschema (the
  # Kubernetes manifests against the CRD schemas), sqlite3 (the ledger under
  # kill -9), fio (tests/real), clang + libclang-rt-14-dev (libFuzzer and the sanitizer runtimes for
  # scripts/fuzz.sh; Debian 12 ships libclang_rt.fuzzer-x86_64.a in libclang-rt-14-dev, which
  # --no-install-recommends leaves out), wrk and curl (bench/web_load.sh: the load test of `gpuplan web`),
  # chromium + chromium-driver + python3-selenium (tests/browser: the web page in a real headless browser) with
  # fonts-wqy-microhei (the page's Chinese labels in its screenshot).
  pkgs+=(libgtest-dev libgmock-dev libbenchmark-dev python3-torch clang libclang-rt-14-dev slurm-wlm munge python3-yaml
         python3-toml python3-jsonschema sqlite3 fio wrk curl chromium chromium-driver python3-selenium
         fonts-wqy-microhei)
elif [ -n "${1:-}" ]; then
  echo "usage: bash scripts/deps.sh [--test]" >&2
  exit 1
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
