#!/usr/bin/env bash
# Issue 17 item 5: names, paths and ids with newlines, quotes, $( ), backticks, '#' and ';' exported
# to every format stay inside their quoting (tests/launch/escape_check.py).
set -euo pipefail
bin=${1:?usage: escape_test.sh GPUPLAN_BINARY SOURCE_DIR}
src=${2:?usage: escape_test.sh GPUPLAN_BINARY SOURCE_DIR}
[ -x /usr/bin/python3 ] || { echo "escape_test: needs /usr/bin/python3 (Debian python3)" >&2; exit 1; }
exec /usr/bin/python3 "$src/tests/launch/escape_check.py" --binary "$bin"
