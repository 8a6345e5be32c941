#!/usr/bin/env bash
# The main command: set up (idempotent) and run the nightly campaign on the embedded default corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
python -m hcat_pipeline.cli campaign "$@"
