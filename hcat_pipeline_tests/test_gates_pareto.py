"""Pareto frontier over quality × cost × latency: frontier systems and who dominates whom on which axes."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.gates.pareto import pareto_frontier, system_axes


def _axes():
    return pl.DataFrame({
        "system_id": ["cheap", "best", "slow_same", "worse_all", "fast"],
        "quality": [0.60, 0.80, 0.80, 0.55, 0.70],
        "cost_usd_per_case": [0.001, 0.010, 0.010, 0.002, 0.004],
        "latency_p50_s": [1.0, 2.0, 3.0, 1.5, 0.5],
        "latency_p95_s": [2.0, 4.0, 6.0, 3.0, 1.0],
    })  # fmt: skip


def test_frontier_and_dominators():
    out = {r["system_id"]: r for r in pareto_frontier(_axes()).to_dicts()}
    assert {s for s, r in out.items() if r["on_frontier"]} == {"cheap", "best", "fast"}
    slow = {d["system_id"]: d["better_on"] for d in out["slow_same"]["dominated_by"]}
    assert slow == {"best": ["latency_p50_s", "latency_p95_s"]}  # same quality and cost, faster
    worse = {d["system_id"]: set(d["better_on"]) for d in out["worse_all"]["dominated_by"]}
    assert worse["cheap"] == {"quality", "cost_usd_per_case", "latency_p50_s", "latency_p95_s"}
    assert "fast" not in worse or "cost_usd_per_case" not in worse["fast"]  # fast costs more than worse_all: no dominance
    assert "dominated by best" in out["slow_same"]["explanation"]


def test_tolerance_and_errors():
    axes = _axes().with_columns(pl.when(pl.col("system_id") == "slow_same").then(0.801).otherwise(pl.col("quality")).alias("quality"))
    strict = {r["system_id"]: r["on_frontier"] for r in pareto_frontier(axes).to_dicts()}
    assert strict["slow_same"]  # 0.001 better quality keeps it on the frontier …
    tol = {r["system_id"]: r["on_frontier"] for r in pareto_frontier(axes, tolerance=0.01).to_dicts()}
    assert not tol["slow_same"]  # … unless differences within 1 % count as equal
    with pytest.raises(ValueError, match="missing axis"):
        pareto_frontier(_axes().with_columns(pl.lit(None, dtype=pl.Float64).alias("quality")))
    with pytest.raises(ValueError, match="sense"):
        pareto_frontier(_axes(), {"quality": "up"})


def test_system_axes_from_responses_and_metrics():
    rng = np.random.default_rng(0)
    resp, met = [], []
    for s, lat, cost, q in (("a", 1.0, 0.0, 0.7), ("b", 3.0, 0.002, 0.75)):
        for i in range(50):
            resp.append({"case_id": f"c{i}", "system_id": s, "latency_s": lat + rng.exponential(0.2), "cost_usd": cost,
                         "error": "timeout: x" if (s == "b" and i == 0) else None})  # fmt: skip
            met.append({"case_id": f"c{i}", "system_id": s, "groundedness": None if (s == "b" and i == 0) else q + rng.normal(0, 0.05)})
    axes = system_axes(pl.DataFrame(resp), pl.DataFrame(met), "groundedness", n_boot=200)
    b = axes.filter(pl.col("system_id") == "b").row(0, named=True)
    assert b["n"] == 50 and b["n_quality"] == 49 and b["n_failed"] == 1
    assert b["latency_p50_ci_low"] <= b["latency_p50_s"] <= b["latency_p50_ci_high"] and b["latency_p95_s"] > b["latency_p50_s"]
    assert b["quality_ci_low"] < 0.75 < b["quality_ci_high"] and b["cost_usd_per_case"] == pytest.approx(0.002)
    assert pareto_frontier(axes)["on_frontier"].to_list() == [True, True]  # a: cheaper + faster, b: better
    with pytest.raises(ValueError, match="lacks columns"):
        system_axes(pl.DataFrame(resp).drop("cost_usd"), pl.DataFrame(met), "groundedness")
