"""Pareto frontier of quality × cost × latency (golden-eval §8), pure core.

``system_axes(responses, metrics, quality_metric)`` → one row per system: quality (mean of a metric
over the system's cases, with its bootstrap CI), cost (mean USD per case, with its CI), latency p50
and p95 (with bootstrap CIs), n and the number of failed calls. Latency of a reused answer
(``reused_from`` set) is the latency recorded on the night that asked it; failed calls keep their
latency and cost (they were paid for) but have no quality.

Unknowns are unknown, never best: a quality with no finite value (NaN: the metric needs a context the
system does not return) leaves the system *off the frontier, not placed*, with the reason in
``excluded_reason``; a cost that is not known for every case (a model missing from the price table, an
http system without ``cost_path`` or ``cost_per_call_usd``) is null and that axis is not compared for
the system (said in the explanation).

The secondary rankings — quality per second and per dollar with CIs and ranks — are joined on
(``gates.efficiency``).

``pareto_frontier(axes)``: system X dominates Y when X is at least as good on every axis and better on
at least one (quality higher, cost and latency lower). "Better" needs evidence: X's confidence interval
on the axis lies entirely on the better side of Y's (non-overlapping 95 % CIs — stricter than a CI of
the difference excluding 0), and the difference exceeds ``tolerance`` (relative; one number or one per
axis). So noise — a latency 0.1 ms lower — never makes a system non-dominated. Frontier = placed
systems nobody dominates. For each dominated system: who dominates it and on which axes
(``dominated_by``: list of {system_id, better_on}), plus a sentence (``explanation``).
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.common.stats import bootstrap_ci
from hcat_pipeline.gates.efficiency import EFFICIENCY, efficiency
from hcat_pipeline.schemas import PARETO_FRONTIER as PARETO

QUALITY_METRIC = "groundedness_nli"  # the validated groundedness: the default quality axis and first ranking metric
RANKING_METRICS: tuple[str, ...] = (QUALITY_METRIC, "answer_relevancy")  # the default metrics systems are ranked on
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
        costs = r["cost_usd"].cast(pl.Float64)
        known_cost = r.height > 0 and costs.null_count() == 0
        qe = bootstrap_ci(q, "mean", confidence, n_boot, seed)
        ce = bootstrap_ci(costs.to_numpy(), "mean", confidence, n_boot, seed) if known_cost else None
        p50 = bootstrap_ci(lat, "p50", confidence, n_boot, seed)
        p95 = bootstrap_ci(lat, "p95", confidence, n_boot, seed)
        failed = int(r["error"].is_not_null().sum()) if "error" in r.columns else 0
        why = None if qe.n else f"quality unknown: no finite {quality_metric} on any of its {r.height} cases"
        rows.append({"system_id": system, "quality": qe.estimate if qe.n else None, "quality_ci_low": qe.ci_low if qe.n else None,
                     "quality_ci_high": qe.ci_high if qe.n else None,
                     "cost_usd_per_case": ce.estimate if ce else None, "cost_ci_low": ce.ci_low if ce else None,
                     "cost_ci_high": ce.ci_high if ce else None, "n_cost_unknown": int(costs.null_count()),
                     "latency_p50_s": p50.estimate, "latency_p50_ci_low": p50.ci_low, "latency_p50_ci_high": p50.ci_high,
                     "latency_p95_s": p95.estimate, "latency_p95_ci_low": p95.ci_low, "latency_p95_ci_high": p95.ci_high,
                     "n": r.height, "n_quality": qe.n, "n_failed": failed, "quality_metric": quality_metric,
                     "excluded_reason": why})  # fmt: skip
    axes = pl.DataFrame(rows, schema={k: v for k, v in PARETO.items() if k not in EFFICIENCY})
    eff = efficiency(responses, metrics, quality_metric, confidence=confidence, n_boot=n_boot, seed=seed)
    return axes.join(eff, on="system_id", how="left").select(list(PARETO))


#: axis → its CI columns (cost's CI is cost_ci_*; the others are <axis>_ci_* or <stem>_ci_*)
_CI = {"quality": ("quality_ci_low", "quality_ci_high"), "cost_usd_per_case": ("cost_ci_low", "cost_ci_high"),
       "latency_p50_s": ("latency_p50_ci_low", "latency_p50_ci_high"), "latency_p95_s": ("latency_p95_ci_low", "latency_p95_ci_high")}


def _interval(row: dict, axis: str) -> tuple[float, float] | None:
    v = row.get(axis)
    if v is None or v != v:
        return None
    lo, hi = (row.get(c) for c in _CI.get(axis, (None, None)))
    ok = lambda x: x is not None and x == x  # noqa: E731 (not None, not NaN)
    return (lo if ok(lo) else v, hi if ok(hi) else v)


def better(x: dict, y: dict, axis: str, sense: str, tol: float) -> int:
    """+1 if x is better than y on ``axis`` with evidence (CIs apart and the difference beyond ``tol``, relative),
    −1 if worse with evidence, 0 otherwise — also when either value is unknown."""
    ix, iy = _interval(x, axis), _interval(y, axis)
    if ix is None or iy is None:
        return 0
    scale = max(abs(x[axis]), abs(y[axis]), 1e-12)
    if abs(x[axis] - y[axis]) <= tol * scale:
        return 0
    x_above, y_above = ix[0] > iy[1], iy[0] > ix[1]
    if not (x_above or y_above):
        return 0  # the intervals overlap: no evidence either way
    return (1 if x_above else -1) * (1 if sense == "max" else -1)


def pareto_frontier(axes: pl.DataFrame, senses: dict[str, str] | None = None, *,
                    tolerance: float | dict[str, float] = 0.0) -> pl.DataFrame:  # fmt: skip
    """``axes`` + ``on_frontier`` (null: not placed), ``dominated_by`` (list of {system_id, better_on}) and ``explanation``."""
    senses = senses or DEFAULT_AXES
    bad = {a: s for a, s in senses.items() if s not in ("max", "min") or a not in axes.columns}
    if bad:
        raise ValueError(f"pareto_frontier: axes must be columns of the table with sense 'max' or 'min'; bad: {bad}")
    tol = tolerance if isinstance(tolerance, dict) else dict.fromkeys(senses, float(tolerance))
    recs = axes.to_dicts()
    placed = [r for r in recs if r.get("excluded_reason") is None and r.get("quality") is not None]
    out_front, out_dom, out_expl = [], [], []
    for y in recs:
        if y not in placed:
            why = y.get("excluded_reason") or "quality unknown"
            out_front.append(None), out_dom.append([]), out_expl.append(f"not placed on the frontier: {why}")
            continue
        doms = []
        for x in placed:
            if x is y:
                continue
            cmp = {a: better(x, y, a, s, tol.get(a, 0.0)) for a, s in senses.items()}
            if all(c >= 0 for c in cmp.values()) and any(c > 0 for c in cmp.values()):
                doms.append({"system_id": x["system_id"], "better_on": [a for a, c in cmp.items() if c > 0]})
        unknown = [a for a in senses if _interval(y, a) is None]
        note = f" ({', '.join(unknown)} unknown: not compared)" if unknown else ""
        out_front.append(not doms)
        out_dom.append(doms)
        if not doms:
            out_expl.append("on the frontier: no system is better with evidence (CIs apart) on one axis and no worse elsewhere" + note)
        else:
            parts = []
            for d in doms:
                x = next(r for r in recs if r["system_id"] == d["system_id"])
                axes_txt = ", ".join(f"{a} {x[a]:.4g} vs {y[a]:.4g}" for a in d["better_on"])
                parts.append(f"{d['system_id']} (better on {axes_txt}, CIs apart; no worse elsewhere)")
            out_expl.append("dominated by " + "; ".join(parts) + note)
    return axes.with_columns(
        pl.Series("on_frontier", out_front, dtype=pl.Boolean),
        pl.Series("dominated_by", out_dom, dtype=pl.List(pl.Struct({"system_id": pl.String, "better_on": pl.List(pl.String)}))),
        pl.Series("explanation", out_expl, dtype=pl.String),
    )
