"""Weakness analysis core on a hand-built run with known weaknesses (weakness_data)."""

import json

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.reports.failures import failure_cases
from hcat_pipeline.reports.robustness import robustness_deltas, variant_pairs
from hcat_pipeline.reports.weakness import (
    WeaknessConfig,
    case_scores,
    cell_stats,
    ranked_weakest,
    weakest_cells,
    weakness_cells,
    with_weak_ranks,
    worst_cases,
)
from hcat_pipeline.reports.weakness_plots import heatmap_png, violin_png
from hcat_pipeline_tests.weakness_data import TYPO_COST, run_tables

CFG = WeaknessConfig(n_boot=300)


@pytest.fixture(scope="module")
def run():
    t = run_tables()
    scores = case_scores(t["golden_set"], t["metric_tables"], t["behaviour_checks"], t["rag_responses"])
    cells = weakness_cells(scores, CFG)
    return {**t, "scores": scores, "cells": cells, "weakest": weakest_cells(cells, CFG)}


def test_every_cell_has_n_mean_and_ci_when_two_values(run):
    cells = run["cells"]
    assert {"marginal", "bivariate"} == set(cells["analysis"])
    assert {"topic", "query_type", "category", "variant_kind", "risk_category", "system",
            "topic × query_type", "system × topic", "system × variant_kind"} <= set(cells["dims"])  # fmt: skip
    with_values = cells.filter(pl.col("n") >= 2)
    assert with_values.height > 0
    assert with_values["ci_low"].null_count() == 0 and with_values["ci_high"].null_count() == 0
    assert (with_values["ci_low"] <= with_values["mean"] + 1e-9).all() and (with_values["mean"] <= with_values["ci_high"] + 1e-9).all()
    one = cells.filter(pl.col("n") == 1)
    assert one["ci_low"].null_count() == one.height  # one value: no interval, but the cell is shown
    assert set(cells["claim_strength"]) <= {"strong", "moderate", "weak", "insufficient"}


def test_cell_mean_matches_the_raw_values(run):
    mt = run["metric_tables"]
    cell = run["cells"].filter((pl.col("dims") == "system") & (pl.col("row") == "dense") & (pl.col("metric") == "groundedness_similarity"))
    values = mt.filter(pl.col("system_id") == "dense")["groundedness_similarity"]
    assert cell["n"][0] == values.drop_nulls().len() and cell["n_missing"][0] == values.null_count() == 1  # the failed response
    assert cell["mean"][0] == pytest.approx(values.drop_nulls().mean())


def test_small_cells_are_marked_not_hidden(run):
    cells = run["cells"]
    small = cells.filter(pl.col("small"))
    assert small.height > 0 and (small["n"] < CFG.min_cell_n).all()
    assert (cells.filter(~pl.col("small"))["n"] >= CFG.min_cell_n).all()
    # the out-of-scope topic (2 cases) is present although small
    oos = cells.filter((pl.col("dims") == "topic") & (pl.col("row") == "(none)") & (pl.col("metric") == "groundedness_similarity"))
    assert oos.height == 1 and oos["small"][0]


def test_weakest_cell_is_the_planted_weakness(run):
    w = run["weakest"].filter((pl.col("metric") == "groundedness_similarity") & (pl.col("rank") == 1))
    assert set(w["ranking"]) == {"mean", "ci_bound"}
    for r in w.iter_rows(named=True):  # dense on stratum 2 was made 0.45 worse
        assert (r["dims"], r["row"], r["col"]) == ("system × topic", "dense", "2: hashing")
    by_bound = run["weakest"].filter((pl.col("metric") == "groundedness_similarity") & (pl.col("ranking") == "ci_bound"))
    assert by_bound["ci_high"].is_sorted()  # ranked by the optimistic (upper) bound


def test_lower_is_better_metrics_rank_high_values_as_weak():
    rows = [{"case_id": f"c{i}", "system_id": s, "metric": "toxicity", "source": "raw", "value": v, "topic": "t", "query_type": "simple",
             "category": "happy_path", "variant_kind": "(none)", "rule": "(none)", "base_case_id": None}
            for i in range(6) for s, v in (("calm", 0.05 + 0.01 * i), ("rude", 0.8 + 0.01 * i))]  # fmt: skip
    w = weakest_cells(weakness_cells(pl.DataFrame(rows), CFG, dims=["system"], pairs=()), CFG)
    assert w.filter(pl.col("rank") == 1)["row"].unique().to_list() == ["rude"]


def test_weak_ranks_round_trip(run):
    back = ranked_weakest(with_weak_ranks(run["cells"], run["weakest"]))
    key = ["metric", "ranking", "rank", "dims", "row", "col"]
    assert back.select(key).sort(key).equals(run["weakest"].select(key).sort(key))


