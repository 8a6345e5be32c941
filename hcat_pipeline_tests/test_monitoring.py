"""The monitoring core without models: reading logs (bad rows named), the stratified sample's weights, the anomaly
tests with known answers, the trend tests, masking, the review queue, and the campaign file's monitoring section."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.monitoring.anomalies import detect
from hcat_pipeline.monitoring.day import mask, mask_frame, review_queue
from hcat_pipeline.monitoring.logs import LogFields, LogFileError, parse_time, read_day
from hcat_pipeline.monitoring.sampling import SampleConfig, nearest_strata, score_sample, screen
from hcat_pipeline.monitoring.signals import cell_sums, rates
from hcat_pipeline.monitoring.trend import hinge_start, mann_kendall

DAY = "2026-11-03"


def _rec(i: int, **kw) -> dict:
    return {"question": f"How do I open account {i}?", "answer": "With a form.", "contexts": [{"text": "Accounts open with a form."}],
            "timestamp": f"{DAY}T10:00:{i % 60:02d}Z", "latency_ms": 900, **kw}  # fmt: skip


def test_a_day_of_jsonl_is_read_and_every_unusable_record_is_named(tmp_path):
    lines = [json.dumps(_rec(0)), "{broken", json.dumps({"answer": "x", "timestamp": f"{DAY}T01:00:00Z"}),
             json.dumps(_rec(3, answer=None)), json.dumps(_rec(4, answer=None, error="timeout")),
             json.dumps(_rec(5, latency_ms="fast")), json.dumps(_rec(6, timestamp="2026-11-02T23:59:00Z")), "[1, 2]"]  # fmt: skip
    (tmp_path / f"traffic-{DAY}.jsonl").write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "traffic-2026-11-04.jsonl").write_text(json.dumps(_rec(9)), encoding="utf-8")  # another day's file: not read
    read = read_day([str(tmp_path)], DAY)
    assert read.rows["request_id"].to_list() == [f"traffic-{DAY}.jsonl:1", f"traffic-{DAY}.jsonl:5"]
    assert read.rows["error"].to_list() == [None, "timeout"] and read.rows["contexts"][0].to_list() == ["Accounts open with a form."]
    why = dict(zip(read.rejected["source"].str.split(":").list.last(), read.rejected["reason"]))
    assert set(why) == {"2", "3", "4", "6", "8"}
    assert why["2"].startswith("not JSON") and "no question" in why["3"] and "no answer" in why["4"]
    assert "latency_ms 'fast' is not a number" in why["6"] and "not an object" in why["8"]
    assert read.other_days == {"2026-11-02": 1}  # a row past midnight belongs to its own day


def test_csv_and_parquet_logs_with_a_field_map_and_epoch_times(tmp_path):
    fields = LogFields(question_path="q", answer_path="a", contexts_path="ctx", timestamp_path="t", thumbs_path="fb", retried_path="again")
    epoch = int(parse_time(f"{DAY}T12:00:00Z").timestamp())
    pl.DataFrame({"q": ["Why?"], "a": ["Because."], "ctx": ['["A passage."]'], "t": [str(epoch * 1000)], "fb": ["down"], "again": ["yes"]}).write_csv(tmp_path / "log.csv")
    pl.DataFrame({"q": ["How?"], "a": ["So."], "ctx": [["P."]], "t": [epoch], "fb": ["up"], "again": [False]}).write_parquet(tmp_path / "log.parquet")
    read = read_day([str(tmp_path / "log.*")], DAY, fields)
    assert read.rejected.is_empty() and sorted(read.rows["question"].to_list()) == ["How?", "Why?"]
    by = {r["question"]: r for r in read.rows.to_dicts()}
    assert by["Why?"]["thumbs"] == -1 and by["Why?"]["retried"] is True and by["Why?"]["contexts"] == ["A passage."]
    assert by["How?"]["thumbs"] == 1 and by["How?"]["day"] == DAY


def test_an_unreadable_file_is_an_error_naming_it(tmp_path):
    (tmp_path / f"x-{DAY}.parquet").write_bytes(b"not parquet")
    with pytest.raises(LogFileError, match=f"x-{DAY}.parquet"):
        read_day([str(tmp_path)], DAY)


def _day(n: int, rng, negative_share=0.05) -> pl.DataFrame:
    return pl.DataFrame({"question": [f"q{i}" for i in range(n)], "thumbs": [(-1 if rng.random() < negative_share else None) for _ in range(n)],
                         "rating": [None] * n, "correction": [None] * n, "retried": [None] * n, "abandoned": [None] * n},
                        schema_overrides={"thumbs": pl.Int8, "rating": pl.Float64, "correction": pl.String, "retried": pl.Boolean, "abandoned": pl.Boolean})  # fmt: skip


def test_the_weighted_sample_estimates_the_whole_days_rate_and_is_deterministic():
    rng = np.random.default_rng(1)
    day = _day(20_000, rng)
    strata = rng.choice(5, size=day.height, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    fails = (rng.random(day.height) < np.array([0.02, 0.05, 0.1, 0.2, 0.4])[strata]) | (day["thumbs"] == -1).fill_null(False).to_numpy()
    day = day.with_columns(pl.Series("stratum", strata, dtype=pl.Int32), pl.Series("fail_x", fails.astype(np.int8)))
    config = SampleConfig(sample_size=600, screen_size=4000, min_per_stratum=30)
    screened = screen(day.drop("stratum"), config, DAY).join(day.with_row_index("row").select("row", "stratum"), on="row")
    sample = score_sample(screened, config, DAY)
    assert sample.height == 600 and sample["feedback"].eq("negative").sum() == 150  # negative feedback gets its share
    assert sample.group_by("stratum").len()["len"].min() >= 30  # and every stratum its floor
    truth = fails.mean()
    estimate = float((sample["fail_x"] * sample["weight"]).sum() / sample["weight"].sum())
    naive = float(sample["fail_x"].mean())
    assert abs(estimate - truth) < 0.02 < abs(naive - truth)  # the weights undo the oversampling
    assert abs(sample["weight"].sum() - day.height) / day.height < 0.01
    again = score_sample(screen(day.drop("stratum"), config, DAY).join(day.with_row_index("row").select("row", "stratum"), on="row"), config, DAY)
    assert again["row"].to_list() == sample["row"].to_list()


def test_nearest_stratum_by_the_votes_of_the_nearest_chunks():
    chunks = np.eye(3, dtype=np.float32)
    stratum, sim = nearest_strata(np.array([[0.9, 0.1, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32), chunks, np.array([4, 4, 7]), k=1)
    assert stratum.tolist() == [4, 7] and sim.tolist() == pytest.approx([0.9, 1.0])


def _cells(days: list[tuple[str, dict[int, tuple[int, int]]]], signal: str = "ungrounded") -> pl.DataFrame:
    """Cell sums of unweighted rows: day → {stratum: (failures, n)}."""
    frames = []
    for day, strata in days:
        rows = [{"stratum": g, "fail_" + signal: int(i < k), "weight": 1.0} for g, (k, n) in strata.items() for i in range(n)]
        frames.append(cell_sums(pl.DataFrame(rows, schema_overrides={"stratum": pl.Int32}), (signal,), "weight", day))
    return pl.concat(frames)


def _days(n: int) -> list[str]:
    return [f"2026-10-{i:02d}" for i in range(1, n + 1)]


def test_one_bad_day_of_30_answers_is_not_an_alarm_and_one_of_3000_is():
    days = _days(8)
    base = [(d, {0: (150, 3000)}) for d in days[:7]]  # 5 % for a week
    small = detect(_cells([*base, (days[7], {0: (3, 30)})]))  # 10 % of 30
    large = detect(_cells([*base, (days[7], {0: (300, 3000)})]))  # 10 % of 3,000
    assert small == []
    assert [(a["kind"], a["signal"], a["days"]) for a in large] == [("acute", "ungrounded", [days[7]])]
    assert large[0]["evidence"]["p_value"] < 1e-10 and large[0]["evidence"]["baseline_rate"] == pytest.approx(0.05, abs=0.001)


def test_a_failure_of_one_stratum_is_a_category_failure_and_not_an_acute_one():
    days = _days(8)
    rows = [(d, {g: (5, 100) for g in range(5)}) for d in days[:5]]
    rows += [(d, {**{g: (5, 100) for g in range(4)}, 3: (60, 100)}) for d in days[5:]]  # stratum 3 from the 6th day
    found = detect(_cells(rows))
    assert [(a["kind"], a["stratum"], a["start_day"], a["end_day"]) for a in found] == [("category", 3, days[5], days[7])]


def test_a_ramp_is_a_drift_with_its_start_and_not_an_acute_regression():
    days = _days(10)
    rate = [0.04, 0.04, 0.06, 0.08, 0.10, 0.12, 0.14, 0.16, 0.18, 0.20]  # from the 3rd day, +2 points a day
    found = detect(_cells([(d, {0: (round(r * 600), 600)}) for d, r in zip(days, rate)], "refused"))
    assert [(a["kind"], a["signal"], a["start_day"]) for a in found] == [("drift", "refused", days[2])]
    flat = detect(_cells([(d, {0: (24 + (i % 3) - 1, 600)}) for i, d in enumerate(days)], "refused"))
    assert flat == []


def test_a_shift_of_the_topic_mix_is_input_drift():
    days = _days(5)
    rows = [(d, {0: (0, 500), 1: (0, 500)}) for d in days[:4]] + [(days[4], {0: (0, 850), 1: (0, 150)})]
    found = detect(_cells(rows, "error"))
    assert [(a["kind"], a["evidence"]["strata_grown"]) for a in found] == [("input_drift", [0])]


def test_mann_kendall_and_the_hinge():
    assert mann_kendall(np.arange(10.0))[1] < 0.001 and mann_kendall(np.arange(10.0)[::-1])[1] > 0.99
    assert hinge_start(np.arange(8.0), np.array([1, 1, 1, 2, 3, 4, 5, 6.0])) == 3


def test_rates_carry_a_wilson_interval_and_n():
    r = rates(_cells([("2026-10-01", {0: (10, 100)})])).row(0, named=True)
    assert r["rate"] == pytest.approx(0.1) and r["n"] == 100 and r["ci_low"] < 0.1 < r["ci_high"]


def test_masking_replaces_spans_and_drops_every_other_text_column():
    found = lambda texts: [[{"type": "EMAIL_ADDRESS", "start": t.find("a@b.c"), "end": t.find("a@b.c") + 5}] if "a@b.c" in t else [] for t in texts]  # noqa: E731
    assert mask(["mail a@b.c now", None], found) == (["mail [EMAIL_ADDRESS] now", None], [1, 0])
    frame = pl.DataFrame({"question": ["mail a@b.c"], "answer": ["ok"], "correction": [None], "error": [None], "contexts": [["a@b.c said"]],
                          "answer_sentences": [["mail a@b.c"]], "groundedness_nli": [0.9], "request_id": ["r1"]},
                         schema_overrides={"correction": pl.String, "error": pl.String})  # fmt: skip
    out = mask_frame(frame, found)
    assert "answer_sentences" not in out.columns and out["groundedness_nli"][0] == 0.9
    assert out["question"][0] == "mail [EMAIL_ADDRESS]" and out["contexts"][0].to_list() == ["[EMAIL_ADDRESS] said"] and out["masked_spans"][0] == 2


def test_the_review_queue_puts_novel_failures_first():
    sample = pl.DataFrame({"request_id": ["a", "b", "c", "d"], "fail_ungrounded": [1, 1, 0, 0], "fail_refused": [0, 1, 0, 0],
                           "max_similarity": [0.2, 0.9, 0.9, 0.1], "feedback": ["other", "other", "negative", "other"]})  # fmt: skip
    q = review_queue(sample, 10, far_below=0.35)
    assert q["request_id"].to_list() == ["a", "b", "c"] and q["queue_reason"].to_list() == ["novel", "failing", "negative"]


def test_the_campaign_files_monitoring_section(tmp_path):
    from hcat_pipeline.campaign_monitoring import monitoring_run_config
    from hcat_pipeline.campaign_spec import CampaignFileError, campaign_sha256, load_campaign

    base = "name: x\nsystems: [{system_id: s, retriever: closed_book}]\n"
    path = tmp_path / "c.yaml"
    path.write_text(base + "monitoring:\n  paths: [logs/*.jsonl]\n  fields: {question_path: request.q}\n  anomalies: {alpha: 0.0001}\n")
    spec = load_campaign(path)
    fields, sample, _, anomalies = spec.monitoring.core()
    assert spec.monitoring.paths == [str(tmp_path / "logs/*.jsonl")] and fields.question_path == "request.q" and anomalies.alpha == 0.0001
    assert sample == SampleConfig() and monitoring_run_config(spec.monitoring)["ops"]["production_scores"]["config"]["monitoring"]["service"]
    path.write_text(base)
    assert campaign_sha256(load_campaign(path)) == campaign_sha256(spec)  # monitoring is not what the nights evaluate
    path.write_text(base + "monitoring:\n  paths: [x]\n  fields: {question: q}\n")
    with pytest.raises(CampaignFileError, match="question"):
        load_campaign(path)


def test_the_sensor_skips_a_campaign_without_monitoring(tmp_path):
    import dagster as dg

    from hcat_pipeline.sensors import build_production_log_sensor

    path = tmp_path / "c.yaml"
    path.write_text("name: x\nsystems: [{system_id: s, retriever: closed_book}]\n")
    tick = build_production_log_sensor(str(path)).evaluate_tick(dg.build_sensor_context())
    assert tick.run_requests == [] and "no monitoring" in tick.skip_message


def test_questions_unlike_the_golden_set_are_a_screen_signal_only_when_there_is_a_golden_set():
    from hcat_pipeline.monitoring.signals import SignalConfig, screen_signals

    rows = pl.DataFrame({"error": [None, None], "latency_ms": [100.0, 9000.0], "feedback": ["other", "negative"], "max_similarity": [0.9, 0.2]},
                        schema_overrides={"error": pl.String})  # fmt: skip
    plain = screen_signals(rows, SignalConfig(), SampleConfig())
    assert plain["fail_slow"].to_list() == [0, 1] and plain["fail_far_from_corpus"].to_list() == [0, 1] and "fail_unlike_golden" not in plain.columns
    golden = screen_signals(rows.with_columns(pl.Series("golden_similarity", [0.8, 0.1])), SignalConfig(), SampleConfig())
    assert golden["fail_unlike_golden"].to_list() == [0, 1]


def test_a_groundedness_calibrator_decides_ungrounded_where_one_is_active():
    from hcat_pipeline.monitoring.signals import SignalConfig, sample_signals

    scored = pl.DataFrame({"error": [None, None], "refused": [False, False], "contexts": [["p"], ["p"]], "groundedness_nli": [0.45, 0.9],
                           "answer_relevancy": [0.9, 0.9], "toxicity": [0.0, 0.0], "pii_leak": [0, 0]}, schema_overrides={"error": pl.String})  # fmt: skip
    raw = sample_signals(scored, SignalConfig())
    assert raw["fail_ungrounded"].to_list() == [1, 0] and raw["p_grounded"].is_null().all()
    calibrated = sample_signals(scored, SignalConfig(), {"groundedness": lambda xs: np.clip(xs + 0.2, 0, 1)})  # a labelled calibrator says 0.45 is fine
    assert calibrated["fail_ungrounded"].to_list() == [0, 0] and calibrated["p_grounded"].to_list() == pytest.approx([0.65, 1.0])


def test_monitoring_is_its_own_job_and_no_part_of_a_campaign_run():
    from hcat_pipeline.definitions import defs

    monitoring = {k.to_user_string() for k in defs.resolve_job_def("monitoring_job").asset_layer.executable_asset_keys}
    night = {k.to_user_string() for k in defs.resolve_job_def("campaign_run_job").asset_layer.executable_asset_keys}
    assert monitoring == {"production_logs", "production_rejects", "production_sample", "production_cells", "production_judge",
                          "production_anomalies", "monitoring_report"} and not monitoring & night  # fmt: skip


def test_helpfulness_is_an_opt_in_reference_free_judge_dimension():
    from hcat_pipeline.calibration.campaign import LABEL_MEANINGS
    from hcat_pipeline.campaign_monitoring import MonitorJudgeSpec
    from hcat_pipeline.judge.scoring import DIMENSIONS, JudgeConfig, judge_templates

    assert DIMENSIONS["helpfulness"].needs == ("query",) and "helpfulness" not in JudgeConfig().dimensions and "helpfulness" in LABEL_MEANINGS
    template = judge_templates(JudgeConfig(dimensions=("helpfulness",)))["helpfulness"]
    assert "act" in template.text and "{{query}}" in template.text
    assert MonitorJudgeSpec(dimensions=["helpfulness"]).dimensions == ["helpfulness"]
    with pytest.raises(ValueError, match="reference-free"):
        MonitorJudgeSpec(dimensions=["correctness"])
