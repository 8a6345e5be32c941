#!/usr/bin/env bash
# A dagster-celery worker of the distributed profile (HCAT_DEPLOYMENT=distributed) on this machine.
# Start as many as you like, on as many machines as you like; each needs the project installed
# (bash scripts/setup.sh), the same instance and broker, and the same data directory (a shared mount):
#   export HCAT_POSTGRES_URL=postgresql+psycopg2://dagster:<password>@db-host:5432/dagster
#   export HCAT_CELERY_BROKER=redis://:<password>@redis-host:6379/0 HCAT_CELERY_BACKEND=redis://:<password>@redis-host:6379/1
#   export HCAT_DATA_DIR=/mnt/hcat-data HCAT_LLM_BASE_URL=http://llm-host:8000/v1   # or an API provider + key
#   bash scripts/worker.sh            # name: HCAT_WORKER_NAME (default hcat-<host>-<pid>)
# Tasks run one at a time per worker process unless HCAT_WORKER_CONCURRENCY says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
export HCAT_DEPLOYMENT=distributed
source scripts/env.sh
: "${HCAT_POSTGRES_URL:?set HCAT_POSTGRES_URL (the shared Dagster instance)}"
: "${HCAT_CELERY_BROKER:?set HCAT_CELERY_BROKER (redis://…/0)}"
: "${HCAT_CELERY_BACKEND:?set HCAT_CELERY_BACKEND (redis://…/1)}"
exec dagster-celery worker start -A dagster_celery.app -y deploy/celery.yaml \
  -n "${HCAT_WORKER_NAME:-hcat-$(hostname)-$$}" --loglevel "${HCAT_WORKER_LOGLEVEL:-INFO}" \
  -- --pool="${HCAT_WORKER_POOL:-prefork}" --concurrency="${HCAT_WORKER_CONCURRENCY:-1}"
