#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on an example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
./build/gpuplan plan examples/70b-full-finetune.yaml
