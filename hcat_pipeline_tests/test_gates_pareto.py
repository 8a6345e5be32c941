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


def _noisy(system: str, lat: float, q: float, cost: float | None, n: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    resp = [{"case_id": f"c{i}", "system_id": system, "latency_s": lat + rng.normal(0, 0.05), "cost_usd": cost, "error": None} for i in range(n)]
    met = [{"case_id": f"c{i}", "system_id": system, "quality_metric": q + rng.normal(0, 0.08)} for i in range(n)]
    return resp, met


def _frontier(*systems):
    resp, met = [], []
    for s in systems:
        r, m = _noisy(*s, seed=0)  # the same noise draw: the fabricator is exactly 0.1 ms faster on every case
        resp += r
        met += m
    axes = system_axes(pl.DataFrame(resp), pl.DataFrame(met, schema={"case_id": pl.String, "system_id": pl.String,
                                                                     "quality_metric": pl.Float64}), "quality_metric", n_boot=300)
    return {r["system_id"]: r for r in pareto_frontier(axes).to_dicts()}


def test_noise_never_makes_a_worse_system_non_dominated():
    """A fabricator whose quality is far lower cannot buy its way onto the frontier with a latency 0.1 ms lower."""
    out = _frontier(("honest", 1.0000, 0.88, 0.0), ("fabricator", 0.9999, 0.21, 0.0))
    assert out["honest"]["on_frontier"] and out["fabricator"]["on_frontier"] is False
    assert out["fabricator"]["dominated_by"][0]["better_on"] == ["quality"]
    # without the CI rule (point estimates only) the 0.1 ms would have kept it on the frontier
    assert out["fabricator"]["latency_p50_s"] < out["honest"]["latency_p50_s"]


def test_unknown_quality_is_not_placed_and_unknown_cost_is_not_zero():
    resp, met = _noisy("closed_book", 1.0, 0.5, 0.0)
    met = [{**m, "quality_metric": float("nan")} for m in met]  # needs a context the system does not return
    r2, m2 = _noisy("rag", 2.0, 0.6, None, seed=1)  # an http system without cost_path / cost_per_call_usd
    r3, m3 = _noisy("rag_dear", 2.0, 0.6, 0.02, seed=2)
    axes = system_axes(pl.DataFrame(resp + r2 + r3), pl.DataFrame(met + m2 + m3), "quality_metric", n_boot=300)
    out = {r["system_id"]: r for r in pareto_frontier(axes).to_dicts()}
    assert out["closed_book"]["on_frontier"] is None and "quality unknown" in out["closed_book"]["explanation"]
    assert out["rag"]["cost_usd_per_case"] is None and out["rag"]["n_cost_unknown"] == 40
    assert "cost_usd_per_case unknown" in out["rag"]["explanation"]
    # the unknown cost is not $0: rag does not dominate rag_dear on cost (same quality and latency within noise)
    assert out["rag_dear"]["on_frontier"] and out["rag"]["on_frontier"]
