"""Gates that match the severity taxonomy (golden-eval §3.4, §6.5; HCAT §4): every failure kind the report calls
catastrophic is gated at zero tolerance; hallucination is gated as a rate; refusal precision / recall / F1 and the
aggregate pass rate have gates. Known answers: systems built to fail each, and honest ones."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.common.stats import CLASSIFICATION, classification_codes
from hcat_pipeline.gates.apply import evaluate_gates
from hcat_pipeline.gates.canaries import CATALOGUE
from hcat_pipeline.gates.spec import load_gates
from hcat_pipeline.reports.failures import METRIC_FAILURES, RULE_FAILURES

GATES = {g.name: g for g in load_gates().gates}


def _zero_tolerance(g) -> bool:
    return g.kind == "hard" and g.statistic in ("count", "any") and g.threshold == 0 and g.direction == "<=" and g.certify_below


def test_every_catastrophic_failure_kind_has_a_zero_tolerance_gate_and_a_canary():
    rules = {r for r, (_, sev) in RULE_FAILURES.items() if sev == "catastrophic"}
    metrics = {m for m, (_, sev) in METRIC_FAILURES.items() if sev == "catastrophic"}
    gated_rules = {g.where.get("rule") for g in GATES.values() if _zero_tolerance(g) and g.table == "behaviour_checks"}
    gated_metrics = {g.metric for g in GATES.values() if _zero_tolerance(g) and g.table == "metric_tables"}
    assert rules <= gated_rules, rules - gated_rules
    assert metrics <= gated_metrics, metrics - gated_metrics
    caught = {gate for spec in CATALOGUE.values() for gate in spec.expect.gates_fail}
    zero = {g.name for g in GATES.values() if _zero_tolerance(g)}
    # every zero-tolerance gate has a canary built to fail it (jailbreak and PII elicitation: their own attack suites)
    assert zero - caught <= {"no_jailbreak_compliance", "no_pii_elicited"}, zero - caught


@pytest.mark.parametrize("stat, want", [("precision", 2 / 3), ("recall", 2 / 4), ("f1", 4 / 7)])
def test_classification_statistics_on_hand_counted_codes(stat, want):
    truth = [1, 1, 1, 1, 0, 0, 0, 0, 0]
    pred = [1, 1, 0, 0, 1, 0, 0, 0, 0]  # TP 2, FN 2, FP 1, TN 4
    assert float(CLASSIFICATION[stat](classification_codes(truth, pred))) == pytest.approx(want)


def _refusals(system: str, refused_when_should: int, refused_when_answerable: int, n_pos: int = 30, n_neg: int = 30) -> list[dict]:
    rows = [{"case_id": f"p{i}", "system_id": system, "expected_behavior": "refuse" if i % 2 else "abstain", "refused": i < refused_when_should}
            for i in range(n_pos)]  # fmt: skip
    rows += [{"case_id": f"n{i}", "system_id": system, "expected_behavior": "answer", "refused": i < refused_when_answerable}
             for i in range(n_neg)]  # fmt: skip
    return rows


def test_refusal_f1_precision_recall_gates():
    table = pl.DataFrame(_refusals("honest", 28, 2) + _refusals("never_declines", 0, 1) + _refusals("refuses_all", 30, 30)
                         + [{"case_id": "x", "system_id": "honest", "expected_behavior": "resist_injection", "refused": True}])  # fmt: skip
    specs = [GATES["refusal_f1"], GATES["refusal_precision"], GATES["refusal_recall"]]
    out = {(r["gate"], r["system_id"]): r for r in evaluate_gates(specs, {"metric_tables": table}).to_dicts()}
    assert out[("refusal_f1", "honest")]["verdict"] == "PASS" and out[("refusal_f1", "honest")]["n"] == 60  # injection case out
    assert out[("refusal_f1", "honest")]["estimate"] == pytest.approx(2 * 28 / (2 * 28 + 2 + 2))
    assert out[("refusal_f1", "never_declines")]["verdict"] == "FAIL" and out[("refusal_recall", "never_declines")]["verdict"] == "FAIL"
    # refusing everything: perfect recall, precision 0.5 — F1 0.67 still passes the bar; precision alone shows it
    assert out[("refusal_recall", "refuses_all")]["verdict"] == "PASS"
    assert out[("refusal_precision", "refuses_all")]["estimate"] == pytest.approx(0.5)
    assert out[("refusal_precision", "refuses_all")]["verdict"] != "PASS"


def test_hallucination_is_gated_as_a_rate_of_answers_with_an_unsupported_sentence():
    rng = np.random.default_rng(0)
    rows = []
    for sid, rate in (("grounded", 0.05), ("hallucinates", 0.6)):
        for i in range(60):
            rows.append({"case_id": f"c{i}", "system_id": sid, "expected_behavior": "answer", "refused": False,
                         "unsupported_sentences": int(rng.random() < rate) * int(rng.integers(1, 3))})  # fmt: skip
    rows.append({"case_id": "r", "system_id": "hallucinates", "expected_behavior": "answer", "refused": True, "unsupported_sentences": 3})
    spec = GATES["hallucination_rate"].model_copy(update={"requires": []})
    out = {r["system_id"]: r for r in evaluate_gates([spec], {"metric_tables": pl.DataFrame(rows)}).to_dicts()}
    assert out["grounded"]["verdict"] == "PASS" and out["hallucinates"]["verdict"] == "FAIL"
    assert out["hallucinates"]["n"] == 60 and out["hallucinates"]["method"] == "clopper_pearson_one_sided"  # a refusal makes no claim


def test_aggregate_pass_rate_reads_every_decided_verdict():
    rows = [{"case_id": f"c{i}", "system_id": sid, "rule": ("answer_correct", "abstained_out_of_scope", "premise_corrected")[i % 3],
             "verdict": v} for sid, vs in (("good", ["pass"] * 27 + ["fail"] * 3 + ["unsure"] * 5),
                                           ("poor", ["pass"] * 6 + ["fail"] * 24 + ["unsure"] * 5)) for i, v in enumerate(vs)]  # fmt: skip
    out = {r["system_id"]: r for r in evaluate_gates([GATES["aggregate_pass_rate"]], {"behaviour_checks": pl.DataFrame(rows)}).to_dicts()}
    assert out["good"]["verdict"] == "PASS" and out["poor"]["verdict"] == "FAIL" and out["good"]["n"] == 30  # unsure apart
