# Sourced by the project's scripts: the venv, DAGSTER_HOME inside the project, offline model stack.
HCAT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export HCAT_ROOT
export PATH="$HCAT_ROOT/${HCAT_VENV:-.venv}/bin:$PATH"
export DAGSTER_HOME="${DAGSTER_HOME:-$HCAT_ROOT/.dagster_home}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS=""
mkdir -p "$DAGSTER_HOME"
# the instance config for the profile, written atomically (temp file + rename): processes started together (two
# Celery workers) source this at once, and a plain cp races ("cannot create regular file …: File exists")
if [ "${HCAT_DEPLOYMENT:-local}" = distributed ]; then  # Postgres + Celery workers (resources/sets.py)
  _hcat_conf="$HCAT_ROOT/deploy/dagster.distributed.yaml"
elif [ "${HCAT_DAGSTER_STORAGE:-sqlite}" = postgres ]; then
  _hcat_conf="$HCAT_ROOT/deploy/dagster.postgres.yaml"
else
  _hcat_conf="$HCAT_ROOT/dagster.yaml"
fi
cp "$_hcat_conf" "$DAGSTER_HOME/.dagster.yaml.$$" && mv -f "$DAGSTER_HOME/.dagster.yaml.$$" "$DAGSTER_HOME/dagster.yaml"
unset _hcat_conf
