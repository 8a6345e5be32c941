"""Stated-confidence calibration of a system (golden-eval §3.2.3, CALIBRATION): does the confidence it states match
how often it is right?

``stated_confidence_cases(metric_tables, behaviour_checks)`` joins each answer's ``stated_confidence``
(``metrics.confidence``) with its correctness verdict (behaviour rules ``answer_correct`` and ``robust_to_variant``:
pass = 1, fail = 0; an
``unsure`` verdict or an answer stating nothing is left out and counted): one row per case × system with the squared
error (conf − correct)², the per-case Brier term — the ``stated_confidence`` table a gate can read.

``stated_confidence_summary(cases)`` per system: n, accuracy, mean stated confidence, over-confidence (their
difference), the Brier score (mean squared error, 0 best, scikit-learn's ``brier_score_loss``) and the ECE
(``calibration.metrics.expected_calibration_error``, equal-width bins), each with a percentile bootstrap CI over cases,
and the reliability-diagram points. A system that states no confidence has no row: its calibration is unknown, not
perfect. No Dagster import.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from hcat_pipeline.calibration.metrics import expected_calibration_error, reliability_curve
from hcat_pipeline.common.stats import DEFAULT_CONFIDENCE, DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_ci

STATED_CONFIDENCE = {"case_id": pl.String, "system_id": pl.String, "stated_confidence": pl.Float64, "confidence_statement": pl.String,
                     "correct": pl.Float64, "squared_error": pl.Float64}  # fmt: skip
SUMMARY = {
    "system_id": pl.String, "n": pl.Int64, "n_answers_judged": pl.Int64, "n_unsure": pl.Int64, "accuracy": pl.Float64,
    "mean_confidence": pl.Float64, "overconfidence": pl.Float64, "brier": pl.Float64, "brier_ci_low": pl.Float64,
    "brier_ci_high": pl.Float64, "ece": pl.Float64, "ece_ci_low": pl.Float64, "ece_ci_high": pl.Float64, "n_bins": pl.Int64,
    "reliability": pl.String,
}  # fmt: skip
#: behaviour rules whose pass means "answered correctly" (robust_to_variant: correct and equivalent to the base answer)
CORRECTNESS_RULES = ("answer_correct", "robust_to_variant")


def stated_confidence_cases(metric_tables: pl.DataFrame, behaviour_checks: pl.DataFrame) -> pl.DataFrame:
    """Case × system rows with a stated confidence and a decided correctness verdict (``STATED_CONFIDENCE``)."""
    if "stated_confidence" not in metric_tables.columns:
        return pl.DataFrame(schema=STATED_CONFIDENCE)
    stated = metric_tables.select("case_id", "system_id", pl.col("stated_confidence").cast(pl.Float64),
                                  (pl.col("confidence_statement") if "confidence_statement" in metric_tables.columns
                                   else pl.lit(None, pl.String)).alias("confidence_statement")).drop_nulls("stated_confidence")  # fmt: skip
    verdicts = behaviour_checks.filter(pl.col("rule").is_in(CORRECTNESS_RULES) & pl.col("verdict").is_in(["pass", "fail"]))
    correct = verdicts.select("case_id", "system_id", (pl.col("verdict") == "pass").cast(pl.Float64).alias("correct"))
    out = stated.join(correct, on=["case_id", "system_id"], how="inner")
    out = out.with_columns(((pl.col("stated_confidence") - pl.col("correct")) ** 2).alias("squared_error"))
    return out.select(list(STATED_CONFIDENCE)).sort("system_id", "case_id")


def _ece_ci(conf: np.ndarray, hit: np.ndarray, n_bins: int, confidence: float, n_boot: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(conf), size=(n_boot, len(conf)))
    draws = np.array([expected_calibration_error(conf[i], hit[i].astype(int), n_bins) for i in idx])
    a = (1 - confidence) / 2
    return float(np.quantile(draws, a)), float(np.quantile(draws, 1 - a))


def stated_confidence_summary(cases: pl.DataFrame, behaviour_checks: pl.DataFrame | None = None, *, n_bins: int = 10,
                              confidence: float = DEFAULT_CONFIDENCE, n_boot: int = DEFAULT_N_BOOT,
                              seed: int = DEFAULT_SEED) -> pl.DataFrame:  # fmt: skip
    """Per system that states a confidence: ``SUMMARY`` (module doc); ``behaviour_checks`` adds how many answers had a
    correctness verdict and how many were unsure (the denominators a reader needs)."""
    rows = []
    for (sid,), part in cases.group_by(["system_id"], maintain_order=True):
        conf, hit = part["stated_confidence"].to_numpy(), part["correct"].to_numpy()
        brier = bootstrap_ci(part["squared_error"].to_numpy(), "mean", confidence, n_boot, seed)
        lo, hi = _ece_ci(conf, hit, n_bins, confidence, n_boot, seed) if len(conf) > 1 else (None, None)
        judged = unsure = None
        if behaviour_checks is not None:
            mine = behaviour_checks.filter((pl.col("system_id") == sid) & pl.col("rule").is_in(CORRECTNESS_RULES))
            judged, unsure = mine.height, int((mine["verdict"] == "unsure").sum())
        rows.append({"system_id": sid, "n": len(conf), "n_answers_judged": judged, "n_unsure": unsure, "accuracy": float(hit.mean()),
                     "mean_confidence": float(conf.mean()), "overconfidence": float(conf.mean() - hit.mean()),
                     "brier": brier.estimate, "brier_ci_low": brier.ci_low, "brier_ci_high": brier.ci_high,
                     "ece": expected_calibration_error(conf, hit.astype(int), n_bins), "ece_ci_low": lo, "ece_ci_high": hi,
                     "n_bins": n_bins, "reliability": json.dumps(reliability_curve(conf, hit.astype(int), n_bins))})  # fmt: skip
    return pl.DataFrame(rows, schema=SUMMARY).sort("system_id") if rows else pl.DataFrame(schema=SUMMARY)
