#!/usr/bin/env bash
# Installs what gpuplan needs from Debian 12 packages, only what is missing.
set -euo pipefail
# libtomlplusplus-dev: the TOML parser behind `gpuplan import` of torchtitan configs. slurm-wlm + munge: the
# real Slurm that tests/launch/slurm_test.sh starts on localhost and submits the exported sbatch script to.
# clang + libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for scripts/fuzz.sh (Debian 12 ships
# libclang_rt.fuzzer-x86_64.a in libclang-rt-14-dev, which --no-install-recommends leaves out).
pkgs=(build-essential cmake libyaml-cpp-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev python3-torch
      clang libclang-rt-14-dev libtomlplusplus-dev slurm-wlm munge python3-yaml python3-toml
      libsqlite3-dev sqlite3 libhwloc-dev pkg-config fio)
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
