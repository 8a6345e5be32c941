"""Human labels move the verdicts (issue 46 item 3): a calibrator fitted on the campaign's own labels sets a raw-score
gate's threshold, the night's human-pass rate comes from prediction-powered inference, and every row says what its
verdict rests on. Known answers: labels that disagree with the hand-set threshold move it; PPI covers the true rate at
the nominal level on simulated nights and is narrower than the labels alone."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.calibration.fitting import fit_calibration
from hcat_pipeline.calibration.ppi import crossing_score, ppi_mean
from hcat_pipeline.gates.apply import evaluate_gates
from hcat_pipeline.gates.calibrated import human_calibrations
from hcat_pipeline.gates.spec import GateSpec
from hcat_pipeline_tests.calibration_data import (
    calibrated_scores_of,
    night_design,
    rater_labels,
    strict_humans,
    two_systems_night,
)

GROUNDED = GateSpec(name="groundedness", kind="hard", table="metric_tables", metric="groundedness_nli", statistic="mean",
                    direction=">=", threshold=0.5)  # fmt: skip


def test_the_calibrator_sets_the_threshold_where_humans_put_it():
    res = strict_humans()
    t = crossing_score(lambda xs: res.predict(xs)[0][:, 1], 0.5)
    assert t == pytest.approx(0.8, abs=0.05)


def test_labels_that_disagree_with_the_hand_set_threshold_move_the_gate():
    metrics = two_systems_night()
    declared = {r["system_id"]: r for r in evaluate_gates([GROUNDED], {"metric_tables": metrics}).to_dicts()}
    assert declared["middling"]["verdict"] == "PASS" and declared["middling"]["evidence"] == "uncalibrated"  # the raw 0.5 passes it

    res = strict_humans()
    calibrated = calibrated_scores_of(res, metrics)
    design = night_design(calibrated)
    cals = human_calibrations([res], calibrated, rater_labels(metrics, design=design), design=design)
    out = {r["system_id"]: r for r in evaluate_gates([GROUNDED], {"metric_tables": metrics}, calibrations=cals).to_dicts()}
    mid, solid = out["middling"], out["solid"]
    assert mid["evidence"] == solid["evidence"] == "human_calibrated"
    assert mid["threshold"] == pytest.approx(0.8, abs=0.05) and mid["threshold_declared"] == 0.5  # moved, both stored
    assert "P(human pass) = 0.5 at raw" in mid["threshold_source"]
    assert mid["verdict"] == "FAIL" and solid["verdict"] == "PASS"  # the verdict moved with it
    # the headline: the share of answers a human would pass, by active inference over the night's design
    assert mid["human_pass_rate"] == pytest.approx(0.0, abs=0.05) and solid["human_pass_rate"] == pytest.approx(1.0, abs=0.05)
    queued = design.filter(pl.col("queued") & (pl.col("system_id") == "middling")).height
    assert mid["n_labelled"] == queued > 5 and mid["human_pass_ci_low"] <= mid["human_pass_rate"] <= mid["human_pass_ci_high"]
    assert mid["n_labels_excluded"] == 0 and mid["label_design"].startswith("active inference")


def test_labels_from_outside_the_design_train_the_calibrator_and_enter_no_rate():
    metrics = two_systems_night()
    res = strict_humans()
    calibrated = calibrated_scores_of(res, metrics)
    design = night_design(calibrated)
    browsed = rater_labels(metrics, every=4)  # every 4th answer: chosen by a person, not drawn by the design
    queued = set(design.filter(pl.col("queued")).select("case_id", "system_id").iter_rows())
    outside = sum((r["case_id"], r["system_id"]) not in queued for r in browsed.filter(pl.col("system_id") == "middling").to_dicts())
    cals = human_calibrations([res], calibrated, browsed, design=design)
    mid = evaluate_gates([GROUNDED], {"metric_tables": metrics}, calibrations=cals).filter(pl.col("system_id") == "middling").row(0, named=True)
    assert outside > 0 and mid["n_labels_excluded"] >= outside and "outside the design" in mid["labels_note"]
    assert (mid["n_labelled"] or 0) < browsed.filter(pl.col("system_id") == "middling").height
    no_design = human_calibrations([res], calibrated, browsed)
    row = evaluate_gates([GROUNDED], {"metric_tables": metrics}, calibrations=no_design).filter(pl.col("system_id") == "middling").row(0, named=True)
    assert row["human_pass_rate"] is None and "no labelling design drawn" in row["labels_note"]


def test_a_required_human_pass_rate_decides_the_gate_and_says_how_many_labels_are_missing():
    metrics = two_systems_night()
    res = strict_humans()
    calibrated = calibrated_scores_of(res, metrics)
    design = night_design(calibrated, budget=60)
    cals = human_calibrations([res], calibrated, rater_labels(metrics, design=design), design=design)
    gate = GROUNDED.model_copy(update={"human_pass_at_least": 0.5})
    out = {r["system_id"]: r for r in evaluate_gates([gate], {"metric_tables": metrics}, calibrations=cals).to_dicts()}
    assert out["middling"]["human_pass_decision"] == "below" and out["middling"]["verdict"] == "FAIL"
    assert out["middling"]["certificate"].startswith("human-pass rate") and "< 0.5 (anytime-valid" in out["middling"]["certificate"]
    assert out["solid"]["human_pass_decision"] == "above" and out["solid"]["verdict"] == "PASS"
    assert out["solid"]["labels_to_decide"] == 0
    first = design.filter(pl.col("queued")).sort("design_order").head(3)  # the reviewer labelled the queue's first three
    few = rater_labels(metrics, design=first)  # no decision on three labels, and the row says what is missing
    cals = human_calibrations([res], calibrated, few, design=design)
    row = evaluate_gates([gate], {"metric_tables": metrics}, calibrations=cals).filter(pl.col("system_id") == "solid").row(0, named=True)
    assert row["human_pass_decision"] == "undecided" and row["verdict"] == "PASS" and not row["blocking"]  # asked for, not required
    assert row["labels_to_decide"] >= 7 and f"about {row['labels_to_decide']} more label(s) would decide it" in row["reason"]


def test_borrowed_labels_say_so_and_leave_the_declared_threshold():
    metrics = two_systems_night()
    res = strict_humans(label_source="reference:faithdial")
    calibrated = calibrated_scores_of(res, metrics)
    cals = human_calibrations([res], calibrated, rater_labels(metrics), design=night_design(calibrated))
    row = evaluate_gates([GROUNDED], {"metric_tables": metrics}, calibrations=cals).filter(pl.col("system_id") == "middling").row(0, named=True)
    assert row["evidence"] == "borrowed_labels" and row["threshold"] == 0.5 and "borrowed" in row["threshold_source"]
    assert row["human_pass_rate"] is None and row["verdict"] == "PASS"


def test_too_few_labels_leave_the_gate_uncalibrated():
    rng = np.random.default_rng(3)
    s = rng.uniform(0, 1, 12)
    res = fit_calibration([f"i{i}" for i in range(12)], s, (s > 0.8).astype(int), dimension="groundedness", label_source="campaign",
                          metric="groundedness_nli")  # fmt: skip
    assert res.status == "insufficient"
    metrics = two_systems_night()
    assert human_calibrations([res], None, None) == {}
    assert evaluate_gates([GROUNDED], {"metric_tables": metrics}, calibrations={})["evidence"].unique().to_list() == ["uncalibrated"]


def _simulated_night(rng, n_all: int = 2000, n_labelled: int = 150):
    """A night of answers with raw scores; humans pass an answer with probability g(score); the machine's calibrated
    probability is g slightly off (biased upwards); humans label a random sample."""
    s = rng.beta(2, 2, n_all)
    g = 1 / (1 + np.exp(-8 * (s - 0.55)))
    y = (rng.random(n_all) < g).astype(float)
    f = np.clip(g + 0.08, 0, 1)  # a miscalibrated machine: PPI must remove its bias
    lab = rng.choice(n_all, n_labelled, replace=False)
    rest = np.setdiff1d(np.arange(n_all), lab)
    return y[lab], f[lab], f[rest]


def test_ppi_covers_the_true_rate_at_the_nominal_level_and_is_narrower_than_the_labels_alone():
    big = np.random.default_rng(12345)
    s = big.beta(2, 2, 2_000_000)
    truth = float(np.mean(1 / (1 + np.exp(-8 * (s - 0.55)))))  # the population human-pass rate
    covered, covered_only, widths, widths_only, seeds = 0, 0, [], [], 600
    for seed in range(seeds):
        est = ppi_mean(*_simulated_night(np.random.default_rng(seed)))
        covered += est.ci_low <= truth <= est.ci_high
        covered_only += est.labels_only_ci_low <= truth <= est.labels_only_ci_high
        widths.append(est.width)
        widths_only.append(est.labels_only_ci_high - est.labels_only_ci_low)
    assert covered / seeds >= 0.93, covered / seeds  # nominal 95 %, Monte-Carlo error ±0.9 %
    assert np.mean(widths) < 0.9 * np.mean(widths_only), (np.mean(widths), np.mean(widths_only))  # measured: 0.127 vs 0.159
    # the machine alone is biased: its mean misses the truth by the planted 0.08, which PPI removes
    y, fl, fu = _simulated_night(np.random.default_rng(0))
    assert abs(float(np.mean(fu)) - truth) > 0.05 and abs(ppi_mean(y, fl, fu).estimate - truth) < 0.05


def test_ppi_refuses_what_it_cannot_estimate():
    with pytest.raises(ValueError, match="labelled"):
        ppi_mean([1.0], [0.9], [0.5, 0.6])
    with pytest.raises(ValueError, match="finite"):
        ppi_mean([1.0, 0.0], [0.9, np.nan], [0.5])


def test_a_label_given_before_the_design_was_drawn_speaks_of_an_earlier_answer_and_waits():
    from datetime import UTC, datetime

    metrics = two_systems_night()
    res = strict_humans()
    calibrated = calibrated_scores_of(res, metrics)
    design = night_design(calibrated).with_columns(pl.lit("2026-11-29T00:00:00+00:00").alias("drawn_at"))
    old = rater_labels(metrics, design=design).with_columns(pl.lit(datetime(2026, 11, 28, tzinfo=UTC)).cast(pl.Datetime("us", "UTC")).alias("labelled_at"))
    cals = human_calibrations([res], calibrated, old, design=design)
    row = evaluate_gates([GROUNDED], {"metric_tables": metrics}, calibrations=cals).filter(pl.col("system_id") == "solid").row(0, named=True)
    assert row["human_pass_rate"] is None and "given before tonight's design was drawn" in row["labels_note"]
    new = old.with_columns(pl.lit(datetime(2026, 11, 29, 9, tzinfo=UTC)).cast(pl.Datetime("us", "UTC")).alias("labelled_at"))
    cals = human_calibrations([res], calibrated, new, design=design)
    row = evaluate_gates([GROUNDED], {"metric_tables": metrics}, calibrations=cals).filter(pl.col("system_id") == "solid").row(0, named=True)
    assert row["human_pass_rate"] == pytest.approx(1.0, abs=0.05) and row["n_labels_excluded"] == 0
