"""Review built in (golden-eval §2.4-2.5, issue 47): every case carries who reviewed it, when, the verdict, difficulty and
scoring notes; the curate screen shows one case a screen, unreviewed and likeliest unsound first, with the source
passage and the reference sentence marked; the campaign file chooses whether the gates read all cases or only reviewed
ones, and says which."""

import json
from pathlib import Path

import polars as pl
import pytest

from hcat_pipeline.golden.cases import CaseImportError, export_cases, load_version, read_curated_cases
from hcat_pipeline.golden.review import gate_cases, gate_tables, review_order, review_summary, reviewed_ids, with_review_columns
from hcat_pipeline.review.case_screen import case_screen_view, reference_marks
from hcat_pipeline.review.curation import CurationLog, apply_decisions, freeze_curated
from hcat_pipeline_tests.review_data import SOURCES, VERSION, make_project


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path)


def test_a_frozen_curated_version_carries_each_cases_review_and_the_rest_stay_unreviewed(project):
    base, _ = load_version(VERSION, project.golden_dir)
    assert reviewed_ids(base) == set() and review_summary(base)["n_reviewed"] == 0  # generated is not reviewed
    ids = base.filter(pl.col("base_case_id").is_null())["case_id"].to_list()
    log = CurationLog(project.curation_dir, VERSION)
    known = set(base["case_id"].to_list())
    log.record(ids[0], "accept", "alice", known=known, difficulty="hard", scoring_notes="must say nothing happens")
    log.record(ids[1], "edit", "bob", edits={"reference_answer": "The nearest enclosing loop."}, known=known, difficulty="easy")
    log.record(ids[2], "reject", "alice", "the reference is cut short", known=known)
    with pytest.raises(ValueError, match="difficulty 'trivial'"):
        log.record(ids[3], "accept", "alice", known=known, difficulty="trivial")
    cur = apply_decisions(base, log.decisions())
    assert cur.summary["reviewed"] == 2
    freeze_curated(log, project.golden_dir, "curated-r", None, "alice")
    frozen, _ = load_version("curated-r", project.golden_dir)
    rec = {r["case_id"]: r for r in frozen.iter_rows(named=True)}
    a = rec[ids[0]]
    assert (a["reviewed_by"], a["review_verdict"], a["difficulty"], a["scoring_notes"]) == ("alice", "accept", "hard", "must say nothing happens")
    assert a["reviewed_at"] == log.decisions()[ids[0]]["at"][:10]
    edited = rec[cur.renamed[ids[1]]]
    assert (edited["reviewed_by"], edited["review_verdict"], edited["difficulty"]) == ("bob", "edit", "easy")
    assert ids[2] not in rec and rec[ids[3]]["review_verdict"] is None  # rejected left; untouched stays unreviewed
    assert reviewed_ids(frozen) == {ids[0], cur.renamed[ids[1]]}
    # a later curation of the curated version keeps the earlier review of a case nobody decided this time
    again = apply_decisions(frozen, {})
    assert reviewed_ids(again.frame) == reviewed_ids(frozen)


def test_an_imported_review_is_checked_like_every_other_field(project, tmp_path):
    base, _ = load_version(VERSION, project.golden_dir)
    path = export_cases(with_review_columns(base), tmp_path / "cases.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0].update(reviewed_by="carol", reviewed_at="2026-11-28", review_verdict="accept", difficulty="medium")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert reviewed_ids(read_curated_cases(path)) == {rows[0]["case_id"]}
    rows[0].update(review_verdict="maybe", reviewed_at="yesterday")
    rows[1].update(reviewed_by="dan")  # a reviewer without a verdict or date is not a review
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CaseImportError) as e:
        read_curated_cases(path)
    text = str(e.value.errors)
    assert "review_verdict 'maybe'" in text and "reviewed_at 'yesterday'" in text and "all of reviewed_by" in text


def _frame(scores: dict[str, float | None], reviewed: set[str] = frozenset()) -> pl.DataFrame:
    return pl.DataFrame({"case_id": list(scores), "validity_score": list(scores.values()),
                         "review_verdict": ["accept" if c in reviewed else None for c in scores]},
                        schema={"case_id": pl.String, "validity_score": pl.Float64, "review_verdict": pl.String})  # fmt: skip


