#!/usr/bin/env bash
# The exported accelerate/DeepSpeed launch scripts run against stub launchers that record their arguments
# (tests/launch/launcher_stub_check.py).
set -euo pipefail
bin=${1:?usage: launcher_stub_test.sh GPUPLAN_BINARY SOURCE_DIR}
src=${2:?usage: launcher_stub_test.sh GPUPLAN_BINARY SOURCE_DIR}
[ -x /usr/bin/python3 ] || { echo "launcher_stub_test: needs /usr/bin/python3 (Debian python3)" >&2; exit 1; }
exec /usr/bin/python3 "$src/tests/launch/launcher_stub_check.py" --binary "$bin" --source "$src"
