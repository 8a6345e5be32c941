"""The report's first screen: a release decision per system with each blocking gate's reason, and the gate matrix."""

import polars as pl

from hcat_pipeline.gates.apply import GATE_VERDICTS
from hcat_pipeline.reports.decision import decision_section, gate_matrix_section, gate_reason, judge_section


def _row(**kw) -> dict:
    base = {c: None for c in GATE_VERDICTS}
    base.update(kind="hard", table="metric_tables", statistic="mean", direction=">=", threshold=0.5, scope="overall", group="all",
                confidence=0.95, n_dropped=0, blocking=False, metric="m")  # fmt: skip
    return {**base, **kw}


GATES = pl.DataFrame([
    _row(gate="grounded", system_id="a", verdict="FAIL", estimate=0.31, ci_low=0.22, ci_high=0.40, n=40, blocking=True),
    _row(gate="abstains", system_id="a", verdict="INDETERMINATE", estimate=0.55, ci_low=0.30, ci_high=0.78, n=6, n_more=14,
         blocking=True, reason="CI straddles the threshold"),
    _row(gate="pii", system_id="a", verdict="INDETERMINATE", estimate=float("nan"), n=0, blocking=True, reason="no cases in scope"),
    _row(gate="grounded", system_id="b", verdict="PASS", estimate=0.81, ci_low=0.74, ci_high=0.88, n=40),
    _row(gate="tone", kind="soft", system_id="b", verdict="FAIL", estimate=0.2, ci_low=0.1, ci_high=0.3, n=40),
], schema=GATE_VERDICTS)  # fmt: skip


def test_decision_lists_each_blocking_gate_as_a_row_with_its_reason():
    sec, lines = decision_section(GATES, ["a", "b"])
    assert sec.columns == ["system", "release", "gate", "verdict", "evidence"]
    a = [r for r in sec.rows if r[0] == "a"]
    assert [r[2] for r in a] == ["grounded (hard)", "abstains (hard)", "pii (hard)", "hard PASSes (0)"]  # failures first
    assert {r[1] for r in a} == {"BLOCKED"} and [r[1] for r in sec.rows if r[0] == "b"] == ["CLEARED"]  # a soft FAIL does not block
    assert a[0][3] == "FAIL — 0.31 [0.22, 0.4] n=40, needs mean(m) >= 0.5 [rests on no human labels]"
    assert a[1][3].startswith("INDETERMINATE — 0.55 [0.3, 0.78] n=6") and "about 14 more case(s) would resolve it" in a[1][3]
    assert a[2][3].startswith("INDETERMINATE — no case in scope (n=0)") and "nan" not in a[2][3]
    assert sec.row_classes == ["FAIL", "INDETERMINATE", "INDETERMINATE", "PASS", "PASS"]
    assert lines == ["Release decision — a: BLOCKED by 3 gate(s); b: CLEARED."]


def test_a_count_gates_row_shows_its_flagged_answers_and_pending_confirmation():
    flagged = '[{"flag_id": "f1", "gate": "pii", "case_id": "c3", "system_id": "a", "detector": "pii", "span": "PERSON: John Doe", ' \
              '"answer": "John Doe", "status": "unconfirmed", "contradicted_by": null}]'
    gates = pl.DataFrame([_row(gate="pii", system_id="a", verdict="FAIL", statistic="count", direction="<=", threshold=0, estimate=0.01,
                               ci_low=0.0, ci_high=0.05, n=80, blocking=True, n_flagged=1, n_confirmed=0, n_unconfirmed=1,
                               n_overturned=0, n_contradicted=0, flagged=flagged, fail_evidence="pending_confirmation")],
                         schema=GATE_VERDICTS)  # fmt: skip
    sec, lines = decision_section(gates, ["a"])
    assert sec.rows[0][1] == "BLOCKED pending confirmation" and "pending confirmation" in sec.rows[0][3]
    assert sec.rows[0][4] == "0 confirmed / 1 unconfirmed / 0 overturned — c3: «PERSON: John Doe» [unconfirmed]"
    gates = gates.with_columns(pl.lit("pii detector").alias("detector"))
    matrix = gate_matrix_section(gates, {"pii detector": "false positives 1 of 4 reviewed flag(s), 0.25 [0.01, 0.81]"})
    assert matrix.rows[0][2:] == ["false positives 1 of 4 reviewed flag(s), 0.25 [0.01, 0.81]", "FAIL 0.01 (0✓ 1? 0✗)"]
    assert gate_matrix_section(gates).rows[0][2] == "no flag of this detector reviewed yet"


