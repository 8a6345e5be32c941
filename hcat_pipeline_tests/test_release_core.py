"""Release sign-off's core (issue 67), with known answers: an untouched night verifies; an edited file, an edited manifest,
an edited / removed / reordered log entry, a signature on changed evidence and a bar moved after the plan are each
found and named. Files and JSON only, milliseconds."""

import json

import pytest

from hcat_pipeline.release.bundle import current_root, make_bundle, verify_bundle
from hcat_pipeline.release.plan import NightPlan, bar_moved, plan_hash, plan_history, write_plan
from hcat_pipeline.release.signoff import append_signoff, read_log, signoff_status, verify_log

NIGHT = "2026-12-07"


def _plan(**kw) -> NightPlan:
    base = dict(campaign="default", night=NIGHT, golden_set_version="gs-1", golden_set_sha256="a" * 64, shipped_review="",
                systems={"hybrid": "h1", "closed_book": "c1"}, gates_sha256="g" * 64, gates={"pii_leak": {"max_rate": 0.0}},
                certify_below=0.10, gates_read="reviewed", judge={}, metric_code="m" * 64, seed=0)  # fmt: skip
    return NightPlan(**{**base, **kw})


def _evidence(tmp_path):
    (tmp_path / "gate_verdicts.parquet").write_bytes(b"gate rows")
    (tmp_path / "labels.jsonl").write_text('{"item": 1, "label": 1}\n')
    (tmp_path / "golden_set.parquet").write_bytes(b"cases")
    return {"gate_verdicts": tmp_path / "gate_verdicts.parquet", "labels": tmp_path / "labels.jsonl",
            "golden_set": tmp_path / "golden_set.parquet"}  # fmt: skip


def test_the_plan_hash_is_the_plans_and_a_bar_moved_after_it_is_a_new_plan_named(tmp_path):
    p = _plan()
    assert plan_hash(p) == plan_hash(_plan()) and plan_hash(p) != plan_hash(_plan(seed=1))
    _, h1 = write_plan(p, tmp_path, "2026-12-07T01:00:00+00:00")
    assert write_plan(p, tmp_path, "2026-12-07T01:05:00+00:00")[1] == h1 and len(plan_history(tmp_path)) == 1  # same plan
    lowered = _plan(gates={"pii_leak": {"max_rate": 0.05}}, gates_sha256="h" * 64)
    _, h2 = write_plan(lowered, tmp_path, "2026-12-07T02:00:00+00:00")
    history = plan_history(tmp_path)
    assert h2 != h1 and [h["sha256"] for h in history] == [h1, h2]
    moved = bar_moved(history[0], history[1])
    assert [m["field"] for m in moved] == ["gates_sha256", "gates"]
    assert moved[1]["from"] == {"pii_leak": {"max_rate": 0.0}} and moved[1]["to"] == {"pii_leak": {"max_rate": 0.05}}
    assert moved[1]["when"] == "2026-12-07T02:00:00+00:00"
    assert bar_moved(history[0], {"plan": _plan(systems={"hybrid": "h2"}).as_dict()}) == []  # a system is not the bar


def test_an_untouched_bundle_verifies_and_each_change_is_named(tmp_path):
    files = _evidence(tmp_path)
    bundle = make_bundle(files, tmp_path)
    assert verify_bundle(bundle, tmp_path) == [] and current_root(bundle, tmp_path) == bundle["root"]
    (tmp_path / "labels.jsonl").write_text('{"item": 1, "label": 0}\n')  # a label changed
    assert [p.split(":")[0] for p in verify_bundle(bundle, tmp_path)] == ["labels"]
    (tmp_path / "golden_set.parquet").unlink()  # a golden-set file swapped away
    assert any(p.startswith("golden_set:") and "missing" in p for p in verify_bundle(bundle, tmp_path))
    edited = json.loads(json.dumps(bundle))
    edited["files"][0]["sha256"] = "0" * 64  # the manifest edited to match a changed file
    assert any("root" in p for p in verify_bundle(edited, tmp_path))
    assert current_root(bundle, tmp_path) != bundle["root"]  # what a signature on the sealed root now rests on has changed
    with pytest.raises(FileNotFoundError, match="evidence 'x'"):
        make_bundle({"x": tmp_path / "nope"}, tmp_path)


def _sign(log, who, role, decision="approve", note="", root="r1"):
    return append_signoff(log, night=NIGHT, campaign="default", who=who, role=role, decision=decision, note=note,
                          bundle_root=root, plan_sha256="p1", at="2026-12-07T09:00:00+00:00")  # fmt: skip


