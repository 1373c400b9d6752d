#!/usr/bin/env bash
# --format html through the real binary (tests/e2e/html_report_test.py). Skips (exit 77, ctest SKIP) when
# /usr/bin/python3 is missing; CI has it.
# Usage: html_report_test.sh GPUPLAN_BINARY SOURCE_DIR
if [ ! -x /usr/bin/python3 ]; then
  echo "SKIP: /usr/bin/python3 is missing (apt-get install python3)"
  exit 77
fi
exec /usr/bin/python3 "$(dirname "$0")/html_report_test.py" "$@"