def test_gate_matrix_is_gate_by_system_hard_first():
    sec = gate_matrix_section(GATES)
    assert sec.columns == ["gate", "kind", "detector precision", "a", "b"]
    assert [r[0] for r in sec.rows] == ["abstains", "grounded", "pii", "tone"]
    assert sec.rows[1] == ["grounded", "hard", "", "FAIL 0.31", "pass 0.81"] and sec.rows[3] == ["tone", "soft", "", "", "FAIL 0.2"]
    assert sec.row_classes == ["INDETERMINATE", "FAIL", "INDETERMINATE", "PASS"]  # a soft FAIL does not colour its row
    assert not gate_matrix_section(None).available


def test_a_gate_that_could_not_run_reads_as_such():
    assert gate_reason(_row(gate="g", verdict="INDETERMINATE", n=0, error="table llm_judge_scores not available")) == (
        "g (hard): could not be evaluated — table llm_judge_scores not available")


def test_judge_section_shows_pass_rate_with_ci_and_validation():
    judge = pl.DataFrame({"system_id": ["a"] * 4, "dimension": ["groundedness"] * 4, "score": [5, 4, 2, None],
                          "passed": [True, True, False, None], "error": [None, None, None, "timeout"], "validated": [False] * 4})  # fmt: skip
    sec = judge_section(judge)
    assert sec.rows == [["a", "groundedness", "3", "1", "3.67", "0.67 [0.21, 0.94]", "no — never decides a gate"]]
    assert not judge_section(judge.head(0)).available


def test_the_first_screen_prints_each_pass_as_its_certificate_and_what_it_rests_on():
    gates = pl.DataFrame([
        _row(gate="no_prompt_injection", system_id="s", verdict="PASS", estimate=0.0, ci_low=0.0, ci_high=0.0495, n=59,
             certify_below=0.05, certificate="0 of 59 injection attempts succeeded: succeeded rate < 4.95% at 95% (certifies < 5%)",
             evidence="uncalibrated"),
        _row(gate="groundedness", system_id="s", verdict="PASS", estimate=0.9, ci_low=0.86, ci_high=0.93, n=40, threshold=0.8,
             certificate="mean 0.9 [0.86, 0.93] >= 0.8 at 95% (n=40, bootstrap; claim strong)", evidence="human_calibrated",
             human_pass_rate=0.84, human_pass_ci_low=0.78, human_pass_ci_high=0.9, n_labelled=120,
             threshold_source="calibrator (groundedness, campaign labels): P(human pass) = 0.5 at raw 0.8 (declared 0.5)"),
        _row(gate="abstains", system_id="s", verdict="INDETERMINATE", estimate=1.0, ci_low=0.05, ci_high=1.0, n=1, n_more=9,
             blocking=True, certificate="undecided on n=1: too few; ~9 more case(s) would decide it", evidence="borrowed_labels"),
    ], schema=GATE_VERDICTS)  # fmt: skip
    sec, _ = decision_section(gates, ["s"])
    blocking, certified = sec.rows[0][3], sec.rows[1][4]
    assert sec.rows[1][2] == "hard PASSes (2)"
    assert "no_prompt_injection (hard): PASS — 0 of 59 injection attempts succeeded" in certified and "rests on no human labels" in certified
    assert "human-pass rate 0.84 [0.78, 0.9] (active inference, 120 design labels)" in certified and "P(human pass) = 0.5 at raw 0.8" in certified
    assert "~9 more case(s) would decide it" in blocking and "rests on borrowed labels only" in blocking
