#!/usr/bin/env bash
# Open the Dagster UI on http://127.0.0.1:3000 (loopback only).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
exec dagster dev -w workspace.yaml -h 127.0.0.1 -p "${PORT:-3000}"
