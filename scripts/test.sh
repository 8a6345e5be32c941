#!/usr/bin/env bash
# The test command: set up (idempotent), lint (ruff, config in pyproject.toml), run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
ruff check hcat_pipeline hcat_pipeline_tests benchmarks
# --durations=25: the 25 slowest tests are printed every run, so the suite's growth shows in each submission
python -m pytest -q --durations=25 "$@"
