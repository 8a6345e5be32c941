"""Pareto frontier of quality × cost × latency (golden-eval §8), pure core.

``system_axes(responses, metrics, quality_metric)`` → one row per system: quality (mean of a metric
over the system's cases, with its bootstrap CI), cost (mean USD per case), latency p50 and p95 (with
bootstrap CIs), n and the number of failed calls. Latency of a reused answer (``reused_from`` set) is
the latency recorded on the night that asked it; failed calls keep their latency and cost (they were
paid for) but have no quality.

``pareto_frontier(axes)``: system X dominates Y when X is at least as good on every axis and strictly
better on at least one (quality higher, cost and latency lower). Frontier = systems nobody dominates.
For each dominated system: who dominates it and on which axes it is strictly better
(``dominated_by``: list of {system_id, better_on}), plus a sentence (``explanation``). ``tolerance``
treats differences within it (relative) as equal, so noise does not decide dominance.
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.common.stats import bootstrap_ci
from hcat_pipeline.schemas import PARETO_FRONTIER as PARETO

#: axis → "max" | "min"
DEFAULT_AXES: dict[str, str] = {"quality": "max", "cost_usd_per_case": "min", "latency_p50_s": "min", "latency_p95_s": "min"}


def system_axes(responses: pl.DataFrame, metrics: pl.DataFrame, quality_metric: str, *, n_boot: int = 1000, seed: int = 42,
                confidence: float = 0.95) -> pl.DataFrame:  # fmt: skip
    """Per system: quality (mean ``quality_metric``), USD per case, latency p50 / p95, each with n and CIs."""
    for name, frame, cols in (("responses", responses, ("case_id", "system_id", "latency_s", "cost_usd")),
                              ("metrics", metrics, ("case_id", "system_id", quality_metric))):  # fmt: skip
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise ValueError(f"system_axes: {name} lacks columns {missing}")
    rows = []
    for system in sorted(responses["system_id"].unique().to_list()):
        r = responses.filter(pl.col("system_id") == system)
        q = metrics.filter(pl.col("system_id") == system)[quality_metric].cast(pl.Float64).drop_nulls().drop_nans().to_numpy()
        lat = r["latency_s"].cast(pl.Float64).drop_nulls().to_numpy()
        cost = r["cost_usd"].cast(pl.Float64).fill_null(0.0)
        qe = bootstrap_ci(q, "mean", confidence, n_boot, seed)
        p50 = bootstrap_ci(lat, "p50", confidence, n_boot, seed)
        p95 = bootstrap_ci(lat, "p95", confidence, n_boot, seed)
        failed = int(r["error"].is_not_null().sum()) if "error" in r.columns else 0
        rows.append({"system_id": system, "quality": qe.estimate, "quality_ci_low": qe.ci_low, "quality_ci_high": qe.ci_high,
                     "cost_usd_per_case": float(cost.mean()) if r.height else None, "latency_p50_s": p50.estimate,
                     "latency_p50_ci_low": p50.ci_low, "latency_p50_ci_high": p50.ci_high, "latency_p95_s": p95.estimate,
                     "latency_p95_ci_low": p95.ci_low, "latency_p95_ci_high": p95.ci_high, "n": r.height, "n_quality": qe.n,
                     "n_failed": failed, "quality_metric": quality_metric})  # fmt: skip
    return pl.DataFrame(rows, schema=PARETO)


def _better(x: float, y: float, sense: str, tol: float) -> int:
    """+1 if x is better than y on an axis of ``sense``, −1 if worse, 0 if equal within ``tol`` (relative)."""
    scale = max(abs(x), abs(y), 1e-12)
    if abs(x - y) <= tol * scale:
        return 0
    return (1 if x > y else -1) * (1 if sense == "max" else -1)


def pareto_frontier(axes: pl.DataFrame, senses: dict[str, str] | None = None, *, tolerance: float = 0.0) -> pl.DataFrame:
    """``axes`` + ``on_frontier``, ``dominated_by`` (list of {system_id, better_on}) and ``explanation``."""
    senses = senses or DEFAULT_AXES
    bad = {a: s for a, s in senses.items() if s not in ("max", "min") or a not in axes.columns}
    if bad:
        raise ValueError(f"pareto_frontier: axes must be columns of the table with sense 'max' or 'min'; bad: {bad}")
    recs = axes.to_dicts()
    nulls = [(r["system_id"], a) for r in recs for a in senses if r[a] is None]
    if nulls:
        raise ValueError(f"pareto_frontier: missing axis values (system, axis): {nulls}; drop those systems or axes first")
    out_dom, out_expl = [], []
    for y in recs:
        doms = []
        for x in recs:
            if x is y:
                continue
            cmp = {a: _better(x[a], y[a], s, tolerance) for a, s in senses.items()}
            if all(c >= 0 for c in cmp.values()) and any(c > 0 for c in cmp.values()):
                doms.append({"system_id": x["system_id"], "better_on": [a for a, c in cmp.items() if c > 0]})
        out_dom.append(doms)
        if not doms:
            out_expl.append("on the frontier: no system is at least as good on every axis and better on one")
        else:
            parts = []
            for d in doms:
                x = next(r for r in recs if r["system_id"] == d["system_id"])
                axes_txt = ", ".join(f"{a} {x[a]:.4g} vs {y[a]:.4g}" for a in d["better_on"])
                parts.append(f"{d['system_id']} (better on {axes_txt}; no worse elsewhere)")
            out_expl.append("dominated by " + "; ".join(parts))
    return axes.with_columns(
        pl.Series("on_frontier", [not d for d in out_dom], dtype=pl.Boolean),
        pl.Series("dominated_by", out_dom, dtype=pl.List(pl.Struct({"system_id": pl.String, "better_on": pl.List(pl.String)}))),
        pl.Series("explanation", out_expl, dtype=pl.String),
    )
