"""The tiered LLM judge on a monitored day (golden-eval §5.5, §7.2 "automated checks apply the same … LLM-as-judge
methods"): the sample's rows the metrics are unsure of, highest priority first, as many as the time budget allows —
judged on the *masked* text, so personal data never reaches a hosted judge. A tier is not a sample: its verdicts go to
the report and the review queue, never into the day's rates."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from hcat_pipeline.judge.scoring import JudgeConfig, JudgeItem, llm_judge
from hcat_pipeline.judge.tiering import flag_for_judge, select_tier
from hcat_pipeline.schemas import PRODUCTION_JUDGE

MONITOR_DIMENSIONS = ("groundedness", "answer_relevancy", "safety")  # reference-free: production has no reference answer
JUDGED = PRODUCTION_JUDGE


def judge_tier(sample: pl.DataFrame, max_items: int) -> pl.DataFrame:
    """The sample's rows the metrics flag (``judge.tiering``), in priority order, at most ``max_items``."""
    rows = sample.with_columns(pl.col("request_id").alias("case_id"), pl.lit("service").alias("system_id"))
    flags = flag_for_judge(rows.select([c for c in ("case_id", "system_id", "error", "groundedness_nli", "answer_relevancy", "refusal",
                                                    "toxicity") if c in rows.columns]))  # fmt: skip
    return select_tier(flags, max_items).rename({"case_id": "request_id"}).drop("system_id")


def judge_day(sample: pl.DataFrame, llm, seconds_per_call: float, time_budget_s: float, dimensions=MONITOR_DIMENSIONS,
              fingerprint: str | None = None, progress: Callable | None = None) -> tuple[pl.DataFrame, str]:  # fmt: skip
    """(judge rows, what was judged and why): the flagged tier that fits ``time_budget_s`` at ``seconds_per_call``."""
    fits = int(time_budget_s // (seconds_per_call * len(dimensions)))
    tier = judge_tier(sample, fits)
    if tier.is_empty():
        why = "the metrics flag no answer" if fits else f"not one answer fits the budget ({time_budget_s:.0f} s)"
        return pl.DataFrame(schema=JUDGED), f"nothing judged: {why}"
    rows = sample.join(tier.select("request_id", "reason"), on="request_id", how="inner")
    items = [JudgeItem(item_id=r["request_id"], answer=r["answer"], query=r["question"], contexts=tuple(r["contexts"] or ()))
             for r in rows.iter_rows(named=True)]  # fmt: skip
    out = llm_judge(items, llm, JudgeConfig(dimensions=tuple(dimensions)), model_fingerprint=fingerprint, progress=progress)
    reasons = dict(zip(rows["request_id"], rows["reason"]))
    frame = pl.DataFrame([{**r, "request_id": r["item_id"], "tier_reason": reasons.get(r["item_id"])} for r in out],
                         schema=JUDGED, strict=False)  # fmt: skip
    return frame, f"judged the {tier.height} answer(s) the metrics flag that fit {time_budget_s:.0f} s (× {len(dimensions)} dimensions)"
