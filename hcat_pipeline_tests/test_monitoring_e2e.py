"""Production monitoring end to end, with known answers (issue 49): ten days of a bank service's logs appear one a day,
``production_log_sensor`` requests each day, ``monitoring_job`` runs for real (Dagster, the packaged models), and the
asset checks raise exactly the three planted faults — an acute groundedness drop on day 7, a refusal drift from day 3,
irrelevant answers concentrated in one topic stratum from day 5 — with their days and stratum. Personal data in the
questions never reaches the sample, the report, the queue or the history page; the pages render in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline.monitoring.synthetic import FIELDS, PII, TrafficPlan, write_traffic
from hcat_pipeline_tests.monitoring_data import pools, write_bank_corpus
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS

PLAN = TrafficPlan(rows_per_day=400, acute_day=7, drift_from=3, drift_step=0.04, category_stratum=2, category_from=5)
SAMPLE_SIZE = 160
PLANTED_PII = ("jane.doe@example.com", "415-555-0132", "Maria Gonzalez", "4111 1111 1111 1111")


def _campaign(path: Path, logs: Path) -> Path:
    fields = {k: v for k, v in vars(FIELDS).items() if v}
    path.write_text(json.dumps({  # YAML is a superset of JSON
        "name": "bank", "systems": [{"system_id": "bank-assistant", "retriever": "closed_book"}],
        "monitoring": {"service": "bank-assistant", "paths": [f"{logs.name}/traffic-*.jsonl"], "fields": fields,
                       "sample": {"sample_size": SAMPLE_SIZE}, "queue_size": 8,
                       "judge": {"enabled": "off"}},  # the judge has its own test: ten days of it would take ten budgets
    }), encoding="utf-8")  # fmt: skip
    return path


def _monitor(root: Path, plan: TrafficPlan, embedding_model) -> dict:
    """The days' files appear one a day; the sensor ticks; the run it asks for runs (real Dagster, the packaged models)."""
    from hcat_pipeline.definitions import defs
    from hcat_pipeline.io import PolarsParquetIOManager
    from hcat_pipeline.resources.sets import resources_for
    from hcat_pipeline.sensors import build_production_log_sensor

    warehouse, reports, staged, logs = root / "warehouse", root / "reports", root / "staged", root / "logs"
    write_bank_corpus(warehouse, embedding_model.embed)
    files = write_traffic(staged, plan, pools())
    logs.mkdir()
    campaign = _campaign(root / "campaign.yaml", logs)
    sensor = build_production_log_sensor(str(campaign))
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("monitoring_job")
    resources = {**resources_for(), "io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": embedding_model}
    cursor, days = None, []
    for f in files:
        (logs / f.name).write_bytes(f.read_bytes())
        tick = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))
        cursor = tick.cursor
        assert [r.partition_key for r in tick.run_requests] == [f.name.removeprefix("traffic-").removesuffix(".jsonl")]
        request = tick.run_requests[0]
        config = request.run_config
        for op in config["ops"].values():
            op["config"] |= {"reports_dir": str(reports), "golden_dir": str(root / "golden")}  # no golden set: unlike_golden not measured
        result = job.execute_in_process(run_config=config, partition_key=request.partition_key, instance=instance, resources=resources)
        assert result.success
        days.append((request.partition_key, {e.check_name: e for e in result.get_asset_check_evaluations()}))
    again = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))
    return {"days": days, "warehouse": warehouse, "reports": reports, "repeat": again}


@pytest.fixture(scope="module")
def monitored(tmp_path_factory, embedding_model):
    return _monitor(tmp_path_factory.mktemp("monitoring"), PLAN, embedding_model)


def _raised(days) -> dict[tuple, dict]:
    """(kind, signal, stratum) → the latest anomaly raised by a failed check, over every day's run."""
    out = {}
    for _, checks in days:
        for name in ("acute_regression", "category_failure", "gradual_drift"):
            check = checks[name]
            for a in check.metadata["anomalies"].value:
                out[(a["kind"], a["signal"], a["stratum"])] = a
            assert check.passed == (not check.metadata["anomalies"].value)
    return out