def test_review_order_puts_unreviewed_cases_first_the_likeliest_unsound_first():
    f = _frame({"c-sound": 0.95, "c-bad": 0.10, "c-unscored": None, "c-done-bad": 0.05, "c-mid": 0.5}, reviewed={"c-done-bad"})
    assert review_order(f) == ["c-bad", "c-mid", "c-sound", "c-unscored", "c-done-bad"]
    assert review_order(f, decided={"c-bad"})[:2] == ["c-mid", "c-sound"]  # decided on the page, not frozen yet: after the rest


def test_the_gates_read_only_reviewed_cases_when_the_campaign_file_says_so():
    golden = _frame({"c1": 0.9, "c2": 0.9, "c3": 0.9}, reviewed={"c1", "c3"})
    checks = pl.DataFrame({"case_id": ["c1", "c2", "c3"], "verdict": ["pass", "fail", "pass"]})
    assert gate_cases(golden, "all").height == 3 and gate_cases(golden, "reviewed")["case_id"].to_list() == ["c1", "c3"]
    tables = {"behaviour_checks": checks, "gaming": None, "no_case_column": pl.DataFrame({"x": [1]})}
    assert gate_tables(tables, golden, "all") is tables
    read = gate_tables(tables, golden, "reviewed")
    assert read["behaviour_checks"]["verdict"].to_list() == ["pass", "pass"]  # the unreviewed failure is not read
    assert read["gaming"] is None and read["no_case_column"].height == 1
    assert review_summary(golden, "reviewed")["text"] == "the gates read the 2 reviewed case(s) of 3 (campaign file gates_read: reviewed)"
    assert review_summary(golden, "all")["text"] == "the gates read all 3 case(s), 2 of them reviewed by a person"
    assert "none reviewed" in review_summary(_frame({"c1": 0.5}), "all")["text"]


def test_the_gates_verdicts_follow_gates_read_with_a_known_failure_in_an_unreviewed_case():
    from hcat_pipeline.gates import evaluate_gates
    from hcat_pipeline.gates.spec import GatesFile

    gates = GatesFile.model_validate({"gates": [{"name": "no_pii", "kind": "hard", "table": "behaviour_checks", "metric": "verdict",
                                                 "equals": "fail", "statistic": "count", "direction": "<=", "threshold": 0,
                                                 "certify_below": 0.5}]})  # fmt: skip
    ids = [f"c{i}" for i in range(8)]
    golden = _frame(dict.fromkeys(ids, 0.9), reviewed=set(ids[:7]))
    checks = pl.DataFrame({"case_id": ids, "system_id": ["s"] * 8, "verdict": ["pass"] * 7 + ["fail"]})
    verdict = lambda read: evaluate_gates(gates, gate_tables({"behaviour_checks": checks}, golden, read))["verdict"][0]  # noqa: E731
    assert verdict("all") == "FAIL" and verdict("reviewed") == "PASS"  # 0 of 7 at < 50 %: the bound is 0.35


def test_the_reference_sentence_is_marked_in_its_source_passage():
    text = "Intro sentence here. The break statement terminates the nearest enclosing for or while loop. Another one."
    marks = reference_marks(text, "Yes. The break statement terminates the nearest  enclosing for or while loop.")
    assert [m.why for m in marks] == ["the reference sentence"]
    close = reference_marks(text, "The break statement terminates the nearest enclosing loop.")
    assert close and close[0].why.startswith("closest") and close[0].sentence.startswith("The break")
    assert reference_marks(text, "Something about decorators entirely.") == []


def test_the_case_screen_shows_one_case_with_its_passage_and_moves_on_to_the_next_unreviewed(project):
    base, _ = load_version(VERSION, project.golden_dir)
    view = case_screen_view(project.golden_dir, project.curation_dir, project.chunks, VERSION, None)
    assert view["n_cases"] == base.height and view["left"] == base.height
    first = view["case"]
    assert first["case_id"] == review_order(base)[0]
    src = first["passages"][0]
    assert src["marked"] is False or any(s["why"] for s in src["segments"])
    assert "".join(s["text"] for s in src["segments"]) == SOURCES[src["chunk_id"]]
    CurationLog(project.curation_dir, VERSION).record(first["case_id"], "accept", "alice")
    nxt = case_screen_view(project.golden_dir, project.curation_dir, project.chunks, VERSION, None)
    assert nxt["left"] == base.height - 1 and nxt["case"]["case_id"] != first["case_id"]
    assert case_screen_view(project.golden_dir, project.curation_dir, project.chunks, VERSION, first["case_id"])["case"]["decision"]["action"] == "accept"


