"""evaluate_gate verdicts, the gates file and evaluate_gates over tables (golden-eval §6)."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.gates import GatesFileError, GateSpec, evaluate_gate, evaluate_gates, load_gates, parse_gates
from hcat_pipeline.gates.apply import gate_summary, load_history
from hcat_pipeline.paths import PROJECT_ROOT


def _draw(n, p, seed):
    return np.random.default_rng(seed).binomial(1, p, n)


def test_indeterminate_on_small_sample_resolved_on_large():
    """Same distribution (pass rate 0.85) against 0.80: small → INDETERMINATE; large → PASS; against 0.90 → FAIL."""
    small = evaluate_gate(_draw(40, 0.85, 1), 0.80)
    assert small.verdict == "INDETERMINATE"
    assert small.ci_low < 0.80 < small.ci_high and small.n == 40
    assert small.n_more is not None and small.n_more > 0
    large = evaluate_gate(_draw(5000, 0.85, 2), 0.80)
    assert large.verdict == "PASS" and large.ci_low >= 0.80
    assert evaluate_gate(_draw(5000, 0.85, 2), 0.90).verdict == "FAIL"
    assert evaluate_gate(_draw(40, 0.85, 1), 0.90, direction="<=").verdict == "INDETERMINATE"


def test_n_more_roughly_resolves_the_verdict():
    """Drawing n + n_more cases from the same distribution resolves the verdict ~80 % of the time (power 0.8)."""
    first = evaluate_gate(np.r_[np.ones(45), np.zeros(15)], 0.70)  # 0.75 on 60 cases
    assert first.verdict == "INDETERMINATE"
    resolved = sum(evaluate_gate(_draw(first.n + first.n_more, 0.75, 100 + i), 0.70).verdict != "INDETERMINATE"
                   for i in range(20))  # fmt: skip
    assert resolved >= 13


def test_directions_and_exact_counts():
    x = np.full(200, 0.2) + np.random.default_rng(0).normal(0, 0.01, 200)
    assert evaluate_gate(x, 0.3, "<=").verdict == "PASS"
    assert evaluate_gate(x, 0.3, ">").verdict == "FAIL"
    assert evaluate_gate(x, 0.1, "<").verdict == "FAIL"
    leaks = np.zeros(300)
    assert evaluate_gate(leaks, 0, "<=", "count").verdict == "PASS"
    leaks[5] = 2
    one = evaluate_gate(leaks, 0, "<=", "count")
    assert (one.verdict, one.estimate, one.n_more) == ("FAIL", 1.0, None)


def test_too_few_cases_is_indeterminate_even_with_a_clean_ci():
    res = evaluate_gate([1.0] * 4, 0.5)
    assert res.verdict == "INDETERMINATE" and res.n_more == 6
    assert evaluate_gate([], 0.5).verdict == "INDETERMINATE"
    with pytest.raises(ValueError, match="direction"):
        evaluate_gate([1.0] * 20, 0.5, direction="=>")


def test_default_gates_file_is_valid_and_has_zero_tolerance_hard_gates():
    gates = load_gates(PROJECT_ROOT / "gates.yaml")
    hard = {g.name: g for g in gates.gates if g.kind == "hard"}
    assert hard["no_pii_leak"].statistic == "count" and hard["no_pii_leak"].threshold == 0
    assert hard["no_prompt_injection"].where == {"rule": "injection_resisted"}
    assert {"abstains_out_of_scope", "distractor_not_believed"} <= set(hard)
    assert any(g.kind == "trend" for g in gates.gates) and any(g.kind == "soft" for g in gates.gates)


def test_gates_file_errors_name_file_line_and_reason():
    text = "gates:\n  - name: g1\n    metric: m\n    threshold: 0.5\n    kind: hardd\n  - name: g2\n    metric: m\n    treshold: 1\n"
    with pytest.raises(GatesFileError) as e:
        parse_gates(text, "my_gates.yaml")
    msg = str(e.value)
    assert "my_gates.yaml:5: gates.0.kind (g1)" in msg
    assert "my_gates.yaml:8: gates.1.treshold (g2): unknown key" in msg
    assert "gates.1.threshold" in msg  # missing required field
    with pytest.raises(GatesFileError, match="duplicate gate names"):
        parse_gates("gates:\n  - {name: a, metric: m, threshold: 1}\n  - {name: a, metric: m, threshold: 1}\n")
    with pytest.raises(GatesFileError, match=":3: not valid YAML"):
        parse_gates("gates:\n  - [oops\n")


def _metric_table(seed=0, n=60, shift=0.0, systems=("good", "bad")):
    rng = np.random.default_rng(seed)
    rows = []
    for s in systems:
        for i in range(n):
            mean = 0.8 if s == "good" else 0.3
            rows.append({"case_id": f"c{i}", "system_id": s, "query_type": "simple" if i % 2 else "multi_hop",
                         "category": "happy_path", "score": float(np.clip(rng.normal(mean + shift, 0.05), 0, 1)),
                         "pii_leak": 1 if (s == "bad" and i == 3) else 0})  # fmt: skip
    return pl.DataFrame(rows)


def test_evaluate_gates_per_system_scope_and_errors():
    table = _metric_table()
    gates = [
        GateSpec(name="quality", kind="soft", metric="score", threshold=0.6, scope="query_type"),
        GateSpec(name="pii", kind="hard", metric="pii_leak", statistic="count", direction="<=", threshold=0),
        GateSpec(name="typo", kind="hard", metric="scoer", threshold=0.5),
        GateSpec(name="only_good", kind="soft", metric="score", threshold=0.6, systems=["go*"]),
        GateSpec(name="strata", kind="soft", metric="score", threshold=0.6, scope="stratum"),
    ]
    cases = pl.DataFrame({"case_id": [f"c{i}" for i in range(60)], "stratum_label": ["a" if i < 30 else "b" for i in range(60)]})
    out = evaluate_gates(gates, {"metric_tables": table}, cases=cases)
    q = out.filter(pl.col("gate") == "quality")
    assert q.height == 4 and set(q["group"]) == {"simple", "multi_hop"}
    assert set(q.filter(pl.col("system_id") == "good")["verdict"]) == {"PASS"}
    assert set(q.filter(pl.col("system_id") == "bad")["verdict"]) == {"FAIL"}
    pii = out.filter(pl.col("gate") == "pii").sort("system_id")
    assert pii["verdict"].to_list() == ["FAIL", "PASS"] and pii["blocking"].to_list() == [True, False]
    typo = out.filter(pl.col("gate") == "typo")
    assert typo["verdict"].to_list() == ["INDETERMINATE"] and "scoer" in typo["error"][0] and typo["blocking"][0]
    assert out.filter(pl.col("gate") == "only_good")["system_id"].to_list() == ["good"]
    assert set(out.filter(pl.col("gate") == "strata")["group"]) == {"a", "b"}
    summary = {r["gate"]: r for r in gate_summary(out).to_dicts()}
    assert summary["pii"]["verdict"] == "FAIL" and summary["pii"]["blocking"] and not summary["quality"]["blocking"]


def test_trend_gate_flags_a_confirmed_decline_only(tmp_path):
    gate = GateSpec(name="trend", kind="trend", metric="score", threshold=0.0, consecutive=3, systems=["good"])
    nights = ["2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04"]
    for k, night in enumerate(nights[:3]):
        (tmp_path / "metric_tables" / "v1").mkdir(parents=True, exist_ok=True)
        _metric_table(seed=k, shift=-0.03 * k).write_parquet(tmp_path / "metric_tables" / "v1" / f"{night}.parquet")
    history = {"metric_tables": load_history(tmp_path, "metric_tables", "v1", nights[3])}
    assert [label for label, _ in history["metric_tables"]] == [f"v1|{n}" for n in nights[:3]]
    declining = evaluate_gates([gate], {"metric_tables": _metric_table(seed=9, shift=-0.09)}, history=history)
    assert declining["verdict"].to_list() == ["FAIL"] and "declined over 3 runs" in declining["reason"][0]
    assert not declining["blocking"][0]
    recovered = evaluate_gates([gate], {"metric_tables": _metric_table(seed=9, shift=0.0)}, history=history)
    assert recovered["verdict"].to_list() == ["PASS"] and "no decline" in recovered["reason"][0]
    short = evaluate_gates([gate], {"metric_tables": _metric_table(seed=9, shift=-0.09)}, history={"metric_tables": history["metric_tables"][-1:]})
    # too little history is no evidence of no decline: NOT_APPLICABLE (never blocks, never a PASS)
    assert short["verdict"].to_list() == ["NOT_APPLICABLE"] and "earlier run(s)" in short["reason"][0] and not short["blocking"][0]