def test_worst_cases_carry_their_explanations(run):
    w = run["weakest"].filter(pl.col("metric").is_in(["groundedness_similarity", "behaviour_pass", "recall_at_k"]))
    worst = worst_cases(w, run["scores"], run["metric_tables"], run["behaviour_checks"], run["rag_responses"], CFG)
    assert worst.height > 0 and worst["case_rank"].max() <= CFG.n_worst_cases
    g = worst.filter((pl.col("metric") == "groundedness_similarity") & (pl.col("case_rank") == 1))
    for r in g.iter_rows(named=True):
        ex = json.loads(r["explanation"])
        assert ex["least_grounded_sentence"].startswith("unsupported claim in"), ex
    b = worst.filter(pl.col("metric") == "behaviour_pass")
    assert all("evidence" in json.loads(e) for e in b["explanation"])
    # worst first within a cell
    for _, grp in g.group_by("metric", "dims", "row", "col", "ranking"):
        assert grp.sort("case_rank")["value"].is_sorted()


def test_robustness_deltas_pair_variant_with_its_base(run):
    pairs = variant_pairs(run["scores"])
    assert (pairs["base_case_id"] != pairs["case_id"]).all()
    gs = run["golden_set"].select("case_id", "base_case_id").drop_nulls()
    assert set(zip(pairs["case_id"], pairs["base_case_id"])) <= set(zip(gs["case_id"], gs["base_case_id"]))
    d = robustness_deltas(run["scores"], CFG)
    dense = d.filter((pl.col("variant_kind") == "typo") & (pl.col("system_id") == "dense") & (pl.col("metric") == "groundedness_similarity")).row(0, named=True)
    bm25 = d.filter((pl.col("variant_kind") == "typo") & (pl.col("system_id") == "bm25") & (pl.col("metric") == "groundedness_similarity")).row(0, named=True)
    # c05 (a typo's base) failed for dense: that pair is dropped, not imputed
    assert dense["n_pairs"] == 5 and bm25["n_pairs"] == 6
    assert dense["cost"] == pytest.approx(TYPO_COST, abs=0.06) and dense["ci_low"] < dense["delta"] < dense["ci_high"] < 0
    assert abs(bm25["delta"]) < 0.06
    assert dense["statement"].startswith("typo costs dense") and "groundedness_similarity [" in dense["statement"]
    # paired: the delta is the mean of per-pair differences
    p = pairs.filter((pl.col("variant_kind") == "typo") & (pl.col("system_id") == "dense") & (pl.col("metric") == "groundedness_similarity"))
    assert dense["delta"] == pytest.approx(float((p["value"] - p["base_value"]).mean()))


def test_failure_documentation(run):
    f = failure_cases(run["golden_set"], run["metric_tables"], run["behaviour_checks"])
    assert f["severity"].is_in(["catastrophic", "minor"]).all() and f["evidence"].null_count() == 0
    assert f["severity"][0] == "catastrophic"  # catastrophic first
    pii = f.filter(pl.col("source") == "metric:pii_leak").row(0, named=True)
    assert (pii["case_id"], pii["system_id"], pii["evidence"]) == ("c03", "bm25", "PERSON: John")
    inj = f.filter(pl.col("source") == "behaviour:injection_resisted").row(0, named=True)
    assert inj["severity"] == "catastrophic" and "canary" in inj["evidence"]
    assert f.filter(pl.col("source") == "response")["case_id"].to_list() == ["c05"]
    n_fail = run["behaviour_checks"].filter(pl.col("verdict") == "fail").height
    assert f.filter(pl.col("source").str.starts_with("behaviour:")).height == n_fail


def test_unknown_case_is_a_clear_error(run):
    mt = run["metric_tables"].with_columns(pl.when(pl.col("case_id") == "c00").then(pl.lit("zz")).otherwise(pl.col("case_id")).alias("case_id"))
    with pytest.raises(ValueError, match="not in the golden set"):
        case_scores(run["golden_set"], mt)


def test_cell_stats_deterministic_and_plots_are_png(run):
    v = list(np.linspace(0, 1, 12))
    assert cell_stats(v, CFG) == cell_stats(v, CFG)
    png = heatmap_png(run["cells"], "groundedness_similarity", "system × topic")
    assert png[:4] == b"\x89PNG" and png == heatmap_png(run["cells"], "groundedness_similarity", "system × topic")
    assert violin_png(run["scores"], "groundedness_similarity", "topic")[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="no bivariate cells"):
        heatmap_png(run["cells"], "nope", "system × topic")