def test_the_log_chain_finds_an_edited_removed_or_reordered_entry(tmp_path):
    log = tmp_path / "signoffs.jsonl"
    _sign(log, "Ana Validator", "validator")
    _sign(log, "Ben Owner", "model owner", "approve_with_conditions", "monitor refusals weekly")
    _sign(log, "Cy Risk", "risk officer", "reject", "PII gate indeterminate")
    entries = read_log(log)
    assert verify_log(entries) == []
    edited = [dict(e) for e in entries]
    edited[0]["decision"] = "reject"
    assert any("entry 1" in p and "edited" in p for p in verify_log(edited))
    assert any("entry 2" in p and "does not follow" in p for p in verify_log([entries[0], entries[2]]))  # one removed
    assert any("does not follow" in p for p in verify_log([entries[1], entries[0], entries[2]]))  # reordered
    lines = log.read_text().splitlines()
    log.write_text("\n".join([lines[1], lines[0], lines[2]]) + "\n")
    with pytest.raises(ValueError, match="broken, nothing appended"):
        _sign(log, "Dee", "validator")
    assert len(read_log(log)) == 3


def test_a_signature_on_changed_evidence_is_stale_and_two_roles_are_needed(tmp_path):
    log = tmp_path / "signoffs.jsonl"
    _sign(log, "Ana Validator", "validator", root="r1")
    status = signoff_status(read_log(log), NIGHT, "r1", ["validator", "risk officer"])
    assert not status["released"] and status["yet_to_sign"] == ["risk officer"]
    _sign(log, "Cy Risk", "risk officer", "approve_with_conditions", "re-run after the label import", root="r1")
    assert signoff_status(read_log(log), NIGHT, "r1", ["validator", "risk officer"])["released"]
    later = signoff_status(read_log(log), NIGHT, "r2", ["validator", "risk officer"])  # a flag overturned: a new bundle
    assert not later["released"] and {r: v["state"] for r, v in later["roles"].items()} == {"validator": "stale", "risk officer": "stale"}
    _sign(log, "Cy Risk", "risk officer", "reject", "the overturned flag was the PII one", root="r2")
    assert signoff_status(read_log(log), NIGHT, "r2", ["risk officer"])["released"] is False


def test_a_sign_off_names_who_and_why():
    with pytest.raises(ValueError, match="who signed"):
        append_signoff("unused.jsonl", night=NIGHT, campaign="c", who=" ", role="validator", decision="approve", note="",
                       bundle_root="r", plan_sha256="p", at="t")  # fmt: skip
    with pytest.raises(ValueError, match="the note says why"):
        append_signoff("unused.jsonl", night=NIGHT, campaign="c", who="Ana", role="validator", decision="reject", note="",
                       bundle_root="r", plan_sha256="p", at="t")  # fmt: skip
    with pytest.raises(ValueError, match="one of"):
        append_signoff("unused.jsonl", night=NIGHT, campaign="c", who="Ana", role="validator", decision="maybe", note="x",
                       bundle_root="r", plan_sha256="p", at="t")  # fmt: skip


def _gate_rows(**edit):
    import polars as pl

    rows = [{"gate": "pii_leak", "system_id": "hybrid", "group": "all", "verdict": "FAIL", "blocking": True, "estimate": 0.2,
             "ci_low": 0.1, "ci_high": float("nan"), "n": 40, "n_more": None, "certificate": None},
            {"gate": "pii_leak", "system_id": "closed_book", "group": "all", "verdict": "PASS", "blocking": False, "estimate": 0.0,
             "ci_low": 0.0, "ci_high": 0.07, "n": 40, "n_more": None, "certificate": "certified below 0.10"}]  # fmt: skip
    rows[0].update(edit)
    return pl.DataFrame(rows)


def test_a_gate_row_that_no_longer_follows_from_its_tables_is_named_with_what_differs():
    from hcat_pipeline.gates.night import verdict_differences

    derived = _gate_rows()
    assert verdict_differences(_gate_rows(), derived) == []  # NaN bounds compare equal: nothing to report
    edited = verdict_differences(_gate_rows(verdict="PASS", blocking=False), derived)
    assert edited == ["gate row pii_leak × hybrid × all: stored verdict 'PASS', re-derived from the stored tables 'FAIL'"]
    assert "stored n 39" in verdict_differences(_gate_rows(n=39), derived)[0]
    assert verdict_differences(_gate_rows().head(1), derived) == ["gate row pii_leak × closed_book × all: re-derived, missing from the stored table (removed)"]


def test_the_gate_settings_round_trip_and_ignore_what_they_do_not_know(tmp_path):
    from hcat_pipeline.gates.night import GateSettings
    from hcat_pipeline.release.rederive import read_settings, write_settings

    assert read_settings(tmp_path) is None  # a night sealed before settings were stored: verify says it cannot re-derive
    s = GateSettings.from_dict({"gates_read": "reviewed", "certify_below": 0.05, "review_note": "shipped review applied", "x": 1})
    write_settings(s, tmp_path)
    assert read_settings(tmp_path) == s and s.history_runs == 10 and s.exclude_risk  # the defaults are the asset's
