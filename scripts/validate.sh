#!/usr/bin/env bash
# Regenerates docs/validation.md from ../shared/validation (run after changing src/model or data/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/gpuplan validate ../shared/validation/runs.csv ../shared/validation/memory.csv --write docs/validation.md
