"""Paired significance tests between two systems on the cases both answered (golden-eval §4.3 comparison modes).

``paired_comparison(a, b)``: values of one metric per shared case, in the same order. A pass / fail outcome (every
value 0 or 1) gets McNemar's exact test (the discordant cases: a passed and b failed, or the reverse; a two-sided
binomial test of their split at ½, ``scipy.stats.binomtest``), effect size the difference in pass rates with its
paired-bootstrap CI and the discordant odds ratio; a continuous score gets the paired bootstrap (B = 1000, seed 42:
the CI of the mean difference) with a sign-flip permutation p-value and Cohen's d_z (mean difference / SD of the
differences). ``paired_comparisons(scores, metric)`` runs it for every pair of systems. No Dagster import.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl
from scipy.stats import binomtest

from hcat_pipeline.common.stats import DEFAULT_N_BOOT, paired_bootstrap_ci

ALPHA = 0.05
N_PERMUTATIONS = 10_000
PAIRED = {"metric": pl.String, "system_a": pl.String, "system_b": pl.String, "n": pl.Int64, "mean_a": pl.Float64, "mean_b": pl.Float64,
          "difference": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "test": pl.String, "p_value": pl.Float64,
          "effect": pl.String, "effect_size": pl.Float64, "a_only": pl.Int64, "b_only": pl.Int64, "verdict": pl.String}  # fmt: skip


def paired_comparison(a: np.ndarray, b: np.ndarray, seed: int = 42, n_boot: int = DEFAULT_N_BOOT) -> dict:
    """One metric of two systems on the same cases (NaN: that case is left out of both). See the module docstring."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n = int(a.size)
    out = {"n": n, "mean_a": float(a.mean()) if n else None, "mean_b": float(b.mean()) if n else None,
           "difference": float((a - b).mean()) if n else None}  # fmt: skip
    if n < 2:
        return out | {"test": "none", "p_value": None, "effect": "", "effect_size": None, "ci_low": None, "ci_high": None,
                      "a_only": None, "b_only": None, "verdict": f"not tested: {n} shared case(s)"}  # fmt: skip
    ci = paired_bootstrap_ci(a, b, "mean", 0.95, n_boot, seed)
    out |= {"ci_low": ci.ci_low, "ci_high": ci.ci_high}
    if np.isin(np.concatenate([a, b]), (0.0, 1.0)).all():
        a_only, b_only = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
        p = binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
        odds = (a_only + 0.5) / (b_only + 0.5)  # Haldane's ½ keeps a one-sided split finite
        out |= {"test": "mcnemar_exact", "p_value": float(p), "effect": "discordant odds ratio (a-only / b-only, +½)", "effect_size": odds,
                "a_only": a_only, "b_only": b_only}  # fmt: skip
    else:
        d = a - b
        flips = np.random.default_rng(seed).choice((-1.0, 1.0), size=(N_PERMUTATIONS, n))
        null = np.abs((flips * d).mean(axis=1))
        p = (1 + int((null >= abs(d.mean()) - 1e-12).sum())) / (N_PERMUTATIONS + 1)
        sd = d.std(ddof=1)
        out |= {"test": "paired_bootstrap + sign-flip permutation", "p_value": float(p), "effect": "Cohen's d_z",
                "effect_size": float(d.mean() / sd) if sd > 0 else None, "a_only": None, "b_only": None}  # fmt: skip
    if out["p_value"] < ALPHA:
        out["verdict"] = "a better" if out["difference"] > 0 else "b better"
    else:
        out["verdict"] = "no difference shown"
    return out


def paired_comparisons(scores: pl.DataFrame, metric: str, seed: int = 42, n_boot: int = DEFAULT_N_BOOT) -> pl.DataFrame:
    """Every pair of systems on ``metric`` (a long frame: case_id, system_id, metric, value), on the cases both have."""
    long = scores.filter(pl.col("metric") == metric).select("case_id", "system_id", pl.col("value").cast(pl.Float64))
    long = long.group_by("case_id", "system_id").agg(pl.col("value").mean())
    systems = sorted(long["system_id"].unique().to_list())
    if len(systems) < 2:
        return pl.DataFrame(schema=PAIRED)
    wide = long.pivot(on="system_id", index="case_id", values="value").sort("case_id")
    rows = []
    for sa, sb in combinations(systems, 2):
        got = paired_comparison(wide[sa].fill_null(np.nan).to_numpy(), wide[sb].fill_null(np.nan).to_numpy(), seed, n_boot)
        rows.append({"metric": metric, "system_a": sa, "system_b": sb, **got})
    return pl.DataFrame(rows, schema=PAIRED)
