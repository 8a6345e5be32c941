"""Paraphrase robustness per case (golden-eval §3.2.3 ROBUSTNESS, §3.5.2 prompt sensitivity): "each test case is run
against N rewrites, and high-variance cases are flagged".

A paraphrase group is a happy-path base case and its rewordings (``golden.paraphrase``: variant kind ``paraphrase``,
``base_case_id`` the base). For each system, group and metric of ``PARAPHRASE_METRICS`` (answer vs reference, and
groundedness: both are computed for every wording), the values over the wordings give n, mean, the sample standard
deviation and the spread (max − min). A group is **flagged** when its standard deviation is at least
``max_paraphrase_sd`` (0.10 of the unit scale, fixed before any measurement): the system answers the same intent
differently depending on its wording. The lowest-scoring wording is named. Per system, the share of flagged groups
comes with its Wilson interval and n (``paraphrase_summary``). No Dagster import.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hcat_pipeline.common.stats import wilson_interval
from hcat_pipeline.reports.campaign_report import Section, fmt_ci
from hcat_pipeline.schemas import PARAPHRASE_VARIANCE

PARAPHRASE_METRICS = ("semantic_similarity", "groundedness_nli")
MAX_PARAPHRASE_SD = 0.10


def paraphrase_variance(scores: pl.DataFrame, max_sd: float = MAX_PARAPHRASE_SD, metrics=PARAPHRASE_METRICS) -> pl.DataFrame:
    """One row per system × paraphrase group × metric (``PARAPHRASE_VARIANCE``) from ``reports.weakness.case_scores``'
    long frame; empty when the run holds no paraphrase group."""
    para = scores.filter((pl.col("variant_kind") == "paraphrase") & pl.col("base_case_id").is_not_null())
    if para.height == 0:
        return pl.DataFrame(schema=PARAPHRASE_VARIANCE)
    bases = para["base_case_id"].unique().to_list()
    members = pl.concat([
        scores.filter(pl.col("case_id").is_in(bases)).with_columns(pl.col("case_id").alias("group_id")),
        para.with_columns(pl.col("base_case_id").alias("group_id")),
    ]).filter(pl.col("metric").is_in(list(metrics)) & (pl.col("source") == "raw") & pl.col("value").is_not_null())  # fmt: skip
    rows = []
    for (sid, gid, metric), g in members.group_by(["system_id", "group_id", "metric"]):
        values = np.asarray(g["value"].to_list(), float)
        sd = float(values.std(ddof=1)) if values.size >= 2 else None
        worst = g.sort("value", "case_id").row(0, named=True)
        flagged = sd is not None and sd >= max_sd
        rows.append({
            "system_id": sid, "base_case_id": gid, "metric": metric, "n_wordings": int(values.size), "mean": float(values.mean()), "sd": sd,
            "spread": float(values.max() - values.min()), "min_value": float(values.min()), "max_value": float(values.max()),
            "worst_case_id": worst["case_id"], "base_value": next((float(v) for c, v in zip(g["case_id"], g["value"], strict=True) if c == gid), None),
            "flagged": flagged, "statement": _statement(sid, gid, metric, values, sd, max_sd, worst["case_id"]),
        })  # fmt: skip
    return pl.DataFrame(rows, schema=PARAPHRASE_VARIANCE, orient="row").sort("metric", "system_id", "base_case_id")


def _statement(sid, gid, metric, values, sd, max_sd, worst) -> str:
    if sd is None:
        return f"{sid} {metric} on {gid}: one wording scored, no variance"
    verdict = f"HIGH VARIANCE (sd ≥ {max_sd})" if sd >= max_sd else "stable"
    return (f"{sid} {metric} on {gid}: {verdict} — sd {sd:.3f}, {values.min():.2f}-{values.max():.2f} over {values.size} wordings; "
            f"lowest {worst}")  # fmt: skip


def paraphrase_summary(table: pl.DataFrame) -> list[dict]:
    """Per system and metric: groups, flagged groups and the flagged share with its Wilson 95 % interval."""
    out = []
    for (sid, metric), g in table.filter(pl.col("sd").is_not_null()).group_by(["system_id", "metric"], maintain_order=True):
        k, n = int(g["flagged"].sum()), g.height
        lo, hi = wilson_interval(k, n)
        out.append({"system_id": sid, "metric": metric, "groups": n, "flagged": k, "share": k / n, "ci_low": lo, "ci_high": hi})
    return sorted(out, key=lambda r: (r["metric"], r["system_id"]))


def paraphrase_section(table: pl.DataFrame | None) -> tuple[Section, list[str]]:
    """The report's section: per system the flagged share (CI, n), then every flagged group, worst first."""
    key, title = "paraphrase", "Paraphrase robustness per case (golden-eval §3.2.3, §3.5.2)"
    if table is None or table.filter(pl.col("sd").is_not_null()).height == 0:
        return Section.missing(key, title, "no paraphrase group was answered this run (golden set without paraphrase cases, or none "
                                           "selected): prompt sensitivity per case is unknown"), []  # fmt: skip
    summary = paraphrase_summary(table)
    lines = [f"Paraphrase robustness ({s['system_id']}, {s['metric']}): {s['flagged']} of {s['groups']} cases high-variance "
             f"({fmt_ci(s['share'], s['ci_low'], s['ci_high'], s['groups'])})." for s in summary]  # fmt: skip
    flagged = table.filter(pl.col("flagged")).sort("sd", descending=True)
    rows = [[r["system_id"], r["metric"], r["base_case_id"], str(r["n_wordings"]), f"{r['sd']:.3f}", f"{r['min_value']:.2f}-{r['max_value']:.2f}",
             r["worst_case_id"]] for r in flagged.iter_rows(named=True)]  # fmt: skip
    note = (" ".join(lines) + f" Flagged: sample standard deviation over the base wording and its rewordings ≥ {MAX_PARAPHRASE_SD} "
            "(fixed a priori); the full table is paraphrase_variance.")  # fmt: skip
    return Section(key, title, columns=["system_id", "metric", "case (base)", "wordings", "sd", "range", "lowest wording"], rows=rows,
                   note=note if rows else note + " No case was flagged."), lines  # fmt: skip
