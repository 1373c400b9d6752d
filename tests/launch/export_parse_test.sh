#!/usr/bin/env bash
# Every export format of examples/70b-full-finetune.yaml parsed by a real parser (json, PyYAML, toml,
# bash -n) with the plan's numbers in its keys, and the refusals (tests/launch/export_check.py).
set -euo pipefail
bin=${1:?usage: export_parse_test.sh GPUPLAN_BINARY SOURCE_DIR}
src=${2:?usage: export_parse_test.sh GPUPLAN_BINARY SOURCE_DIR}
[ -x /usr/bin/python3 ] || { echo "export_parse_test: needs /usr/bin/python3 (Debian python3)" >&2; exit 1; }
exec /usr/bin/python3 "$src/tests/launch/export_check.py" --binary "$bin" --source "$src"
