"""The LLM judge feeds the gates (validated rows only, golden-eval §5.6) and the review queue (unsure judge or judge ≠
metric first, §5.5)."""

import polars as pl

from hcat_pipeline.calibration.campaign import design_queue, judge_review_flags
from hcat_pipeline.calibration.design import DesignConfig
from hcat_pipeline.gates import evaluate_gates
from hcat_pipeline.gates.spec import GateSpec
from hcat_pipeline.judge.scoring import judge_gate_table


def _judge(validated_groundedness: bool) -> pl.DataFrame:
    rows = []
    for i in range(12):
        for dim, validated in (("groundedness", validated_groundedness), ("safety", False)):
            rows.append({"case_id": f"c{i}", "system_id": "s", "dimension": dim, "score": 5 if i < 11 else 1, "passed": i < 11,
                         "confidence": "low" if i == 3 else "high", "validated": validated})  # fmt: skip
    return pl.DataFrame(rows)


def test_only_validated_judge_rows_decide_a_gate():
    gate = GateSpec(name="judge_grounded", kind="hard", table="llm_judge_scores", metric="groundedness", statistic="mean",
                    direction=">=", threshold=0.5)  # fmt: skip
    table = judge_gate_table(_judge(validated_groundedness=True))
    assert set(table.columns) >= {"case_id", "system_id", "groundedness", "groundedness_score", "safety"} and table.height == 12
    passed = evaluate_gates([gate], {"llm_judge_scores": table}).row(0, named=True)
    assert passed["verdict"] != "INDETERMINATE" and passed["n"] == 12 and abs(passed["estimate"] - 11 / 12) < 1e-9
    unvalidated = evaluate_gates([gate], {"llm_judge_scores": judge_gate_table(_judge(validated_groundedness=False))}).row(0, named=True)
    assert unvalidated["verdict"] == "INDETERMINATE" and unvalidated["n"] == 0  # the judge never decides unvalidated
    assert judge_gate_table(_judge(True).head(0)) is None  # judge skipped: the gate says the table is missing
    missing = evaluate_gates([gate], {"llm_judge_scores": None}).row(0, named=True)
    assert "not available" in missing["error"]


def test_unsure_or_disagreeing_judge_makes_items_likelier_to_be_asked_never_certain():
    calibrated = pl.DataFrame({
        "case_id": [f"c{i}" for i in range(12)], "system_id": ["s"] * 12, "dimension": ["groundedness"] * 12,
        "raw_score": [0.9] * 12, "calibrated_probability": [0.9] * 12, "prediction_set": ["{1}"] * 12,
        "machine_verdict": ["pass"] * 12, "stratum": [0] * 12, "query_type": ["simple"] * 12,
    })  # fmt: skip
    flags = judge_review_flags(_judge(True), calibrated)
    reasons = dict(zip(flags["case_id"], flags["judge_reason"], strict=True))
    assert set(reasons) == {"c3", "c11"}
    assert reasons["c11"].startswith("judge disagrees with the metric: judge 1/5 (fail) vs metric pass")
    assert reasons["c3"].startswith("judge unsure: low confidence")
    drawn = design_queue(calibrated.join(flags, on=["case_id", "system_id", "dimension"], how="left"), DesignConfig(budget=3))
    pi = dict(zip(drawn["case_id"], drawn["inclusion_probability"], strict=True))
    assert pi["c3"] == pi["c11"] > pi["c0"] > 0 and max(pi.values()) < 1  # raised, not made certain
    why = dict(zip(drawn["case_id"], drawn["reason"], strict=True))
    assert "(raised: judge unsure" in why["c3"] and "(raised: judge disagrees" in why["c11"] and "raised" not in why["c0"]
    assert judge_review_flags(None, calibrated).height == 0