def test_the_checks_raise_exactly_the_planted_anomalies_with_their_days_and_stratum(monitored):
    raised = _raised(monitored["days"])
    assert set(raised) == {("acute", "ungrounded", None), ("drift", "refused", None), ("category", "irrelevant", 2)}, raised
    acute, drift, category = raised[("acute", "ungrounded", None)], raised[("drift", "refused", None)], raised[("category", "irrelevant", 2)]
    assert acute["days"] == [PLAN.day(7)] and acute["severity"] == "ERROR"
    assert category["start_day"] == PLAN.day(5) and category["end_day"] == PLAN.day(10) and category["severity"] == "ERROR"
    # a drift's start is read from noisy daily rates by a hinge fit: the planted day or one either side
    assert PLAN.day(2) <= drift["start_day"] <= PLAN.day(4) and drift["severity"] == "WARN", drift
    by_day = {day: {n: c.passed for n, c in checks.items()} for day, checks in monitored["days"]}
    assert [d for d, c in by_day.items() if not c["acute_regression"]] == [PLAN.day(7)]
    assert [d for d, c in by_day.items() if not c["category_failure"]] == [PLAN.day(i) for i in range(5, 11)]
    assert all(c["gradual_drift"] for d, c in by_day.items() if d < PLAN.day(6))  # a trend needs days to show


def test_the_same_traffic_without_the_faults_raises_nothing(tmp_path, embedding_model):
    """The control: the planted plan's traffic (same seed) with no fault planted — no anomaly check fails on any day."""
    control = _monitor(tmp_path, TrafficPlan(rows_per_day=PLAN.rows_per_day), embedding_model)
    assert _raised(control["days"]) == {}
    assert all(checks[n].passed for _, checks in control["days"] for n in ("acute_regression", "category_failure", "gradual_drift"))


def test_every_day_is_ingested_once_and_bad_rows_are_named(monitored):
    assert len(monitored["days"]) == PLAN.days and monitored["repeat"].run_requests == []
    for _, checks in monitored["days"]:
        rows = checks["rows_readable"]
        assert not rows.passed and rows.severity == dg.AssetCheckSeverity.WARN and rows.metadata["rejected"].value == PLAN.broken_lines
        reasons = " | ".join(r["reason"] for r in rows.metadata["reasons"].value)
        assert "not JSON" in reasons and "no question" in reasons


def test_personal_data_never_leaves_the_logs(monitored):
    reports = monitored["reports"]
    texts = [p.read_text(encoding="utf-8") for p in reports.rglob("*") if p.is_file()]
    sample = pl.concat([pl.read_parquet(p) for p in (monitored["warehouse"] / "production_sample").glob("*.parquet")])
    texts += [json.dumps(sample.select("question", "answer", "contexts", "correction").to_dicts())]
    assert sample["masked_spans"].sum() > 0 and any(p.split()[0] in str(PII) for p in PII)
    for secret in PLANTED_PII:
        assert not any(secret in t for t in texts), secret
    raw = pl.read_parquet(monitored["warehouse"] / "production_logs" / f"{PLAN.day(1)}.parquet")
    assert raw["question"].str.contains("jane.doe@example.com", literal=True).any()  # the logs themselves are the user's, unmasked


