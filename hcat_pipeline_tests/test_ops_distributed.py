"""HCAT_DEPLOYMENT=distributed for real on this machine: a private Postgres (password auth) holds the
instance, Redis is the Celery broker, two ``dagster-celery`` workers execute the steps of a campaign
slice (rag_responses → retrieval_metrics of one campaign run, two systems on an OpenAI-compatible LLM
server), started with the project's own CLI and config files (deploy/, scripts/env.sh)."""

import json
import os
import time

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline_tests.distributed_night import run_distributed_night, sh, sql, steps_on_workers
from hcat_pipeline_tests.ops_servers import (
    VENV_BIN,
    celery_workers,
    have_postgres,
    have_redis,
    openai_stub,
    postgres_cluster,
    redis_server,
    write_campaign_fixture,
)
from hcat_pipeline_tests.stubs import VERSION

NIGHT = "2026-11-20"
WORKERS = ["hcat-w1", "hcat-w2"]
PLANTED_KEY = "sk-planted-DISTRIBUTED-0123456789abcdef"


def _require_services():
    missing = [name for name, ok in (("postgresql", have_postgres()), ("redis-server", have_redis())) if not ok]
    if missing:
        if os.environ.get("CI"):  # scripts/setup.sh installs both: missing in CI is a setup bug, not a skip
            pytest.fail(f"{', '.join(missing)} not installed although scripts/setup.sh installs them")
        pytest.skip(f"{', '.join(missing)} not installed (bash scripts/setup.sh installs them)")


@pytest.mark.slow
def test_campaign_slice_runs_on_celery_workers_with_postgres_storage(tmp_path):
    _require_services()
    t0 = time.perf_counter()
    logs = tmp_path / "logs"
    logs.mkdir()
    wh = tmp_path / "wh"
    write_campaign_fixture(wh)
    with postgres_cluster() as pg_url, redis_server(logs) as redis_url, openai_stub() as llm:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HCAT_", "DAGSTER_"))},
            "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
            "DAGSTER_HOME": str(tmp_path / "home"),
            "HCAT_DEPLOYMENT": "distributed",
            "HCAT_POSTGRES_URL": pg_url,
            "HCAT_CELERY_BROKER": f"{redis_url}/0",
            "HCAT_CELERY_BACKEND": f"{redis_url}/1",
            "HCAT_WAREHOUSE_DIR": str(wh),
            "HCAT_DATA_DIR": str(tmp_path / "data"),
            "HCAT_GOLDEN_SETS_DIR": str(tmp_path / "golden_sets"),
            "HCAT_LLM_PROVIDER": "openai",
            "HCAT_LLM_MODEL": "stub-model",
            "HCAT_LLM_BASE_URL": llm.base_url,
            "HCAT_LLM_POOL_LIMITS": "llm_openai=3",
            "OPENAI_API_KEY": PLANTED_KEY,
        }
        # the instance: schema in Postgres, the version's partition, the LLM pool limit
        prep = sh(env, "python -c \"import dagster as dg; from hcat_pipeline.resources.sets import apply_pool_limits; "
                        f"i = dg.DagsterInstance.get(); i.add_dynamic_partitions('golden_set_version', ['{VERSION}']); "
                        "print(type(i.run_storage).__name__, apply_pool_limits(i))\"")  # fmt: skip
        assert prep.returncode == 0, prep.stderr[-3000:]
        assert "PostgresRunStorage {'llm_openai': 3}" in prep.stdout
        assert "storage:\n  postgres:" in (tmp_path / "home" / "dagster.yaml").read_text()
        campaign = {"name": "slice", "systems": [{"system_id": "bm25", "retriever": "bm25"},
                                                 {"system_id": "closed_book", "retriever": "closed_book", "prompt": "rag_closed_book_v1"}]}  # fmt: skip
        run_config = {"ops": {"rag_responses": {"config": {"campaign": campaign, "strata_path": str(wh / "none.parquet")}}}}
        with celery_workers(WORKERS, env, logs, timeout_s=300) as wait_ready:
            # while the workers start: the nightly schedule (RUNNING by default, so nothing stored yet) is stopped and
            # started again by an operator, which writes its state into the instance's schedule storage
            sched = sh(env, "dagster schedule stop nightly_campaign_schedule -m hcat_pipeline.definitions && "
                             "dagster schedule start nightly_campaign_schedule -m hcat_pipeline.definitions", timeout=400)  # fmt: skip
            assert sched.returncode == 0, sched.stderr[-3000:]
            wait_ready()
            t_run = time.perf_counter()
            run = sh(env, f"dagster asset materialize -m hcat_pipeline.definitions --select rag_responses,retrieval_metrics "
                           f"--partition '{VERSION}|{NIGHT}' --config-json '{json.dumps(run_config)}'", timeout=400)  # fmt: skip
            run_s = time.perf_counter() - t_run
        assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]

        # the run, its event log and the schedule are rows in Postgres
        runs = sql(pg_url, "SELECT run_id, status FROM runs")
        assert len(runs) == 1 and runs[0][1] == "SUCCESS", runs
        run_id = runs[0][0]
        events = [dg.deserialize_value(r[0], dg.EventLogEntry)
                  for r in sql(pg_url, "SELECT event FROM event_logs WHERE run_id = %s", (run_id,))]  # fmt: skip
        schedules = sql(pg_url, "SELECT status, job_type, job_body FROM jobs")  # the schedule storage's instigator states
        assert [(st, ty) for st, ty, body in schedules if '"nightly_campaign_schedule"' in body] == [("RUNNING", "SCHEDULE")], schedules
        assert sql(pg_url, "SELECT concurrency_key, count(*) FROM concurrency_slots GROUP BY 1") == [("llm_openai", 3)]

    # every step executed on one of the two workers, named in its engine event
    on_worker = steps_on_workers(events)  # every step executed on one of the two workers, named in its engine event
    # rag_responses is sharded: a plan step, one answer step per system (a 3-case night is one shard each), a merge step
    shards = {"rag_responses.answer_shard[bm25_0_0]", "rag_responses.answer_shard[closed_book_1_0]"}
    steps = {"rag_responses.plan_response_shards", *shards, "rag_responses.merge_responses", "retrieval_metrics",
             "rag_responses_contract", "retrieval_metrics_contract"}  # + the tables' contract checks
    assert set(on_worker) == steps, on_worker
    succeeded = {e.step_key for e in events if e.dagster_event and e.dagster_event.event_type_value == "STEP_SUCCESS"}
    assert succeeded == steps
    # the outputs are the campaign run's tables, the LLM server was asked once per case × LLM system
    out = pl.read_parquet(wh / "rag_responses" / VERSION / f"{NIGHT}.parquet")
    assert out.height == 6 and out["error"].null_count() == 6 and sorted(out["system_id"].unique()) == ["bm25", "closed_book"]
    assert llm.calls == 6 and llm.auth == {f"Bearer {PLANTED_KEY}"}
    assert pl.read_parquet(wh / "retrieval_metrics" / VERSION / f"{NIGHT}.parquet").height == 2
    # the API key reached the provider, and nothing stored or logged anywhere
    stored = "".join(dg.serialize_value(e) for e in events) + run.stdout + run.stderr + "".join(p.read_text(errors="replace") for p in logs.glob("*.log"))
    assert PLANTED_KEY not in stored
    print(f"distributed slice: run {run_s:.1f}s on workers {on_worker}; whole test {time.perf_counter() - t0:.1f}s")



