"""Secondary rankings (golden-eval §3.2.4, §8.3): quality per second and per dollar on systems whose order is known;
unknown cost stays unknown; latency and cost budgets as gates on the responses table."""

import polars as pl

from hcat_pipeline.gates.apply import evaluate_gates
from hcat_pipeline.gates.efficiency import efficiency
from hcat_pipeline.gates.pareto import system_axes
from hcat_pipeline.gates.spec import parse_gates

N = 30


def _frames(systems: dict[str, tuple[float, float, float | None]]):
    """system → (quality, seconds, usd or None) on every case (small deterministic wobble so CIs exist)."""
    resp, met = [], []
    for sid, (q, s, usd) in systems.items():
        for k in range(N):
            w = (k % 5 - 2) * 0.01
            resp.append({"case_id": f"c{k}", "system_id": sid, "latency_s": s * (1 + w), "cost_usd": None if usd is None else usd * (1 + w),
                         "error": None})
            met.append({"case_id": f"c{k}", "system_id": sid, "groundedness_nli": q + w})
    return pl.DataFrame(resp, schema_overrides={"cost_usd": pl.Float64}), pl.DataFrame(met)


def test_a_slightly_better_but_slow_and_dear_system_loses_the_secondary_rankings():
    resp, met = _frames({"big": (0.80, 8.0, 0.020), "small": (0.70, 1.0, 0.001), "http": (0.60, 2.0, None)})
    eff = {r["system_id"]: r for r in efficiency(resp, met, "groundedness_nli", n_boot=300).iter_rows(named=True)}
    assert eff["big"]["rank_quality"] == 1 and eff["small"]["rank_quality"] == 2
    assert eff["small"]["rank_per_second"] == 1 and eff["http"]["rank_per_second"] == 2 and eff["big"]["rank_per_second"] == 3
    assert abs(eff["small"]["quality_per_second"] - 0.70) < 0.01 and eff["small"]["quality_per_second_ci_low"] < 0.70 < eff["small"]["quality_per_second_ci_high"]
    assert eff["small"]["rank_per_usd"] == 1 and eff["big"]["rank_per_usd"] == 2 and not eff["small"]["rank_per_usd_tied"]
    assert eff["http"]["quality_per_usd"] is None and eff["http"]["rank_per_usd"] is None and "cost unknown for 30" in eff["http"]["efficiency_note"]
    axes = system_axes(resp, met, "groundedness_nli", n_boot=200)
    assert set(axes.columns) >= {"quality_per_usd", "rank_per_second"} and axes.filter(pl.col("system_id") == "http")["quality_per_usd"][0] is None


def test_latency_and_cost_budgets_gate_the_responses_table_with_cis():
    resp, _ = _frames({"fast": (0.7, 1.0, 0.001), "slow": (0.7, 12.0, 0.03), "http": (0.7, 1.0, None)})
    gates = parse_gates("""
gates:
  - {name: latency_p95, kind: hard, table: rag_responses, metric: latency_s, statistic: p95, direction: "<=", threshold: 5}
  - {name: latency_p50, kind: soft, table: rag_responses, metric: latency_s, statistic: p50, direction: "<=", threshold: 5}
  - {name: cost_per_answer, kind: soft, table: rag_responses, metric: cost_usd, statistic: mean, direction: "<=", threshold: 0.01}
""")
    v = {(r["gate"], r["system_id"]): r for r in evaluate_gates(gates, {"rag_responses": resp}).iter_rows(named=True)}
    assert v[("latency_p95", "fast")]["verdict"] == "PASS" and v[("latency_p95", "slow")]["verdict"] == "FAIL"
    assert v[("latency_p95", "slow")]["blocking"] and v[("latency_p95", "slow")]["ci_low"] is not None
    assert v[("cost_per_answer", "slow")]["verdict"] == "FAIL" and v[("cost_per_answer", "fast")]["verdict"] == "PASS"
    unknown = v[("cost_per_answer", "http")]  # every cost null: no evidence, never a pass at $0
    assert unknown["verdict"] == "INDETERMINATE" and unknown["n"] == 0 and unknown["n_dropped"] == N
