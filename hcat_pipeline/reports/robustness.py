"""Robustness deltas (HCAT §6.1-6.2): each variant kind against its base cases, paired.

A variant case (typo, colloquial, misleading premise, distractor, injection, counterfactual …) links
to its base case (``base_case_id``). For one system and one metric, each variant is paired with the
same system's score on its base case; the delta is the mean of (variant − base) with a paired
bootstrap CI (``hcat_pipeline.common.stats.paired_bootstrap_ci``) and a claim strength. The
"cost" is the loss in the metric's good direction, so "typo costs dense 0.12 groundedness_nli
[0.05, 0.19]" reads the same for higher- and lower-is-better metrics. A row per system and one
pooled over systems (``system_id`` "all"). No dagster import.
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.common.stats import estimate_strength, paired_bootstrap_ci
from hcat_pipeline.reports.weakness import NONE_LEVEL, WeaknessConfig, direction
from hcat_pipeline.schemas import ROBUSTNESS_DELTAS as DELTAS

ALL_SYSTEMS = "all"


def variant_pairs(scores: pl.DataFrame) -> pl.DataFrame:
    """Variant rows joined with the same system's base-case row of the same metric (both values present)."""
    variants = scores.filter(pl.col("base_case_id").is_not_null() & (pl.col("variant_kind") != NONE_LEVEL))
    base = scores.select(pl.col("case_id").alias("base_case_id"), "system_id", "metric", "source", pl.col("value").alias("base_value"))
    return (
        variants.join(base, on=["base_case_id", "system_id", "metric", "source"], how="inner")
        .filter(pl.col("value").is_not_null() & pl.col("base_value").is_not_null())
        .sort("variant_kind", "system_id", "metric", "case_id")
    )


def statement(row: dict) -> str:
    """'typo costs dense 0.120 groundedness_nli [0.050, 0.190] (n=4 pairs)' (or 'gains', 'changes')."""
    who = "every system" if row["system_id"] == ALL_SYSTEMS else row["system_id"]
    if row["ci_low"] is None:
        return f"{row['variant_kind']}: {who} {row['metric']} Δ {row['delta']:+.3f} (n={row['n_pairs']} pair, no interval)"
    sign = -1.0 if row["direction"] == "lower" else 1.0
    lo, hi = sorted((-sign * row["ci_low"], -sign * row["ci_high"]))
    if row["direction"] == "none":
        return (f"{row['variant_kind']} changes {who}'s {row['metric']} by {row['delta']:+.3f} "
                f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}] (n={row['n_pairs']} pairs)")  # fmt: skip
    if round(row["cost"], 3) == 0 and round(lo, 3) == 0 and round(hi, 3) == 0:
        return f"{row['variant_kind']} leaves {who}'s {row['metric']} unchanged (n={row['n_pairs']} pairs)"
    verb, amount = ("costs", row["cost"]) if row["cost"] >= 0 else ("gains", -row["cost"])
    if verb == "gains":
        lo, hi = -hi, -lo
    return f"{row['variant_kind']} {verb} {who} {amount:.3f} {row['metric']} [{lo:.3f}, {hi:.3f}] (n={row['n_pairs']} pairs)"


def robustness_deltas(scores: pl.DataFrame, cfg: WeaknessConfig | None = None, pooled: bool = True) -> pl.DataFrame:
    """Per variant kind × system (and pooled) × metric: paired delta variant − base with CI (``DELTAS``)."""
    cfg = cfg or WeaknessConfig()
    pairs = variant_pairs(scores)
    groups = [pairs]
    if pooled and pairs.height:
        groups.append(pairs.with_columns(pl.lit(ALL_SYSTEMS).alias("system_id")))
    rows = []
    for (kind, system, metric, source), g in pl.concat(groups).group_by(["variant_kind", "system_id", "metric", "source"]):
        est = paired_bootstrap_ci(g["value"].to_numpy(), g["base_value"].to_numpy(), "mean", cfg.confidence, cfg.n_boot, cfg.seed, cfg.ci_method)
        d = direction(metric)
        finite = est.n >= 2 and est.ci_low == est.ci_low
        delta = float(est.estimate)
        row = {
            "variant_kind": kind, "system_id": system, "metric": metric, "source": source, "direction": d, "n_pairs": est.n,
            "variant_mean": float(g["value"].mean()), "base_mean": float(g["base_value"].mean()), "delta": delta,
            "ci_low": float(est.ci_low) if finite else None, "ci_high": float(est.ci_high) if finite else None,
            "cost": delta if d == "lower" else -delta, "claim_strength": estimate_strength(est), "small": est.n < cfg.min_cell_n,
        }  # fmt: skip
        row["statement"] = statement(row)
        rows.append(row)
    out = pl.DataFrame(rows, schema=DELTAS)
    return out.sort(["variant_kind", "metric", pl.col("system_id") == ALL_SYSTEMS, "system_id"])