def test_the_daily_report_and_the_history_page_render_in_headless_chromium(monitored, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (scripts/setup.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    report = monitored["reports"] / "monitoring" / PLAN.day(7) / "report.html"
    history = monitored["reports"] / "history.html"
    outside: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route(lambda url: not url.startswith(("file:", "data:")), lambda r: (outside.append(r.request.url), r.abort()))
            page.goto(report.as_uri(), wait_until="load")
            anomalies = page.locator("#table-anomalies tr.ERROR")
            assert anomalies.count() == 2  # day 7: the acute drop and the stratum's ongoing failure
            assert "acute regression" in page.locator("#table-anomalies").inner_text()
            assert page.locator("#table-rates tr").count() > 5 and page.locator("#table-queue tr").count() > 1
            page.screenshot(path=str(tmp_path / "monitoring_report.png"), full_page=True)
            page.goto(history.as_uri(), wait_until="load")
            widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
            assert widths and all(w > 300 for w in widths), widths
            assert page.get_by_role("heading", name="Live traffic", exact=True).is_visible()
            assert page.get_by_role("heading", name="Live traffic: latency", exact=True).is_visible()
            page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
        finally:
            browser.close()
    assert outside == []
    assert (tmp_path / "history.png").stat().st_size > 20_000


def test_a_reviewed_production_failure_becomes_a_case_of_a_new_frozen_version(monitored, tmp_path):
    """golden-eval §9.4: the day's queue on the review page, a verdict a row, and the incidents frozen with a base version."""
    from fastapi.testclient import TestClient

    from hcat_pipeline.golden.cases import load_version
    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings
    from hcat_pipeline_tests.review_data import VERSION, make_project

    project = make_project(tmp_path)
    settings = ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                              curation_dir=project.curation_dir, chunks=project.chunks, reports_dir=monitored["reports"])  # fmt: skip
    client = TestClient(create_app(settings))
    day = PLAN.day(7)
    page = client.get(f"/monitor?day={day}")
    assert page.status_code == 200 and "not reviewed yet" in page.text and "Question (personal data masked)" in page.text
    queue = [json.loads(x) for x in (monitored["reports"] / "monitoring" / day / "queue.jsonl").read_text().splitlines()]
    first, second = queue[0]["request_id"], queue[1]["request_id"]
    base = {"rater": "alice", "day": day, "verdict": "incident", "expected_behavior": "answer"}
    assert client.post("/api/incidents", json={**base, "request_id": first}).json()["message"].startswith("an incident the system should answer needs")
    sentence = queue[0]["question"].split("this: ", 1)[-1].rstrip("?")
    saved = client.post("/api/incidents", json={**base, "request_id": first, "reference_answer": sentence[0].upper() + sentence[1:] + ".",
                                                "difficulty": "hard", "scoring_notes": "states the rule"})  # fmt: skip
    assert saved.json()["status"] == "saved"
    assert client.post("/api/incidents", json={**base, "request_id": second, "verdict": "not_a_failure"}).json()["status"] == "saved"
    assert client.post("/api/incidents", json={**base, "request_id": "nope"}).status_code == 400
    assert "1 incident(s) reviewed" in client.get(f"/monitor/case?day={day}&request={first}").text
    frozen = client.post("/api/incidents/freeze", json={"rater": "alice", "base_version": VERSION, "new_version": "gs-with-incidents"}).json()
    assert frozen["status"] == "frozen", frozen
    cases, _ = load_version("gs-with-incidents", project.golden_dir)
    base_n = load_version(VERSION, project.golden_dir)[0].height
    added = cases.filter(pl.col("tags").list.contains("source:production_incident"))
    assert cases.height == base_n + 1 and added.height == 1
    case = added.row(0, named=True)
    assert case["category"] == "happy_path" and case["reviewed_by"] == "alice" and case["difficulty"] == "hard"
    assert f"request:{first}" in case["tags"] and case["query"] == queue[0]["question"]


def test_the_tiered_judge_reads_the_flagged_rows_within_its_budget_on_masked_text(monitored, local_llm):
    """golden-eval §5.5 on a monitored day: the rows the metrics are unsure of, highest priority first, as many as the budget
    fits (here two rows × one dimension), judged by the packaged model on the masked sample."""
    from hcat_pipeline.monitoring.judging import judge_day, judge_tier

    sample = pl.read_parquet(monitored["warehouse"] / "production_sample" / f"{PLAN.day(7)}.parquet")
    tier = judge_tier(sample, 100)
    assert tier.height > 2 and tier["n_flags"].is_sorted(descending=True)
    rows, why = judge_day(sample, local_llm, seconds_per_call=6.0, time_budget_s=12.0, dimensions=("groundedness",))
    assert why.startswith("judged the 2 answer(s)") and sorted(rows["request_id"]) == sorted(tier["request_id"].head(2))
    assert rows["score"].is_not_null().all() and set(rows["dimension"]) == {"groundedness"}
    none, why_none = judge_day(sample, local_llm, seconds_per_call=6.0, time_budget_s=5.0)
    assert none.is_empty() and "not one answer fits" in why_none
