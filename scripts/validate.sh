#!/usr/bin/env bash
# Regenerates docs/validation.md and data/error_bands.csv from ../shared/validation (run after
# changing src/model or data/). The bands are embedded at build time: the second build picks them up.
#   --refit: first refit the calibrated constants leave-one-source-out (tools/fit_runs.py --loso,
#            a few minutes on 2 cores) into data/loso_fits.csv, which the report and the bands use.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES="../shared/validation/runs.csv ../shared/validation/memory.csv ../shared/validation/runs_vtrain.csv ../shared/validation/peft_runs.csv"
# Served runs (docs/model/serving.md): their models by preset, else the config.json fixtures; their own
# leave-one-source-out constants (tools/fit_serving.py) when fitted.
SERVING="../shared/validation/serving_runs.csv ../shared/validation/inference.csv --model-configs ../shared/fixtures/hf-configs"
# Runs with pinned stage layouts (docs/model/pools.md): predicted over a pool of their cards, never fitted on.
SERVING="$SERVING ../shared/validation/hetero_homog_runs.csv"
[[ -f data/serving_loso_fits.csv ]] && SERVING="$SERVING --serving-loso data/serving_loso_fits.csv"
bash scripts/build.sh
if [[ "${1:-}" == "--refit" ]]; then
  # shellcheck disable=SC2086
  python3 tools/fit_runs.py --binary build/gpuplan $FILES --loso data/loso_fits.csv
fi
# shellcheck disable=SC2086
./build/gpuplan validate $FILES $SERVING --loso data/loso_fits.csv --write docs/validation.md --bands data/error_bands.csv
bash scripts/build.sh
# Published runs that no fit has seen (validation/heldout/README.md): their own page, never fitted on.
./build/gpuplan validate validation/heldout/runs.csv validation/heldout/memory.csv --write docs/validation-heldout.md
