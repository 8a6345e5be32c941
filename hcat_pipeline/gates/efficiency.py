"""Secondary rankings (golden-eval §3.2.4, §6, §8.3): quality per dollar and quality per second, beside the quality
ranking, pure core.

Per system, on the cases where it has a quality value (``quality_metric``), a latency and — for the dollar ratio — a
cost: ``quality_per_second`` = mean quality / mean seconds per answer, ``quality_per_usd`` = mean quality / mean USD per
answer, each with a percentile bootstrap CI over cases (the case resampled as a pair: its quality with its own latency
and cost). A cost not known for every answer (an http system without ``cost_path``, a model missing from the price
table) makes ``quality_per_usd`` unknown — null with the reason, never ranked, never $0. A free system (cost 0) has no
finite ratio either: it is said so, not ranked first by division by zero. Ranks (1 = best) are by point estimate among
systems with a value; ``*_rank_tied`` says when the CI overlaps the next system's (the order is then not established).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hcat_pipeline.common.stats import DEFAULT_CONFIDENCE, DEFAULT_N_BOOT, DEFAULT_SEED

EFFICIENCY = {
    "quality_per_second": pl.Float64, "quality_per_second_ci_low": pl.Float64, "quality_per_second_ci_high": pl.Float64,
    "rank_per_second": pl.Int64, "rank_per_second_tied": pl.Boolean,
    "quality_per_usd": pl.Float64, "quality_per_usd_ci_low": pl.Float64, "quality_per_usd_ci_high": pl.Float64,
    "rank_per_usd": pl.Int64, "rank_per_usd_tied": pl.Boolean, "rank_quality": pl.Int64, "efficiency_note": pl.String,
}  # fmt: skip


def _ratio(q: np.ndarray, d: np.ndarray, confidence: float, n_boot: int, seed: int) -> tuple[float, float, float] | None:
    if len(q) == 0 or d.mean() <= 0:
        return None
    idx = np.random.default_rng(seed).integers(0, len(q), size=(n_boot, len(q)))
    den = d[idx].mean(axis=1)
    draws = np.where(den > 0, q[idx].mean(axis=1) / np.where(den > 0, den, 1.0), np.nan)
    a = (1 - confidence) / 2
    return float(q.mean() / d.mean()), float(np.nanquantile(draws, a)), float(np.nanquantile(draws, 1 - a))


def _ranks(values: dict[str, tuple[float, float, float] | None]) -> dict[str, tuple[int, bool]]:
    known = sorted(((v[0], sid) for sid, v in values.items() if v is not None), reverse=True)
    out = {}
    for k, (_, sid) in enumerate(known):
        lo, hi = values[sid][1], values[sid][2]
        neighbours = [values[s] for _, s in known[max(0, k - 1): k + 2] if s != sid]
        out[sid] = (k + 1, any(n[1] <= hi and lo <= n[2] for n in neighbours))
    return out


def efficiency(responses: pl.DataFrame, metrics: pl.DataFrame, quality_metric: str, *, confidence: float = DEFAULT_CONFIDENCE,
               n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> pl.DataFrame:  # fmt: skip
    """One row per system of ``responses``: ``system_id`` + ``EFFICIENCY`` (module doc)."""
    q = metrics.select("case_id", "system_id", pl.col(quality_metric).cast(pl.Float64).alias("_q")).filter(pl.col("_q").is_finite())
    joined = responses.select("case_id", "system_id", pl.col("latency_s").cast(pl.Float64), pl.col("cost_usd").cast(pl.Float64)).join(
        q, on=["case_id", "system_id"], how="inner")
    per_s, per_usd, quality, notes = {}, {}, {}, {}
    for sid in sorted(responses["system_id"].unique().to_list()):
        mine = joined.filter(pl.col("system_id") == sid)
        timed = mine.drop_nulls("latency_s")
        per_s[sid] = _ratio(timed["_q"].to_numpy(), timed["latency_s"].to_numpy(), confidence, n_boot, seed)
        quality[sid] = (float(mine["_q"].mean()), 0.0, 0.0) if mine.height else None
        unknown = int(responses.filter(pl.col("system_id") == sid)["cost_usd"].null_count())
        if unknown:
            per_usd[sid], notes[sid] = None, f"cost unknown for {unknown} answer(s): quality per dollar unknown"
        else:
            per_usd[sid] = _ratio(mine["_q"].to_numpy(), mine["cost_usd"].to_numpy(), confidence, n_boot, seed)
            notes[sid] = None if per_usd[sid] else "no cost (free or no scored answer): quality per dollar not defined"
        if mine.height == 0:
            notes[sid] = f"no finite {quality_metric}: not ranked"
    r_s, r_usd, r_q = _ranks(per_s), _ranks(per_usd), _ranks(quality)
    rows = []
    for sid in per_s:
        s, u = per_s[sid], per_usd[sid]
        rows.append({"system_id": sid, "quality_per_second": s and s[0], "quality_per_second_ci_low": s and s[1],
                     "quality_per_second_ci_high": s and s[2], "rank_per_second": r_s.get(sid, (None, None))[0],
                     "rank_per_second_tied": r_s.get(sid, (None, None))[1], "quality_per_usd": u and u[0],
                     "quality_per_usd_ci_low": u and u[1], "quality_per_usd_ci_high": u and u[2],
                     "rank_per_usd": r_usd.get(sid, (None, None))[0], "rank_per_usd_tied": r_usd.get(sid, (None, None))[1],
                     "rank_quality": r_q.get(sid, (None, None))[0], "efficiency_note": notes[sid]})  # fmt: skip
    return pl.DataFrame(rows, schema={"system_id": pl.String, **EFFICIENCY})
