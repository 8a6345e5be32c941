#!/usr/bin/env bash
# The test command: set up (idempotent) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
python -m pytest -q "$@"
