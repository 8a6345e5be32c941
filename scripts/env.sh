# Sourced by the project's scripts: the venv, DAGSTER_HOME inside the project, offline model stack.
HCAT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export HCAT_ROOT
export PATH="$HCAT_ROOT/${HCAT_VENV:-.venv}/bin:$PATH"
export DAGSTER_HOME="${DAGSTER_HOME:-$HCAT_ROOT/.dagster_home}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS=""
mkdir -p "$DAGSTER_HOME"
if [ "${HCAT_DEPLOYMENT:-local}" = distributed ]; then  # Postgres + Celery workers (resources/sets.py)
  cp "$HCAT_ROOT/deploy/dagster.distributed.yaml" "$DAGSTER_HOME/dagster.yaml"
elif [ "${HCAT_DAGSTER_STORAGE:-sqlite}" = postgres ]; then
  cp "$HCAT_ROOT/deploy/dagster.postgres.yaml" "$DAGSTER_HOME/dagster.yaml"
else
  cp "$HCAT_ROOT/dagster.yaml" "$DAGSTER_HOME/dagster.yaml"
fi
