"""`hcat monitor` end to end on the layouts users have (issue 60 item 3; issue 61 "hcat monitor has no test"): the
command itself, in its own process with its own Dagster instance and data folder, over (1) one OpenInference span export
holding two days (a file name with no date) beside an OpenTelemetry OTLP JSON export, and (2) a PostgreSQL table read by a query — each day's monitoring_job runs
for real, the bad trace / row is named in production_rejects, the day's report is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hcat_pipeline.monitoring.synthetic import TrafficPlan, write_traffic
from hcat_pipeline_tests.monitoring_data import pools, write_bank_corpus
from hcat_pipeline_tests.ops_servers import have_postgres, postgres_cluster

PLAN = TrafficPlan(days=2, rows_per_day=60, first_day="2026-11-10", broken_lines=0)
DAYS = [PLAN.day(1), PLAN.day(2)]


def _traffic(tmp: Path) -> list[dict]:
    files = write_traffic(tmp / "staged", PLAN, pools())
    return [json.loads(line) for f in files for line in f.read_text().splitlines()]


def _spans(row: dict) -> list[dict]:
    """One request as OpenInference writes it (Phoenix / LangSmith JSONL): a CHAIN root, a RETRIEVER child, an LLM child."""
    tid, t0 = row["id"], row["ts"].replace("Z", "+00:00")
    status = {"status_code": "ERROR", "status_message": row["response"]["error"]} if row["response"]["error"] else {"status_code": "OK"}
    answer = row["response"]["answer"]
    root = {"context": {"trace_id": tid, "span_id": f"{tid}-root"}, "parent_id": None, "name": "rag", "start_time": t0, "end_time": t0,
            "attributes": {"openinference.span.kind": "CHAIN", "input.value": row["request"]["query"], **({"output.value": answer} if answer else {})},
            **status}  # fmt: skip
    docs = {f"retrieval.documents.{i}.document.content": d for i, d in enumerate(s["text"] for s in row["response"]["sources"] or [])}
    ret = {"context": {"trace_id": tid, "span_id": f"{tid}-ret"}, "parent_id": f"{tid}-root", "name": "retrieve", "start_time": t0,
           "end_time": t0, "attributes": {"openinference.span.kind": "RETRIEVER", **docs}}  # fmt: skip
    return [root, ret]


def _otlp(day: str, n: int) -> dict:
    """An OpenTelemetry OTLP JSON export with GenAI attributes: ``n`` chat spans on ``day``."""
    import datetime as dt

    t0 = int(dt.datetime.fromisoformat(f"{day}T15:00:00+00:00").timestamp()) * 10**9
    kv = lambda k, v: {"key": k, "value": {"stringValue": v}}  # noqa: E731
    spans = [{"traceId": f"otel-{i}", "spanId": f"s{i}", "name": "chat", "startTimeUnixNano": str(t0 + i * 10**9),
              "endTimeUnixNano": str(t0 + i * 10**9 + 700_000_000), "status": {"code": "STATUS_CODE_OK"},
              "attributes": [kv("gen_ai.operation.name", "chat"), kv("gen_ai.prompt.0.content", f"What is the overdraft fee, case {i}?"),
                             kv("gen_ai.completion.0.content", "An arranged overdraft costs 39.9 % EAR.")]} for i in range(n)]  # fmt: skip
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _hcat(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HCAT_DATA_DIR": str(root / "data"), "DAGSTER_HOME": str(root / "dagster_home")}
    (root / "dagster_home").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "hcat_pipeline.cli", *args], env=env, capture_output=True, text=True, timeout=1500)


def _campaign(root: Path, source: dict, fields: dict) -> Path:
    path = root / "campaign.yaml"
    path.write_text(json.dumps({"name": "bank", "systems": [{"system_id": "bank-assistant", "retriever": "closed_book"}],
                                "monitoring": {"service": "bank-assistant", **source, "fields": fields, "queue_size": 4,
                                               "judge": {"enabled": "off"}}}))  # fmt: skip
    return path


def _check_days(root: Path, out: subprocess.CompletedProcess, extra: dict | None = None) -> dict[str, pl.DataFrame]:
    assert out.returncode == 0, out.stdout + out.stderr
    for day in DAYS:
        assert f"{day}: ok; checks raised: " in out.stdout, out.stdout
        assert (root / "data" / "reports" / "monitoring" / day / "report.html").stat().st_size > 2000
    warehouse = root / "data" / "warehouse"
    logs = {day: pl.read_parquet(warehouse / "production_logs" / f"{day}.parquet") for day in DAYS}
    assert {d: f.height for d, f in logs.items()} == {d: PLAN.rows_per_day + (extra or {}).get(d, 0) for d in DAYS}
    return {day: pl.read_parquet(warehouse / "production_rejects" / f"{day}.parquet") for day in DAYS}


@pytest.fixture()
def project(tmp_path, embedding_model) -> Path:
    write_bank_corpus(tmp_path / "data" / "warehouse", embedding_model.embed)
    return tmp_path


def test_hcat_monitor_reads_an_openinference_export_by_its_spans_timestamps(project):
    rows = _traffic(project)
    spans = [s for r in rows for s in _spans(r)]
    bad = {"context": {"trace_id": "no-answer", "span_id": "x"}, "parent_id": None, "name": "rag", "start_time": f"{DAYS[0]}T12:00:00+00:00",
           "status_code": "OK", "attributes": {"openinference.span.kind": "CHAIN", "input.value": "a question never answered"}}  # fmt: skip
    logs = project / "exports"
    logs.mkdir()
    (logs / "phoenix-export.jsonl").write_text("".join(json.dumps(s) + "\n" for s in [*spans, bad]))
    (logs / "otel-collector.json").write_text(json.dumps(_otlp(DAYS[1], 3)))
    out = _hcat(project, "monitor", "--config", str(_campaign(project, {"paths": ["exports"]}, {})))
    rejects = _check_days(project, out, extra={DAYS[1]: 3})
    assert rejects[DAYS[0]].to_dicts() == [{"source": "phoenix-export.jsonl:trace no-answer", "reason": rejects[DAYS[0]]["reason"][0]}]
    assert "no answer" in rejects[DAYS[0]]["reason"][0] and rejects[DAYS[1]].height == 0
    errors = pl.read_parquet(project / "data" / "warehouse" / "production_logs" / f"{DAYS[0]}.parquet")["error"].drop_nulls()
    assert errors.len() == sum(1 for r in rows if r["ts"].startswith(DAYS[0]) and r["response"]["error"])


@pytest.mark.skipif(not have_postgres(), reason="PostgreSQL server not installed (scripts/setup.sh installs it)")
def test_hcat_monitor_reads_a_postgres_table_day_by_day(project, monkeypatch):
    import sqlalchemy as sa

    rows = _traffic(project)
    table = [{"id": r["id"], "asked_at": r["ts"], "q": r["request"]["query"], "a": r["response"]["answer"], "err": r["response"]["error"],
              "ms": r["latency_ms"]} for r in rows]  # fmt: skip
    table.append({"id": "empty-question", "asked_at": f"{DAYS[1]}T08:00:00Z", "q": "", "a": "an answer to nothing", "err": None, "ms": 10.0})
    with postgres_cluster() as url:
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE traffic (id text, asked_at timestamptz, q text, a text, err text, ms double precision)"))
            conn.execute(sa.text("INSERT INTO traffic VALUES (:id, :asked_at, :q, :a, :err, :ms)"), table)
        engine.dispose()
        monkeypatch.setenv("HCAT_TRAFFIC_DB_URL", url)
        sql = {"query": "SELECT * FROM traffic WHERE asked_at >= :day_start AND asked_at < :day_end ORDER BY id",
               "days_query": "SELECT DISTINCT asked_at::date FROM traffic", "url_env_var": "HCAT_TRAFFIC_DB_URL"}  # fmt: skip
        fields = {"question_path": "q", "answer_path": "a", "error_path": "err", "timestamp_path": "asked_at", "request_id_path": "id",
                  "latency_ms_path": "ms"}  # fmt: skip
        out = _hcat(project, "monitor", "--config", str(_campaign(project, {"sql": sql}, fields)))
    rejects = _check_days(project, out)
    assert rejects[DAYS[0]].height == 0 and rejects[DAYS[1]]["reason"].to_list() == ["no question at 'q'"], rejects
    assert rejects[DAYS[1]]["source"][0].startswith("sql:row ")
