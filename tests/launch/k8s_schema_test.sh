#!/usr/bin/env bash
# The exported Kubernetes manifests against the Kubeflow CRD schemas (tests/launch/k8s_schema_check.py).
set -euo pipefail
bin=${1:?usage: k8s_schema_test.sh GPUPLAN_BINARY SOURCE_DIR}
src=${2:?usage: k8s_schema_test.sh GPUPLAN_BINARY SOURCE_DIR}
[ -x /usr/bin/python3 ] || { echo "k8s_schema_test: needs /usr/bin/python3 (Debian python3)" >&2; exit 1; }
exec /usr/bin/python3 "$src/tests/launch/k8s_schema_check.py" --binary "$bin" --source "$src"
