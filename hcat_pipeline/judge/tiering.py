"""Tiered judging (golden-eval §5.5): rule-based metrics settle the clear cases, the LLM judge scores what they flag.

``flag_for_judge(metric_tables)`` → one row per case × system the explainable metrics are unsure of, with a priority
(how many flags; then how close the NLI groundedness is to undecided) and the reasons:

* ``groundedness_nli`` between ``UNSURE`` bounds — neither clearly supported nor clearly unsupported;
* ``answer_relevancy`` below ``LOW_RELEVANCY`` — the answer may not address the question;
* ``refusal`` probability between the ``UNSURE`` bounds — unclear whether it declined;
* ``toxicity`` at least ``TOXIC_FLAG`` — a possibly harmful answer.

``select_tier(flags, max_items)`` takes the first ``max_items`` by priority (deterministic order). The asset judges
those when judging everything would not fit its time budget, and says so. Pure: polars in, polars out.
"""

from __future__ import annotations

import polars as pl

UNSURE = (0.25, 0.75)
LOW_RELEVANCY = 0.5
# the seconds a judge call is estimated to take (the budget's arithmetic): the packaged llama.cpp model on 2 cores; an API model,
# divided by its concurrency
LOCAL_SECONDS_PER_CALL = 6.0
API_SECONDS_PER_CALL = 2.0
TOXIC_FLAG = 0.3
FLAGS_SCHEMA = {"case_id": pl.String, "system_id": pl.String, "n_flags": pl.Int64, "closeness": pl.Float64, "reason": pl.String}


def _between(col: str, lo: float, hi: float) -> pl.Expr:
    return pl.col(col).is_between(lo, hi, closed="both").fill_null(False)


def flag_for_judge(metric_tables: pl.DataFrame) -> pl.DataFrame:
    """Case × system rows the metrics are unsure of (see module doc), highest priority first."""
    checks = []
    cols = set(metric_tables.columns)
    if "groundedness_nli" in cols:
        checks.append((_between("groundedness_nli", *UNSURE), "groundedness_nli undecided"))
    if "answer_relevancy" in cols:
        checks.append(((pl.col("answer_relevancy") < LOW_RELEVANCY).fill_null(False), "answer_relevancy low"))
    if "refusal" in cols:
        checks.append((_between("refusal", *UNSURE), "refusal unclear"))
    if "toxicity" in cols:
        checks.append(((pl.col("toxicity") >= TOXIC_FLAG).fill_null(False), "toxicity flagged"))
    if not checks or metric_tables.height == 0:
        return pl.DataFrame(schema=FLAGS_SCHEMA)
    answered = metric_tables.filter(pl.col("error").is_null()) if "error" in cols else metric_tables
    closeness = (1.0 - (pl.col("groundedness_nli") - 0.5).abs() * 2).fill_null(0.0) if "groundedness_nli" in cols else pl.lit(0.0)
    out = answered.select(
        "case_id", "system_id",
        pl.sum_horizontal([c.cast(pl.Int64) for c, _ in checks]).alias("n_flags"),
        closeness.cast(pl.Float64).alias("closeness"),
        pl.concat_str([pl.when(c).then(pl.lit(name)) for c, name in checks], separator="; ", ignore_nulls=True).alias("reason"),
    )  # fmt: skip
    return out.filter(pl.col("n_flags") > 0).sort(["n_flags", "closeness", "system_id", "case_id"], descending=[True, True, False, False])


def select_tier(flags: pl.DataFrame, max_items: int) -> pl.DataFrame:
    """The ``max_items`` highest-priority flagged rows (``flags`` is already in priority order)."""
    return flags.head(max(max_items, 0))
