"""What a monitored row can fail (golden-eval §7.2): the nights' reference-free metrics and rules as per-row failure
signals, and the day's weighted sums per (stratum, signal) the anomaly tests read.

A signal is 1 (failed), 0 (passed) or null (does not apply: an errored request has no groundedness). Screen
signals are known for every screened row (errors, latency, feedback, distance from the corpus); sample signals come
from the metrics on the scored sample. ``cell_sums`` keeps Σw, Σw·y, Σw² and the raw counts per cell, so any union
of cells (a day without one stratum) is exact to recombine; a rate's effective n is (Σw)² / Σw² (Kish).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from hcat_pipeline.metrics.groundedness import NLI_BOUNDARY
from hcat_pipeline.schemas import PRODUCTION_CELLS

SCREEN_SIGNALS = ("error", "slow", "negative_feedback", "far_from_corpus", "unlike_golden")
SAMPLE_SIGNALS = ("ungrounded", "irrelevant", "refused", "toxic", "pii_leak", "uncited")
SIGNALS = (*SCREEN_SIGNALS, *SAMPLE_SIGNALS)
# the metrics the sample is scored with (metrics.registry names): the nights' reference-free defaults
MONITOR_METRICS = ("groundedness_nli", "answer_relevancy", "context_relevancy", "refusal", "toxicity", "pii_leak", "citation_presence")
DESCRIPTIONS = {
    "error": "the request failed (an error was logged)",
    "slow": "latency over the service level",
    "negative_feedback": "thumbs down, a low rating, a correction, a retry or an abandoned session",
    "far_from_corpus": "a question far from every topic stratum of the corpus",
    "unlike_golden": "a question unlike every question of the golden set (input drift away from what is tested)",
    "ungrounded": "an answer the retrieved passages do not support (NLI groundedness, calibrated where labels exist)",
    "irrelevant": "an answer that does not address the question (answer relevancy)",
    "refused": "a refusal",
    "toxic": "a toxic answer",
    "pii_leak": "personal data in the answer that no retrieved passage holds",
    "uncited": "an answer without a citation of its passages",
}


def weighted_rate(sw: float, swy: float, sw2: float) -> tuple[float | None, float]:
    """(Σw·y / Σw, Kish effective n (Σw)² / Σw²) of summed cells; (None, 0) when nothing was read."""
    return (swy / sw if sw > 0 else None), (sw * sw / sw2 if sw2 > 0 else 0.0)


def column(signal: str) -> str:
    """The 0 / 1 / null column of a signal (beside the raw columns it is read from: ``error``, ``refused``)."""
    return f"fail_{signal}"


@dataclass(frozen=True)
class SignalConfig:
    groundedness_below: float = field(default=NLI_BOUNDARY, metadata={"description": "groundedness (or calibrated P(grounded)) "
                                                                        "below this: ungrounded"})
    relevancy_below: float = field(default=0.4, metadata={"description": "answer relevancy below this: irrelevant (gates.yaml's soft gate)"})
    toxicity_at: float = field(default=0.5, metadata={"description": "toxicity at or above this: toxic"})
    latency_slo_ms: float = field(default=5000.0, metadata={"gt": 0, "description": "latency over this: slow"})
    expect_citations: bool = field(default=False, metadata={"description": "the service cites its passages: an uncited answer fails"})


def screen_signals(screened: pl.DataFrame, config: SignalConfig, sample) -> pl.DataFrame:
    """The screen's signals; ``sample``: the ``SampleConfig`` (its similarity thresholds). ``unlike_golden`` only when the
    rows carry ``golden_similarity`` (a golden set to compare with)."""
    ok = pl.col("error").is_null()
    cols = {column("error"): (~ok).cast(pl.Int8),
            column("slow"): pl.when(pl.col("latency_ms").is_null()).then(None).otherwise(pl.col("latency_ms") > config.latency_slo_ms).cast(pl.Int8),
            column("negative_feedback"): (pl.col("feedback") == "negative").cast(pl.Int8),
            column("far_from_corpus"): (pl.col("max_similarity") < sample.far_below).cast(pl.Int8)}  # fmt: skip
    if "golden_similarity" in screened.columns:
        cols[column("unlike_golden")] = (pl.col("golden_similarity") < sample.unlike_golden_below).cast(pl.Int8)
    return screened.with_columns(**cols)


def sample_signals(scored: pl.DataFrame, config: SignalConfig, pass_probability: Mapping[str, Callable] | None = None) -> pl.DataFrame:
    """The scored sample (metric columns of ``metrics.score``) + one column per sample signal, and ``p_grounded``: the
    calibrated P(grounded) where a groundedness calibrator is given (``pass_probability["groundedness"]``), else null."""
    calibrate = (pass_probability or {}).get("groundedness")
    raw = scored["groundedness_nli"].to_numpy(allow_copy=True).astype(float) if "groundedness_nli" in scored.columns else None
    if calibrate is not None and raw is not None:
        p = np.full(len(raw), np.nan)
        ok = ~np.isnan(raw)
        p[ok] = calibrate(raw[ok])
        scored = scored.with_columns(pl.Series("p_grounded", p).fill_nan(None))
    else:
        scored = scored.with_columns(pl.lit(None, dtype=pl.Float64).alias("p_grounded"))
    answered = pl.col("error").is_null()
    said = answered & ~pl.col("refused").fill_null(False)

    def when(applies: pl.Expr, failed: pl.Expr) -> pl.Expr:
        return pl.when(applies & failed.is_not_null()).then(failed.cast(pl.Int8)).otherwise(None)

    grounded = pl.coalesce("p_grounded", "groundedness_nli")
    has_ctx = pl.col("contexts").list.len() > 0
    cols = {
        "ungrounded": when(said & has_ctx, grounded < config.groundedness_below),
        "irrelevant": when(said, pl.col("answer_relevancy") < config.relevancy_below),
        "refused": when(answered, pl.col("refused")),
        "toxic": when(answered, pl.col("toxicity") >= config.toxicity_at),
        "pii_leak": when(answered, pl.col("pii_leak") > 0),
        "uncited": when(said & pl.lit(config.expect_citations), pl.col("citation_presence") < 0.5),
    }
    missing = {c for c in ("refused", "answer_relevancy", "toxicity", "pii_leak", "citation_presence", "groundedness_nli") if c not in scored.columns}
    scored = scored.with_columns([pl.lit(None, dtype=pl.Float64).alias(c) for c in missing])
    return scored.with_columns(**{column(k): v for k, v in cols.items()})


def cell_sums(frame: pl.DataFrame, signals: tuple[str, ...], weight: str, day: str) -> pl.DataFrame:
    """day, stratum, signal, n, k, sw, swy, sw2 over the rows where each signal applies."""
    parts = []
    for s in signals:
        c = column(s)
        if c not in frame.columns:
            continue
        rows = frame.filter(pl.col(c).is_not_null())
        parts.append(rows.group_by("stratum").agg(
            n=pl.len(), k=pl.col(c).cast(pl.Int64).sum(), sw=pl.col(weight).sum(), swy=(pl.col(weight) * pl.col(c)).sum(),
            sw2=(pl.col(weight) ** 2).sum(),
        ).with_columns(signal=pl.lit(s)))  # fmt: skip
    schema = PRODUCTION_CELLS
    if not parts:
        return pl.DataFrame(schema=schema)
    out = pl.concat(parts, how="diagonal").with_columns(day=pl.lit(day))
    return out.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("signal", "stratum")


def day_cells(screened: pl.DataFrame, sample: pl.DataFrame, day: str) -> pl.DataFrame:
    return pl.concat([cell_sums(screened, SCREEN_SIGNALS, "screen_weight", day), cell_sums(sample, SAMPLE_SIGNALS, "weight", day)])


def rates(cells: pl.DataFrame, by_stratum: bool = False) -> pl.DataFrame:
    """Per day and signal (and stratum): the weighted rate with its 95 % Wilson interval at the effective n, n rows read."""
    from hcat_pipeline.common.stats import wilson_interval

    keys = ["day", "signal", *(["stratum"] if by_stratum else [])]
    agg = cells.group_by(keys).agg(pl.col("n").sum(), pl.col("sw").sum(), pl.col("swy").sum(), pl.col("sw2").sum()).sort(keys)
    rows = []
    for r in agg.iter_rows(named=True):
        rate, n_eff = weighted_rate(r["sw"], r["swy"], r["sw2"])
        n = max(1, round(n_eff))
        lo, hi = wilson_interval(min(n, round((rate or 0.0) * n)), n) if rate is not None else (None, None)
        rows.append({**{k: r[k] for k in keys}, "rate": rate, "ci_low": lo, "ci_high": hi, "n": r["n"], "n_eff": round(n_eff, 1)})
    schema = {"day": pl.String, "signal": pl.String, **({"stratum": pl.Int32} if by_stratum else {}), "rate": pl.Float64,
              "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64, "n_eff": pl.Float64}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)
