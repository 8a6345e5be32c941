"""The labelling design (calibration.design) and the estimator valid under it (calibration.active): known answers."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.calibration.active import MIN_LABELS_TO_DECIDE, active_ppi, cross_fit, cs_radius, folds_of, processed_prefix
from hcat_pipeline.calibration.campaign import design_queue
from hcat_pipeline.calibration.design import DesignConfig, design_uniforms, draw, inclusion_probabilities
from hcat_pipeline.calibration.known_answers import coverage


def test_inclusion_probabilities_sum_to_the_budget_favour_the_unsure_and_are_never_certain():
    p = np.array([0.02, 0.5, 0.5, 0.98, None, 0.3] * 50, dtype=object)
    unsure = np.array([False, False, True, False, False, False] * 50)
    pi = inclusion_probabilities(p, unsure, budget=40)
    assert pi.sum() == pytest.approx(40, rel=1e-6)
    assert (pi > 0).all() and (pi < 1).all()
    assert pi[2] > pi[1] > pi[0]  # a flag raises π; a sure machine lowers it, never to zero
    assert pi[0] >= 0.5 * 40 / 300  # the uniform half of the design is a floor
    big = inclusion_probabilities(np.full(10, 0.5), np.ones(10, bool), budget=50)
    assert (big <= 0.95).all() and big.sum() == pytest.approx(9.5)  # a budget above the population caps below 1


def test_the_draw_is_seeded_per_key_whatever_the_order_of_the_keys():
    keys = [f"c{i}|s|groundedness" for i in range(200)]
    pi = np.full(200, 0.2)
    order, queued = draw(keys, pi, seed=7)
    order_r, queued_r = draw(keys[::-1], pi, seed=7)
    assert np.array_equal(order, order_r[::-1]) and np.array_equal(queued, queued_r[::-1])
    assert 20 < queued.sum() < 60  # Poisson sampling at π = 0.2
    other, _ = draw(keys, pi, seed=8)
    assert not np.array_equal(order, other)


def test_a_label_after_an_unanswered_queued_item_waits_for_it():
    order = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    queued = np.array([True, False, True, False, True])
    labelled = np.array([True, False, False, False, True])  # the third is queued and not labelled yet
    processed, counted = processed_prefix(order, queued, labelled)
    assert processed.tolist() == [True, True, False, False, False]
    assert counted.tolist() == [True, False, False, False, False]


def test_a_perfect_machine_gives_the_exact_rate_and_labels_alone_are_horvitz_thompson():
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.7).astype(float)
    order, queued = draw([str(i) for i in range(300)], np.full(300, 0.3), seed=1)
    seen = np.where(queued, y, np.nan)
    exact = active_ppi(y, np.full(300, 0.3), order, queued, seen)
    guard = np.sqrt(2 * (1 / 0.3) ** 2 * 0.25 / (300 - 1 + 2 / 0.3))  # only the two pseudo-labels' spread is left
    assert exact.estimate == pytest.approx(y.mean()) and exact.sd == pytest.approx(guard)
    ht = active_ppi(np.zeros(300), np.full(300, 0.3), order, queued, seen, power_tuning=False)
    assert ht.estimate == pytest.approx(np.nansum(seen) / 0.3 / 300)
    with pytest.raises(ValueError, match="inclusion probabilities"):
        active_ppi(y, np.zeros(300), order, queued, seen)


def test_the_confidence_sequence_is_wider_than_the_fixed_time_interval_and_shrinks():
    assert cs_radius(0.5, 100, 0.95, 100) > 1.96 * 0.5 / 10
    assert cs_radius(0.5, 400, 0.95, 100) < cs_radius(0.5, 100, 0.95, 100)


def test_no_decision_on_a_handful_of_labels_and_more_labels_asked_when_undecided():
    rng = np.random.default_rng(3)
    n = 400
    y = (rng.random(n) < 0.93).astype(float)
    pi = np.full(n, 0.5)
    order, queued = draw([str(i) for i in range(n)], pi, seed=2)
    cut = np.sort(order[queued])[5]  # five labels given, the sixth queued answer not yet
    seen = np.where(queued & (order < cut), y, np.nan)
    est = active_ppi(np.full(n, 0.9), pi, order, queued, seen)
    assert est.n_labelled < MIN_LABELS_TO_DECIDE and est.decision(0.5) == "undecided"
    assert est.labels_to_decide(0.5) >= MIN_LABELS_TO_DECIDE - est.n_labelled


def test_cross_fitting_never_lets_an_answer_see_its_own_label():
    s = np.linspace(0, 1, 40)
    y = (s > 0.5).astype(float)
    folds = folds_of(design_uniforms([str(i) for i in range(40)], 0, "fold"))
    counted = np.ones(40, bool)
    f = cross_fit(s, folds, counted, y, "isotonic")
    y_flipped = y.copy()
    y_flipped[0] = 1 - y_flipped[0]
    g = cross_fit(s, folds, counted, y_flipped, "isotonic")
    assert f[0] == g[0]  # answer 0's prediction does not move when only its own label changes


def test_design_queue_draws_per_dimension_with_reasons_and_priorities():
    cand = pl.DataFrame({"case_id": [f"c{i}" for i in range(60)] * 2, "system_id": ["s"] * 120,
                         "dimension": ["groundedness"] * 60 + ["toxicity"] * 60,
                         "calibrated_probability": [0.5, 0.9, None] * 40, "prediction_set": ["{0,1}", "{1}", None] * 40,
                         "judge_reason": [None] * 119 + ["judge unsure"], "raw_score": [0.4] * 120})  # fmt: skip
    drawn = design_queue(cand, DesignConfig(budget=10, seed=3))
    again = design_queue(cand, DesignConfig(budget=10, seed=3))
    assert drawn.equals(again)
    per_dim = drawn.group_by("dimension").agg(pl.col("inclusion_probability").sum())
    assert per_dim["inclusion_probability"].to_list() == pytest.approx([10, 10])
    queued = drawn.filter(pl.col("queued"))
    assert queued["priority"].to_list() == list(range(1, queued.height + 1))
    assert drawn.filter(pl.col("queued").not_())["priority"].null_count() == drawn.height - queued.height
    assert any("raised: judge unsure" in r for r in drawn["reason"].to_list())


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_the_design_covers_the_true_rate_and_the_old_queue_order_did_not(method):
    """Known answers (calibration.known_answers, 200 simulated nights each): the design with the cross-fitted, weighted
    estimator covers the night's true human-pass rate; labels browsed from the failures, offered to it, are left out
    and it still covers; the old queue (closest to 0.5 first, fitted and rectified on the same labels) does not."""
    for regime in ("design", "design_flagged"):
        assert coverage(regime, method, 200, seed=11)["coverage"] >= 0.91
    old = coverage("queue_order", method, 200, seed=11)
    assert old["coverage"] < 0.85 and old["bias"] > 0.03


def test_answers_a_frozen_design_lacks_join_it_at_their_dimensions_mean_probability():
    from hcat_pipeline.calibration.campaign import extend_design

    cand = pl.DataFrame({"case_id": [f"c{i}" for i in range(40)], "system_id": ["s"] * 40, "dimension": ["groundedness"] * 40,
                         "calibrated_probability": [0.5, 0.9] * 20, "prediction_set": ["{0,1}", "{1}"] * 20, "raw_score": [0.4] * 40})  # fmt: skip
    frozen = design_queue(cand.head(30), DesignConfig(budget=10, seed=3), "gs-1|2026-11-28", "2026-11-28T01:00:00+00:00")
    added = extend_design(frozen, cand.tail(10), DesignConfig(budget=10, seed=3), "gs-1|2026-11-28", "2026-11-28T09:00:00+00:00")
    assert added.height == 10 and added["inclusion_probability"].to_list() == pytest.approx([10 / 30] * 10)
    assert set(added["drawn_at"]) == {"2026-11-28T09:00:00+00:00"} and added["design_order"].is_between(0, 1).all()
    other_night = design_queue(cand.head(30), DesignConfig(budget=10, seed=3), "gs-1|2026-11-29", "")
    assert not np.array_equal(frozen.sort("case_id")["design_order"].to_numpy(), other_night.sort("case_id")["design_order"].to_numpy())
