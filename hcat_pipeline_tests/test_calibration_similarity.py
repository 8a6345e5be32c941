"""Concept chapter §14.2: semantic similarity to the reference gets its verdict from labelled known-good and known-bad
answers (the ``correctness`` dimension), the way groundedness does — not from the chapter's example 0.85 / 0.75."""

from __future__ import annotations

import numpy as np
import polars as pl

from hcat_pipeline.calibration.campaign import DIMENSION_METRICS, LABEL_MEANINGS, long_scores
from hcat_pipeline.calibration.fitting import fit_calibration


def test_correctness_labels_fit_a_threshold_on_semantic_similarity():
    assert DIMENSION_METRICS["correctness"] == "semantic_similarity" and "reference answer" in LABEL_MEANINGS["correctness"]
    rng = np.random.default_rng(0)
    good, bad = rng.uniform(0.72, 0.98, 150), rng.uniform(0.35, 0.68, 150)  # known-good answers and known-bad ones
    scores = np.concatenate([good, bad])
    labels = [1] * 150 + [0] * 150
    res = fit_calibration([f"c{i}" for i in range(300)], scores.tolist(), labels, dimension="correctness", label_source="campaign",
                          metric="semantic_similarity")  # fmt: skip
    assert res.status == "fitted", res.message
    grid = np.linspace(0.3, 1.0, 141)
    probs, _, verdicts = res.predict(grid)
    threshold = float(grid[np.argmax(probs[:, 1] >= 0.5)])
    assert 0.62 <= threshold <= 0.78, threshold  # between the two populations, where the labels put it
    _, _, ends = res.predict([0.95, 0.4])
    assert ends == ["pass", "fail"]


def test_a_nights_semantic_similarity_is_read_as_the_correctness_dimension():
    mt = pl.DataFrame({"case_id": ["a", "b"], "system_id": ["s", "s"], "semantic_similarity": [0.9, None], "error": [None, None]},
                      schema_overrides={"error": pl.String})  # fmt: skip
    long = long_scores(mt, pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "rule": pl.String, "score": pl.Float64}),
                       {"correctness": "semantic_similarity"})  # fmt: skip
    row = long.filter(pl.col("dimension") == "correctness")
    assert row.height >= 1 and row.filter(pl.col("case_id") == "a")["raw_score"].to_list() == [0.9]
