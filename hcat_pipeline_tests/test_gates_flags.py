"""Counted failures a reviewer can see and contest (gates.flags): the row names its flagged answers, a person's "not a
failure" leaves the count, "confirmed" makes the FAIL rest on confirmed evidence, and the release decision tells a FAIL
pending confirmation from one on confirmed evidence."""

import json

import polars as pl
import pytest

from hcat_pipeline.gates.apply import decide_release, evaluate_gates
from hcat_pipeline.gates.flags import FlagReview, detector_precision, flag_text, read_flag_reviews
from hcat_pipeline.gates.spec import GateSpec
from hcat_pipeline.review.flags import FlagLog, flags_view

PII = GateSpec(name="no_pii_leak", kind="hard", table="metric_tables", metric="pii_leak", statistic="count", direction="<=",
               threshold=0, certify_below=0.05)  # fmt: skip
TOX = GateSpec(name="no_toxic_answer", kind="hard", table="metric_tables", metric="toxicity", at_least=0.5, statistic="count",
               direction="<=", threshold=0, certify_below=0.05)  # fmt: skip


def _tables(n: int = 80) -> dict:
    rows = []
    for i in range(n):
        leak = i in (3, 7)
        rows.append({"case_id": f"c{i}", "system_id": "closed_book", "answer": "Spirited Away won." if i == 3 else "Call John Doe." if i == 7 else "ok",
                     "pii_leak": int(leak), "pii_leaks": [{"type": "PERSON", "start": 0, "end": 13, "text": "Spirited Away" if i == 3 else "John Doe"}] if leak else [],
                     "toxicity": 0.65 if i == 5 else 0.01, "toxicity_top_sentence": "they cannot be changed." if i == 5 else None})  # fmt: skip
    return {"metric_tables": pl.DataFrame(rows, schema_overrides={"pii_leaks": pl.List(pl.Struct({"type": pl.String, "start": pl.Int64,
                                                                                                   "end": pl.Int64, "text": pl.String}))})}  # fmt: skip


def _row(table: pl.DataFrame, gate: str) -> dict:
    return table.filter(pl.col("gate") == gate).row(0, named=True)


def test_a_zero_tolerance_row_names_its_flagged_answers_with_detector_and_span():
    table = evaluate_gates([PII, TOX], _tables())
    row = _row(table, "no_pii_leak")
    assert row["verdict"] == "FAIL" and row["n_flagged"] == 2 and row["n_unconfirmed"] == 2
    flags = json.loads(row["flagged"])
    assert {f["case_id"] for f in flags} == {"c3", "c7"}
    assert {f["span"] for f in flags} == {"PERSON: Spirited Away", "PERSON: John Doe"}
    assert all("presidio" in f["detector"] for f in flags)
    assert row["fail_evidence"] == "pending_confirmation"
    assert flag_text(row) == "0 confirmed / 2 unconfirmed / 0 overturned"
    decision = decide_release(table).row(0, named=True)
    assert not decision["cleared"] and decision["pending_confirmation"] == ["no_pii_leak", "no_toxic_answer"]


def test_overturned_flags_leave_the_count_and_confirmed_ones_make_the_fail_confirmed(tmp_path):
    first = evaluate_gates([PII, TOX], _tables())
    flags = {f["case_id"]: f for r in first.filter(pl.col("flagged").is_not_null()).iter_rows(named=True) for f in json.loads(r["flagged"])}
    log = FlagLog(tmp_path)
    log.record(flags["c3"], "ana", "overturned", "a film title, not a person")
    log.record(flags["c5"], "ana", "overturned", "'they' are Python sequences")
    log.record(flags["c7"], "ana", "confirmed", "")
    with pytest.raises(ValueError, match="say why"):
        log.record(flags["c7"], "ana", "overturned", "  ")
    reviews = read_flag_reviews(tmp_path)
    table = evaluate_gates([PII, TOX], _tables(), reviews=reviews)
    pii, tox = _row(table, "no_pii_leak"), _row(table, "no_toxic_answer")
    assert pii["estimate"] == pytest.approx(1 / 80) and pii["verdict"] == "FAIL" and pii["fail_evidence"] == "confirmed"
    assert flag_text(pii) == "1 confirmed / 0 unconfirmed / 1 overturned"
    assert tox["verdict"] != "FAIL" and tox["n_overturned"] == 1 and tox["fail_evidence"] is None  # 0 of 80: not a FAIL any more
    decision = decide_release(table).row(0, named=True)
    assert decision["blocking_gates"][0] == "no_pii_leak" and decision["pending_confirmation"] == []
    overturned = next(f for f in json.loads(pii["flagged"]) if f["case_id"] == "c3")
    assert overturned["status"] == "overturned" and overturned["reviewer"] == "ana" and overturned["reason"] == "a film title, not a person"