def test_the_case_screen_page_renders_and_records_difficulty_and_notes(project):
    from fastapi.testclient import TestClient

    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings

    settings = ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                              curation_dir=project.curation_dir, chunks=project.chunks)  # fmt: skip
    client = TestClient(create_app(settings))
    page = client.get(f"/curate/case?version={VERSION}")
    assert page.status_code == 200 and "not reviewed yet" in page.text and "<mark" in page.text
    cid = review_order(load_version(VERSION, project.golden_dir)[0])[0]
    r = client.post("/api/curation", json={"rater": "alice", "version": VERSION, "case_id": cid, "action": "accept",
                                           "difficulty": "medium", "scoring_notes": "names the loop"})  # fmt: skip
    assert r.json()["status"] == "saved" and r.json()["decision"]["difficulty"] == "medium"
    again = client.get(f"/curate/case?version={VERSION}&case={cid}")
    assert "names the loop" in again.text and "<strong>accept</strong>" in again.text
    assert client.get("/curate/case?version=nope").status_code == 404


def test_the_report_and_the_campaign_file_say_which_cases_the_gates_read():
    from hcat_pipeline.campaign_spec import CampaignSpec, campaign_run_config
    from hcat_pipeline.console import gate_evidence_lines
    from hcat_pipeline.reports.decision import decision_section

    spec = CampaignSpec.model_validate({"systems": [{"system_id": "s"}], "gates_read": "reviewed"})
    assert campaign_run_config(spec)["ops"]["gate_verdicts"]["config"]["gates_read"] == "reviewed"
    with pytest.raises(ValueError, match="gates_read"):
        CampaignSpec.model_validate({"systems": [{"system_id": "s"}], "gates_read": "some"})
    text = review_summary(_frame({"c1": 0.9, "c2": 0.9}, reviewed={"c1"}), "reviewed")["text"]
    gates = pl.DataFrame({"gate": ["g"], "kind": ["hard"], "system_id": ["s"], "verdict": ["PASS"], "blocking": [False], "estimate": [0.0],
                          "ci_low": [0.0], "ci_high": [0.1], "n": [1], "n_more": [None], "reason": [""], "cases_read": [text], "statistic": ["count"],
                          "metric": ["verdict"], "direction": ["<="], "threshold": [0.0], "group": ["all"]},
                         schema_overrides={"n_more": pl.Int64})  # fmt: skip
    sec, lines = decision_section(gates, ["s"])
    assert sec.note.startswith("Cases: the gates read the 1 reviewed case(s) of 2") and "reviewed case(s) of 2" in lines[0]
    assert gate_evidence_lines(gates.to_dicts())[0] == f"  cases: {text}"


def test_the_systems_results_suggest_a_difficulty_shown_on_the_case_screen(project):
    """golden-eval §2.4 "difficulty rating": measured from every night's behaviour checks (canaries left out), shown
    beside the reviewer's own rating."""
    from hcat_pipeline.golden.review import measured_difficulty

    checks = pl.DataFrame({"case_id": ["a"] * 4 + ["b"] * 3 + ["c"] * 2, "system_id": ["s1", "s2", "s3", "canary:s1:pii", "s1", "s2", "s3", "s1", "s2"],
                           "verdict": ["pass", "pass", "fail", "fail", "fail", "fail", "unsure", "pass", "fail"]})  # fmt: skip
    assert measured_difficulty(checks, "a") == {"failed": 1, "answers": 3, "rate": 0.333, "suggested": "medium"}
    assert measured_difficulty(checks, "b")["suggested"] == "hard" and measured_difficulty(checks, "b")["answers"] == 2  # unsure left out
    assert measured_difficulty(checks, "c")["suggested"] == "medium" and measured_difficulty(checks, "zz") is None
    base, _ = load_version(VERSION, project.golden_dir)
    cid = review_order(base)[0]
    night = Path(project.warehouse, "behaviour_checks", VERSION)
    night.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"case_id": [cid] * 2, "system_id": ["s1", "s2"], "verdict": ["fail", "fail"]}).write_parquet(night / "2026-11-27.parquet")
    view = case_screen_view(project.golden_dir, project.curation_dir, project.chunks, VERSION, cid, project.warehouse)
    assert view["case"]["measured_difficulty"] == {"failed": 2, "answers": 2, "rate": 1.0, "suggested": "hard"}
    assert case_screen_view(project.golden_dir, project.curation_dir, project.chunks, VERSION, cid)["case"]["measured_difficulty"] is None