@pytest.mark.slow
def test_whole_night_runs_on_celery_workers(tmp_path):
    """`hcat campaign` on the distributed profile: the golden-set and campaign-run jobs execute every step on the two
    Celery workers (the sharded stages' steps shared between them); the tables and the report are the night's."""
    _require_services()
    night = run_distributed_night(tmp_path, WORKERS, planted_key=PLANTED_KEY)
    campaign, events, data = night["campaign"], night["events"], night["data"]
    assert campaign.returncode == 0, (campaign.stdout + campaign.stderr)[-6000:]
    on_worker = steps_on_workers(events)
    started = {e.step_key for e in events if e.dagster_event and e.dagster_event.event_type_value == "STEP_START"}
    assert started and started <= set(on_worker), started - set(on_worker)  # every step executed on a worker …
    assert set(on_worker.values()) == set(WORKERS)  # … and both workers took steps
    shards = {s for s in on_worker if "answer_shard[" in s or "score_shard[" in s or "check_shard[" in s}
    assert len(shards) >= 6, shards  # per system, for each sharded stage
    failed = [e for e in events if e.dagster_event and e.dagster_event.event_type_value == "STEP_FAILURE"]
    # the only failure allowed is the release verdict: release_decision's blocking hard_gates check (a 7-case night leaves
    # gates INDETERMINATE), which `hcat campaign` reports as a completed campaign with its release blocked
    assert all(e.step_key == "release_decision" and "hard_gates" in e.dagster_event.event_specific_data.error.message for e in failed), \
        [(e.step_key, e.dagster_event.event_specific_data.error.message[:300]) for e in failed]  # fmt: skip
    assert "release gates: BLOCKED" in campaign.stdout or not failed
    wh, version, n = data / "warehouse", night["version"], night["cases"]
    responses = pl.read_parquet(wh / "rag_responses" / version / f"{night['night']}.parquet")
    assert n == 7 and responses.height == n * 2 and set(responses["system_id"]) == {"bm25", "their_rag"}
    # the LLM server was asked once per case by bm25 (their_rag is the user's HTTP service), plus verdict_stochasticity's
    # re-asks of the reference system (n_cases × repeats; the user's service is not re-asked without ask_http)
    flips = pl.read_parquet(wh / "verdict_stochasticity" / version / f"{night['night']}.parquet")
    assert flips["system_id"].to_list() == ["bm25"] and flips["n_cases"][0] >= 1
    reasked = int(flips["n_cases"][0] * flips["repeats"][0])
    assert responses["error"].null_count() == 2 * n and night["llm_calls"] == n + reasked, (night["llm_calls"], n, reasked)
    assert pl.read_parquet(wh / "metric_tables" / version / f"{night['night']}.parquet").height == 2 * n
    assert pl.read_parquet(wh / "behaviour_checks" / version / f"{night['night']}.parquet").height >= 2 * n
    report = (data / "reports" / version / night["night"] / "report.html").read_text()
    assert "their_rag" in report and "bm25" in report
    assert PLANTED_KEY not in "".join(dg.serialize_value(e) for e in events) + campaign.stdout + campaign.stderr
    print(f"distributed whole night: {night['night_s']:.1f}s; {len(on_worker)} steps on {sorted(set(on_worker.values()))}")