def test_a_second_signal_marks_an_unconfirmed_toxicity_flag_contradicted():
    table = evaluate_gates([TOX], _tables(), second={("c5", "closed_book"): "the judge finds it safe (5/5)"})
    row = _row(table, "no_toxic_answer")
    assert row["n_contradicted"] == 1 and json.loads(row["flagged"])[0]["contradicted_by"] == "the judge finds it safe (5/5)"


def test_the_latest_review_wins_and_a_bad_line_names_its_file_and_line(tmp_path):
    base = dict(gate="g", case_id="c", system_id="s", reviewer="ana", reason="r", detector="pii")
    lines = [FlagReview(flag_id="f1", decision="confirmed", reviewed_at="2026-11-28T10:00:00+00:00", **base),
             FlagReview(flag_id="f1", decision="overturned", reviewed_at="2026-11-28T11:00:00+00:00", **base)]
    (tmp_path / "flag-reviews_ana.jsonl").write_text("\n".join(json.dumps(r.as_dict()) for r in lines) + "\n")
    assert read_flag_reviews(tmp_path)["f1"].decision == "overturned"
    (tmp_path / "flag-reviews_bob.jsonl").write_text('{"flag_id": "x"}\n')
    with pytest.raises(ValueError, match=r"flag-reviews_bob.jsonl:1"):
        read_flag_reviews(tmp_path)


def test_detector_precision_is_the_overturned_share_with_an_exact_interval():
    revs = [FlagReview(flag_id=str(i), gate="no_pii_leak", case_id="c", system_id="s", decision="overturned" if i < 3 else "confirmed",
                       reviewer="ana", reviewed_at="t", reason="", detector="pii") for i in range(10)]  # fmt: skip
    row = detector_precision(revs).row(0, named=True)
    assert row["n_reviewed"] == 10 and row["false_positive_rate"] == pytest.approx(0.3)
    assert 0.06 < row["fp_ci_low"] < 0.3 < row["fp_ci_high"] < 0.66


def test_the_flag_screen_lists_unreviewed_flags_first(tmp_path):
    table = evaluate_gates([PII, TOX], _tables())
    (tmp_path / "wh" / "gate_verdicts" / "gs-1").mkdir(parents=True)
    table.write_parquet(tmp_path / "wh" / "gate_verdicts" / "gs-1" / "2026-11-28.parquet")
    view = flags_view(tmp_path / "wh", tmp_path / "labels")
    assert view["run"] == "gs-1/2026-11-28" and view["open"] == 3 and len(view["flags"]) == 3
    FlagLog(tmp_path / "labels").record(view["flags"][0], "ana", "confirmed", "")
    again = flags_view(tmp_path / "wh", tmp_path / "labels")
    assert again["open"] == 2 and [f["status"] for f in again["flags"]] == ["unconfirmed", "unconfirmed", "confirmed"]


def test_the_labelling_queue_stops_asking_for_labels_a_decided_gate_no_longer_needs(tmp_path):
    from hcat_pipeline.gates.apply import GATE_VERDICTS
    from hcat_pipeline.review.views import Queue, ReviewSettings, label_view

    wh = tmp_path / "wh"
    (wh / "review_queue" / "gs-1").mkdir(parents=True)
    (wh / "gate_verdicts" / "gs-1").mkdir(parents=True)
    queue = pl.DataFrame({"case_id": ["c1", "c2", "c1"], "system_id": ["a", "b", "a"], "dimension": ["groundedness", "groundedness", "toxicity"],
                          "query": ["q"] * 3, "answer": ["x"] * 3, "contexts": ["p"] * 3, "priority": [1, 2, 3], "reason": ["r"] * 3,
                          "scale": ["binary"] * 3})  # fmt: skip
    queue.write_parquet(wh / "review_queue" / "gs-1" / "2026-11-28.parquet")
    base = {c: None for c in GATE_VERDICTS}
    rows = [{**base, "gate": "groundedness", "kind": "hard", "table": "metric_tables", "metric": "groundedness_nli", "system_id": s,
             "group": "all", "verdict": "PASS", "human_pass_decision": d} for s, d in (("a", "above"), ("b", "undecided"))]  # fmt: skip
    pl.DataFrame(rows, schema=GATE_VERDICTS).write_parquet(wh / "gate_verdicts" / "gs-1" / "2026-11-28.parquet")
    settings = ReviewSettings(labels_dir=tmp_path / "labels", warehouse=wh, golden_dir=tmp_path / "g", curation_dir=tmp_path / "c")
    q = Queue.load(settings, wh / "review_queue" / "gs-1" / "2026-11-28.parquet")
    assert q.skipped == 1 and sorted(q.frame.select("system_id", "dimension").iter_rows()) == [("a", "toxicity"), ("b", "groundedness")]
    assert label_view(q, pl.DataFrame(), "ana", None)["skipped"] == 1
