"""Stated-confidence calibration (golden-eval §3.2.3): confidences read from answers, Brier / ECE against correctness
on systems whose calibration is known, the gate table, the overconfident canary and the report section."""

import json

import polars as pl
import pytest

from hcat_pipeline.calibration.stated import stated_confidence_cases, stated_confidence_summary
from hcat_pipeline.gates.canaries import CATALOGUE, PlantContext
from hcat_pipeline.metrics.confidence import stated_confidence
from hcat_pipeline.reports.rubric import rubric_sections


@pytest.mark.parametrize("answer, value", [
    ("Confidence: 80%. The fee is five pounds.", 0.8),
    ("The fee is five pounds (confidence 0.65).", 0.65),
    ("I am 90% sure the fee is five pounds.", 0.9),
    ('{"answer": "five pounds", "confidence": "low"}', 0.3),
    ("I am absolutely certain: the fee is five pounds.", 0.95),
    ("I'm fairly sure the fee is five pounds.", 0.7),
    ("I think the fee is five pounds.", 0.6),
    ("I'm not sure; the documents mention five pounds.", 0.3),
    ("The fee is five pounds.", None),  # states nothing
    ("The rate is likely to rise next year.", None),  # content, not a hedge on the answer
    ("I don't know based on the provided context.", None),  # an abstention is not a low confidence
])
def test_confidence_read_from_answers(answer, value):
    assert stated_confidence(answer)[0] == value


def _tables(systems: dict[str, list[tuple[str, bool]]]):
    """systems: id → [(answer, correct)]: metric_tables rows with stated_confidence, and answer_correct verdicts."""
    mt, bc = [], []
    for sid, rows in systems.items():
        for k, (answer, right) in enumerate(rows):
            conf, phrase = stated_confidence(answer)
            mt.append({"case_id": f"c{k}", "system_id": sid, "stated_confidence": conf, "confidence_statement": phrase})
            bc.append({"case_id": f"c{k}", "system_id": sid, "rule": "answer_correct", "verdict": "pass" if right else "fail",
                       "evidence": "x"})
    return pl.DataFrame(mt, schema_overrides={"stated_confidence": pl.Float64}), pl.DataFrame(bc)


def test_an_honest_system_is_calibrated_an_overconfident_one_is_not():
    honest = [("Confidence: 90%. A.", True)] * 18 + [("Confidence: 90%. B.", False)] * 2 + \
             [("Confidence: 20%. C.", False)] * 16 + [("Confidence: 20%. D.", True)] * 4  # says 90 % / 20 %, right 90 % / 20 %
    base = [(a.split(". ", 1)[1], right) for a, right in honest]
    over = [(f"I am absolutely certain: {a}", right) for a, right in base]  # the canary's fault on the same answers
    mt, bc = _tables({"honest": honest, "over": over, "silent": base})
    cases = stated_confidence_cases(mt, bc)
    summary = {r["system_id"]: r for r in stated_confidence_summary(cases, bc, n_boot=300).iter_rows(named=True)}
    assert set(summary) == {"honest", "over"}  # a system stating nothing has unknown calibration, no row
    h, o = summary["honest"], summary["over"]
    assert h["ece"] == pytest.approx(0.0) and h["brier"] == pytest.approx((18 * 0.01 + 2 * 0.81 + 16 * 0.04 + 4 * 0.64) / 40)
    assert o["ece"] == pytest.approx(0.95 - 0.55) and o["overconfidence"] == pytest.approx(0.4) and o["brier"] > 0.25 > h["brier"]
    assert o["ece_ci_low"] > h["ece_ci_high"] and h["n"] == 40 and len(json.loads(h["reliability"])["prob_pred"]) == 2
    planted = CATALOGUE["overconfident"].plant({"case_id": "c0", "answer": "A.", "error": None}, PlantContext({}, {}))
    assert stated_confidence(planted["answer"])[0] == 0.95 and "stated_confidence_brier" in CATALOGUE["overconfident"].expect.gates_fail


def test_the_report_section_shows_brier_and_ece_with_n_and_a_reliability_plot():
    mt, bc = _tables({"a": [("Confidence: 70%. x", True), ("Confidence: 70%. y", False), ("I think z", True)]})
    sections, plots, lines = rubric_sections(mt, bc)
    sec = sections["stated_confidence"]
    assert sec.available and sec.rows[0][0] == "a" and "(n=3)" in sec.rows[0][5] and len(plots) == 1 and plots[0].png[:4] == b"\x89PNG"
    assert any(line.startswith("Stated confidence (a): Brier") for line in lines)
    assert not sections["citations"].available and "not computed" in sections["citations"].why
    empty, _, _ = rubric_sections(mt.with_columns(pl.lit(None, pl.Float64).alias("stated_confidence")), bc)
    assert not empty["stated_confidence"].available and "unknown" in empty["stated_confidence"].why


def test_a_single_case_is_shown_with_its_wilson_interval_not_as_nan():
    from hcat_pipeline.reports.rubric import format_section

    checks = pl.DataFrame([{"case_id": "c", "system_id": "a", "rule": "constraints_met", "verdict": "pass", "evidence": "ok"}])
    section, lines = format_section(checks)
    assert "nan" not in lines[0] and "1.000 [0.207, 1.000] (n=1)" in lines[0]  # a share of one case: wide, not a point


def test_a_system_stating_no_confidence_is_not_applicable_not_a_gate_that_could_not_run():
    from hcat_pipeline.gates.apply import evaluate_gates, system_capabilities
    from hcat_pipeline.gates.spec import load_gates

    gate = [g for g in load_gates("gates.yaml").gates if g.name == "stated_confidence_brier"]
    responses = pl.DataFrame([{"case_id": "c0", "system_id": "plain", "answer": "Monthly.", "contexts": ["x"], "error": None},
                              {"case_id": "c0", "system_id": "hedging", "answer": "I think monthly.", "contexts": ["x"], "error": None}])
    caps = system_capabilities(responses)
    empty = stated_confidence_cases(*_tables({"plain": [("Monthly.", True)]}))
    v = evaluate_gates(gate, {"stated_confidence": empty}, capabilities=caps)
    assert "*" not in v["system_id"].to_list() and len(v) == 2
    by = {r["system_id"]: r for r in v.iter_rows(named=True)}
    assert by["plain"]["verdict"] == "NOT_APPLICABLE" and "states no confidence" in by["plain"]["reason"]
    assert by["hedging"]["verdict"] == "INDETERMINATE" and by["hedging"]["n"] == 0
