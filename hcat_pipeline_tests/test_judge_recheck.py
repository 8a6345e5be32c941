"""Issue 69 item 3 known answers: the judge is re-checked against people on a schedule — due after 20 new labels or a
week, not before; a validation older than 30 days stops validating (the judge decides no gate until re-run) and a
validated one says κ, n and when; judge_recheck_sensor asks judge_validation_job exactly when due; a flagged judge
bias raises the inclusion probabilities of the answers it touches, within the labelling design. Pure or a sensor tick:
milliseconds."""

import datetime as dt

import dagster as dg
import numpy as np
import polars as pl

from hcat_pipeline.calibration.campaign import bias_cohort_flags, design_queue, judge_review_flags
from hcat_pipeline.calibration.design import DesignConfig
from hcat_pipeline.judge.recheck import recheck_due, stale_reason, validation_note

NOW = dt.datetime(2026, 12, 7, 12, tzinfo=dt.UTC)


def test_a_recheck_is_due_after_enough_new_labels_or_a_week_and_an_old_validation_stops_validating():
    assert recheck_due(None, 0, 0, NOW) == "the judge was never validated"
    assert recheck_due("2026-12-06T12:00:00+00:00", 100, 110, NOW) is None  # 10 new labels, a day old
    assert "25 new human label(s)" in recheck_due("2026-12-06T12:00:00+00:00", 100, 125, NOW)
    assert "last validated 8 day(s) ago" in recheck_due("2026-11-29T12:00:00+00:00", 100, 100, NOW)
    assert stale_reason("2026-12-01T00:00:00+00:00", NOW) is None
    assert stale_reason("2026-10-01T00:00:00+00:00", NOW).startswith("stale: κ last measured on 2026-10-01")
    note = validation_note({"kappa": 0.61, "kappa_ci_low": 0.45, "kappa_ci_high": 0.74, "n": 120, "validated_at": "2026-12-01T03:00:00+00:00"})
    assert note == "validated: κ 0.61 [0.45, 0.74] on n=120 labels, measured 2026-12-01"


def test_the_sensor_asks_for_a_validation_exactly_when_due(tmp_path):
    from hcat_pipeline.sensors import build_judge_recheck_sensor

    campaign = tmp_path / "campaign.yaml"
    campaign.write_text("name: t\nsystems: [{system_id: a, retriever: closed_book}]\njudge: {enabled: 'on'}\n")
    sensor = build_judge_recheck_sensor(str(tmp_path), str(campaign))
    pl.DataFrame({"case_id": [f"c{i}" for i in range(30)]}).write_parquet(tmp_path / "human_labels.parquet")
    recent = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    pl.DataFrame({"validated_at": [recent], "n_design_labels": [25]}).write_parquet(tmp_path / "judge_validation.parquet")
    with dg.instance_for_test() as instance:
        assert isinstance(sensor(dg.build_sensor_context(instance=instance)), dg.SkipReason)  # 5 new labels, today
        pl.DataFrame({"validated_at": [recent], "n_design_labels": [5]}).write_parquet(tmp_path / "judge_validation.parquet")
        run = sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(run, dg.RunRequest) and "25 new human label(s)" in run.tags["why"]
        campaign.write_text("name: t\nsystems: [{system_id: a, retriever: closed_book}]\njudge: {enabled: 'off'}\n")
        assert "judge is off" in sensor(dg.build_sensor_context(instance=instance)).skip_message


def test_a_flagged_self_preference_raises_the_inclusion_probability_of_the_judges_own_family_within_the_design():
    n = 40
    judge = pl.DataFrame({"case_id": [f"c{i}" for i in range(n)] * 2, "system_id": ["qwen_rag"] * n + ["other_rag"] * n,
                          "dimension": "groundedness", "score": 4, "passed": True, "confidence": "high",
                          "same_family": [True] * n + [False] * n, "judge_config_hash": "h1"})  # fmt: skip
    validation = pl.DataFrame({"judge_config_hash": ["h1", "h2"], "dimension": ["groundedness"] * 2, "self_preference_flagged": [True, False],
                               "length_bias_flagged": [False, True]})  # fmt: skip
    bias = bias_cohort_flags(judge, validation)
    assert set(bias["system_id"]) == {"qwen_rag"} and bias.height == n and "self-preference" in bias["judge_reason"][0]
    calibrated = judge.select("case_id", "system_id", "dimension").with_columns(
        pl.lit("pass").alias("machine_verdict"), pl.lit(0.7).alias("calibrated_probability"), pl.lit("{1}").alias("prediction_set"),
        pl.lit(0.8).alias("raw_score"))  # fmt: skip
    flags = judge_review_flags(judge, calibrated, None, bias)
    drawn = design_queue(calibrated.join(flags, on=["case_id", "system_id", "dimension"], how="left"), DesignConfig(budget=20.0), salt="v|n")
    pi = dict(drawn.group_by("system_id").agg(pl.col("inclusion_probability").mean()).iter_rows())
    assert pi["qwen_rag"] > pi["other_rag"] > 0  # raised for the cohort, never zero for the rest: still a known design
    assert np.isclose(drawn["inclusion_probability"].sum(), 20.0, atol=0.5)  # the same budget, shared differently
