"""The Dagster instance: SQLite by default, Postgres selected by HCAT_DAGSTER_STORAGE=postgres."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline_tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]


def _env_home(tmp_path, storage: str, extra: dict | None = None) -> dict:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "HCAT_DAGSTER_STORAGE": storage, **(extra or {})}
    out = subprocess.run(["bash", "-c", f"source '{ROOT}/scripts/env.sh' && cat \"$DAGSTER_HOME/dagster.yaml\""],
                         env=env, capture_output=True, text=True, check=True)
    return env, out.stdout


def test_default_instance_is_sqlite_with_telemetry_off(tmp_path):
    _, yaml_text = _env_home(tmp_path, "sqlite")
    assert "storage:" not in yaml_text and "telemetry:\n  enabled: false" in yaml_text
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        assert "Sqlite" in type(instance.run_storage).__name__


@pytest.mark.skipif(not any(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="PostgreSQL server not installed")
def test_postgres_storage_selected_by_one_env_var(tmp_path):
    port = str(free_port())  # not a fixed port: another cluster (a second test run, a user's) may hold it
    pg_root = Path(tempfile.mkdtemp(prefix="hcat-pg-"))  # outside pytest's 0700 tmp tree: user postgres must reach it
    os.chmod(pg_root, 0o755)
    env = {**os.environ, "PGPORT": port, "HCAT_PGDATA": str(pg_root / "data")}
    start = subprocess.run(["bash", str(ROOT / "scripts/postgres.sh"), "start"], env=env, capture_output=True, text=True)
    assert start.returncode == 0, start.stderr
    try:
        url = start.stdout.split("HCAT_POSTGRES_URL=")[1].split()[0]  # password auth (scram), never trust
        assert url.startswith("postgresql+psycopg2://postgres:") and url.endswith(f"@127.0.0.1:{port}/dagster")
        env2, yaml_text = _env_home(tmp_path, "postgres", {"HCAT_POSTGRES_URL": url})
        assert "postgres_url" in yaml_text
        script = (
            "import dagster as dg, polars as pl\n"
            "@dg.asset\n"
            "def tiny() -> pl.DataFrame: return pl.DataFrame({'a': [1]})\n"
            "from hcat_pipeline.io import PolarsParquetIOManager\n"
            f"r = dg.materialize([tiny], instance=dg.DagsterInstance.get(), resources={{'io_manager': PolarsParquetIOManager(base_dir='{tmp_path}/wh')}})\n"
            "i = dg.DagsterInstance.get()\n"
            "print(type(i.run_storage).__name__, r.success, i.get_latest_materialization_event(dg.AssetKey('tiny')) is not None)\n"
        )
        out = subprocess.run([str(ROOT / ".venv/bin/python"), "-c", script], env=env2, capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.split() == ["PostgresRunStorage", "True", "True"]
        assert pl.read_parquet(tmp_path / "wh" / "tiny.parquet")["a"].to_list() == [1]
    finally:
        subprocess.run(["bash", str(ROOT / "scripts/postgres.sh"), "stop"], env=env, capture_output=True)
        shutil.rmtree(pg_root, ignore_errors=True)
