"""Issue 61 item 6: a contaminated case (found in a reference corpus) decides no gate and leaves the headline; the count
and the cases are said on the first screen."""

import polars as pl

from hcat_pipeline.gates.contamination import (
    case_risk,
    contamination_note,
    contamination_risk,
    flagged_cases,
    read_reference_corpora,
    without_cases,
)

CASES = pl.DataFrame({"case_id": [f"c{i}" for i in range(12)],
                      "query": [f"What does option number {i} of the frobnicator tool configure exactly?" for i in range(12)],
                      "reference_answer": [f"Option {i} configures the widget size of the frobnicator." for i in range(12)]})  # fmt: skip


def test_a_case_copied_into_a_reference_corpus_is_flagged_and_left_out_of_the_gates(tmp_path):
    from hcat_pipeline.gates.apply import evaluate_gates
    from hcat_pipeline.gates.spec import GateSpec

    (tmp_path / "leaked.txt").write_text("A public benchmark dump.\n\n" + CASES["query"][3] + "\n\nSomething else entirely, unrelated.\n")
    docs, errors = read_reference_corpora(tmp_path)
    risk = case_risk(contamination_risk(CASES, docs))
    assert errors == [] and flagged_cases(risk) == ["c3"]
    # the system fails only on the contaminated case: counted, the zero-tolerance gate FAILs; left out, it PASSes
    checks = pl.DataFrame({"case_id": CASES["case_id"], "system_id": ["s"] * 12, "rule": ["answer_correct"] * 12,
                           "verdict": ["fail" if i == 3 else "pass" for i in range(12)]})  # fmt: skip
    gate = GateSpec(name="no_wrong", kind="hard", table="behaviour_checks", where={"rule": "answer_correct"}, metric="verdict",
                    equals="fail", statistic="count", direction="<=", threshold=0, min_n=5)  # fmt: skip
    before = evaluate_gates([gate], {"behaviour_checks": checks}, CASES)["verdict"].to_list()
    after = evaluate_gates([gate], without_cases({"behaviour_checks": checks}, flagged_cases(risk)), CASES)
    assert before == ["FAIL"] and after["verdict"].to_list() == ["PASS"] and after["n"].to_list() == [11]
    note = contamination_note(flagged_cases(risk))
    assert note.startswith("1 case(s) at contamination risk high left out of the gates and the headline") and "c3" in note


def test_without_a_reference_corpus_nothing_is_left_out(tmp_path):
    risk = case_risk(contamination_risk(CASES, []))
    tables = {"behaviour_checks": pl.DataFrame({"case_id": ["c1"]}), "none": None, "no_case": pl.DataFrame({"x": [1]})}
    assert flagged_cases(risk) == [] and flagged_cases(None) == [] and without_cases(tables, []) is tables
    assert contamination_note([]) == ""
    out = without_cases(tables, ["c1"])
    assert out["behaviour_checks"].height == 0 and out["none"] is None and out["no_case"].height == 1
