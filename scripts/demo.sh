#!/usr/bin/env bash
# Installs what building and running need (only what is missing), builds the gpuplan binary alone (no tests,
# no benchmarks), and plans an example job. scripts/test.sh installs and builds everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh --binary
./build/gpuplan plan examples/70b-full-finetune.yaml
