#!/usr/bin/env bash
# Regenerates docs/validation.md and data/error_bands.csv from ../shared/validation (run after
# changing src/model or data/). The bands are embedded at build time: the second build picks them up.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES="../shared/validation/runs.csv ../shared/validation/memory.csv ../shared/validation/runs_vtrain.csv ../shared/validation/peft_runs.csv"
bash scripts/build.sh
# shellcheck disable=SC2086
./build/gpuplan validate $FILES --write docs/validation.md --bands data/error_bands.csv
bash scripts/build.sh
