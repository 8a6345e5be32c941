"""Per-topic exam accuracy and item information (exam-generation paper, App. A.5 "Granular Analysis of Results";
§6.1-6.2: the average item information per category).

``topic_table``: one row per taker (LLM × retriever × ICL) × topic stratum of the exam's questions — answered (n,
errors excluded), correct, accuracy with its Wilson 95 % interval, and the mean item information of the topic's
kept items at the taker's ability θ (exact 3PL information, ``irt.information``): where the exam measures this taker
precisely and where it hardly measures it at all. A topic whose items were all pruned has no information (null,
with ``items_kept`` 0); a taker without an ability (not in the IRT fit) has none either. Topics are the exam's
``stratum`` / ``stratum_label`` (HDBSCAN's noise and a question without a stratum included, never dropped).

``topic_information``: the mean item information curve of each topic over the ability range (``DEFAULT_GRID``),
without a taker, for the report's information plot.

No dagster import.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from hcat_pipeline.common.stats import wilson_interval
from hcat_pipeline.irt.information import DEFAULT_GRID, category_information, item_information
from hcat_pipeline.reports.weakness import topic_label

TAKER_COLUMNS = ("system_id", "llm", "retriever", "icl_examples")


def _topics(exam: pl.DataFrame) -> pl.DataFrame:
    """question_id → topic (``"<stratum>: <label>"``, "(none)" without a stratum)."""
    return exam.select("question_id", pl.struct("stratum", "stratum_label").map_elements(
        lambda s: topic_label(s["stratum"], s["stratum_label"]), return_dtype=pl.String).alias("topic"))  # fmt: skip


def _kept_items(items: pl.DataFrame, topics: pl.DataFrame) -> pl.DataFrame:
    """Kept items (id, a, b, c) with their topic."""
    kept = items.filter(pl.col("kept")) if "kept" in items.columns else items
    return kept.select("id", "a", "b", "c").join(topics.rename({"question_id": "id"}), on="id", how="inner")


def topic_table(responses: pl.DataFrame, exam: pl.DataFrame, items: pl.DataFrame, thetas: Mapping[str, float]) -> pl.DataFrame:
    """Per taker × topic: n, correct, accuracy, ci_low, ci_high, theta, items_kept, mean_information (see the module doc).
    ``responses``: exam_responses; ``items``: the IRT items (id, a, b, c, kept); ``thetas``: system_id → θ."""
    topics = _topics(exam)
    answered = responses.join(topics, on="question_id", how="left").with_columns(pl.col("topic").fill_null("(not in the exam)"))
    table = answered.group_by(*TAKER_COLUMNS, "topic").agg(
        pl.col("correct").is_not_null().sum().cast(pl.Int64).alias("n"), pl.col("correct").sum().cast(pl.Int64).fill_null(0).alias("correct"),
    ).sort("system_id", "topic")  # fmt: skip
    ci = [wilson_interval(k, n) if n else (None, None) for k, n in zip(table["correct"], table["n"], strict=True)]
    table = table.with_columns(
        pl.when(pl.col("n") > 0).then(pl.col("correct") / pl.col("n")).alias("accuracy"),
        pl.Series("ci_low", [lo for lo, _ in ci], pl.Float64), pl.Series("ci_high", [hi for _, hi in ci], pl.Float64),
        pl.col("system_id").replace_strict(dict(thetas), default=None, return_dtype=pl.Float64).alias("theta"),
    )  # fmt: skip
    kept = _kept_items(items, topics)
    by_topic = {t: g for (t,), g in kept.group_by("topic")}
    counts, info = [], []
    for topic, theta in zip(table["topic"], table["theta"], strict=True):
        g = by_topic.get(topic)
        counts.append(0 if g is None else g.height)
        if g is None or theta is None:
            info.append(None)
            continue
        info.append(float(item_information(np.array([theta]), g["a"].to_numpy(), g["b"].to_numpy(), g["c"].to_numpy()).mean()))
    return table.with_columns(pl.Series("items_kept", counts, pl.Int64), pl.Series("mean_information", info, pl.Float64))


def topic_information(exam: pl.DataFrame, items: pl.DataFrame, grid=DEFAULT_GRID) -> dict[str, dict]:
    """topic → {"n": kept items, "mean": the mean item information curve over ``grid``, "total"} (+ "All"), as
    ``irt.information.category_information``."""
    kept = _kept_items(items, _topics(exam))
    if not kept.height:
        return {}
    return category_information(grid, kept["a"], kept["b"], kept["c"], kept["topic"].to_list())
