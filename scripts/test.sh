#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, property, golden, e2e, validation).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
