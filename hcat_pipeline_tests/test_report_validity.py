"""Construct validity and uncertainty (golden-eval §3.5, §6.6): levels from known label evidence, the dominant
uncertainty source from known CI widths and paraphrase shifts."""

import polars as pl

from hcat_pipeline.reports.validity import construct_validity_section, validity_level

VALIDITY = pl.DataFrame([
    {"metric": "groundedness_nli", "labelled_set": "reference:faithdial", "heldout_n": 135, "auroc": 0.92, "auroc_ci_low": 0.84, "auroc_ci_high": 0.99},
    {"metric": "toxicity", "labelled_set": "user:2026-11", "heldout_n": 80, "auroc": 0.9, "auroc_ci_low": 0.85, "auroc_ci_high": 0.95},
    {"metric": "groundedness_similarity", "labelled_set": "user:2026-11", "heldout_n": 80, "auroc": 0.7, "auroc_ci_low": 0.6, "auroc_ci_high": 0.8},
])


def test_levels_follow_the_evidence():
    assert validity_level("toxicity", VALIDITY)[0] == "HIGH"
    level, evidence = validity_level("groundedness_nli", VALIDITY)
    assert level == "MODERATE" and "borrowed labels" in evidence and "135 held-out" in evidence  # borrowed: capped
    assert validity_level("groundedness_similarity", VALIDITY)[0] == "LOW"
    assert validity_level("answer_relevancy", VALIDITY)[0] == "UNKNOWN" and validity_level("answer_relevancy", None)[0] == "UNKNOWN"
    assert validity_level("made_up", VALIDITY) == ("UNKNOWN", "no construct definition for this metric")


def _cell(system, lo, hi, n=40):
    return {"dims": "system", "row": system, "col": None, "metric": "groundedness_nli", "n": n, "mean": (lo + hi) / 2,
            "ci_low": lo, "ci_high": hi, "claim_strength": "moderate"}


def test_the_dominant_source_is_the_larger_one_in_metric_units():
    cells = pl.DataFrame([_cell("wide", 0.4, 0.8, 12), _cell("narrow", 0.58, 0.62, 400)])
    deltas = pl.DataFrame([{"variant_kind": "colloquial", "system_id": "narrow", "metric": "groundedness_nli", "delta": -0.15,
                            "ci_low": -0.25, "ci_high": -0.05, "n_pairs": 12},
                           {"variant_kind": "distractor", "system_id": "narrow", "metric": "groundedness_nli", "delta": -0.5,
                            "ci_low": -0.6, "ci_high": -0.4, "n_pairs": 12},
                           {"variant_kind": "typo", "system_id": "wide", "metric": "groundedness_nli", "delta": 0.30,
                            "ci_low": -0.1, "ci_high": 0.7, "n_pairs": 2}])
    section, lines = construct_validity_section(cells, ["groundedness_nli"], VALIDITY, deltas)
    rows = {r[1]: r for r in section.rows}
    assert rows["wide"][7].startswith("sample size") and "more cases" in rows["wide"][7]
    assert rows["narrow"][7].startswith("prompt sensitivity") and "±0.150" in rows["narrow"][6]  # distractor is no paraphrase
    assert rows["wide"][4] == "MODERATE" and rows["wide"][8] == "MODERATE" and "not established" in rows["wide"][6]  # 2 pairs: noise
    assert lines == []
    _, lines = construct_validity_section(cells.with_columns(pl.lit("answer_relevancy").alias("metric")), ["answer_relevancy"], VALIDITY, None)
    assert lines and "UNKNOWN" in lines[0]


def test_prompt_sensitivity_reads_the_paraphrase_groups_too():
    """Issue 61: the paraphrase groups' paired change is a prompt-sensitivity source, like typo and colloquial."""
    import polars as pl

    from hcat_pipeline.reports.validity import uncertainty_sources

    deltas = pl.DataFrame({"metric": ["groundedness_nli"] * 2, "system_id": ["s", "s"], "variant_kind": ["paraphrase", "typo"],
                           "delta": [-0.21, 0.01], "ci_low": [-0.30, -0.05], "ci_high": [-0.12, 0.07], "n_pairs": [12, 3]})  # fmt: skip
    cell = {"metric": "groundedness_nli", "row": "s", "n": 40, "ci_low": 0.5, "ci_high": 0.6}
    sources, dominant = uncertainty_sources(cell, deltas, None)
    assert sources["prompt sensitivity"].startswith("±0.210 established") and "paraphrase Δ -0.210" in sources["prompt sensitivity"]
    assert dominant.startswith("prompt sensitivity")


def test_selection_bias_and_measurement_error_are_estimated_when_their_data_exist():
    """Issue 61 item 2: two of the §6.6 sources the table lacked. Selection bias: the night's per-topic means re-weighted
    by live traffic's topic shares (a system weak on the topic live traffic asks about most); measurement error: the
    raters' disagreement on doubly-labelled items of the metric's dimension."""
    from hcat_pipeline.reports.validity import live_shares, rater_disagreement

    cells = pl.DataFrame([_cell("bank-rag", 0.58, 0.62, 400),  # mean 0.6 over a golden set that is 50/50 cards / loans
                          {**_cell("bank-rag", 0.88, 0.92), "dims": "system × topic", "col": "0: cards"},
                          {**_cell("bank-rag", 0.28, 0.32), "dims": "system × topic", "col": "1: loans"}])  # fmt: skip
    prod = pl.DataFrame({"day": ["d1", "d1", "d1", "d1"], "stratum": [0, 1, 0, 1], "signal": ["error", "error", "ungrounded", "ungrounded"],
                         "n": [50, 50, 50, 50], "k": [0] * 4, "sw": [100.0, 900.0, 100.0, 900.0], "swy": [0.0] * 4, "sw2": [0.0] * 4})  # fmt: skip
    shares = live_shares(prod, {0: "cards", 1: "loans"})
    assert shares == {"0: cards": 0.1, "1: loans": 0.9}  # the weights, not the stratified sample's 50/50; keyed as the cells are
    labels = pl.DataFrame([{"case_id": f"c{i}", "system_id": "bank-rag", "dimension": "groundedness", "label": lab, "rater": r}
                           for i in range(10) for r, lab in (("ann", 0), ("ann", 1), ("bob", 1 if i < 8 else 0))])  # fmt: skip
    # ann first said 0 on every item, then relabelled it 1: her latest label counts, a relabel is no disagreement
    raters = rater_disagreement(labels)
    assert raters == {"groundedness": (0.2, 10)}
    section, _ = construct_validity_section(cells, ["groundedness_nli"], VALIDITY, None, shares, raters)
    (row,) = section.rows
    assert "re-weighted by live topics 0.360 vs 0.600 (|Δ| 0.240; topics holding 100% of live traffic)" in row[6]
    assert "raters disagree on 20% of 10 doubly-labelled items: ±0.100" in row[6]
    assert row[7].startswith("selection bias") and "strata live traffic asks about" in row[7]
    bare, _ = construct_validity_section(cells, ["groundedness_nli"], VALIDITY, None)
    assert "selection bias: not estimated: no monitoring days" in bare.rows[0][6] and "measurement error: not estimated" in bare.rows[0][6]
