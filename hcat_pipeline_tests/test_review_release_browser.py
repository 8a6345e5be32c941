"""The sign-off screen (/release, issue 67 item 4) driven in real headless Chromium: a night's plan and bundle, a system
BLOCKED by a gate; a reviewer must give a reason to approve with conditions, signs, and the night is signed off; a label
on the night's answers changed afterwards makes the page say so and refuse a new signature; the night re-sealed on changed
evidence shows the signature stale. Screenshots land in data/test_artifacts/review/."""

import json
import os
from pathlib import Path

import polars as pl
import pytest

from hcat_pipeline.corpus.content_hash import file_sha256
from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE
from hcat_pipeline.release.night import evidence_files, lock_plan, release_dir, seal_bundle
from hcat_pipeline.release.plan import NightPlan
from hcat_pipeline.release.signoff import read_log
from hcat_pipeline_tests.servers import review_server
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS

SHOTS = Path(os.environ.get("HCAT_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "data" / "test_artifacts")) / "review"
VERSION, NIGHT = "gs-rel", "2026-12-07"


def _night(data: Path) -> None:
    wh, labels = data / "warehouse", data / "labels"
    for table in ("release_decision", "gate_verdicts", "rag_responses"):
        (wh / table / VERSION).mkdir(parents=True)
    pl.DataFrame({"case_id": ["c1"], "system_id": ["hybrid"], "answer": ["…"]}).write_parquet(wh / "rag_responses" / VERSION / f"{NIGHT}.parquet")
    _labels(wh, "1")
    pl.DataFrame({"system_id": ["hybrid"], "cleared": [False], "gates_pass": [3], "gates_indeterminate": [0], "gates_fail": [1],
                  "gates_not_applicable": [0], "blocking_gates": [["no_pii_leak"]], "pending_confirmation": [[]]}).write_parquet(
        wh / "release_decision" / VERSION / f"{NIGHT}.parquet")  # fmt: skip
    pl.DataFrame({"gate": ["no_pii_leak", "relevancy"], "system_id": ["hybrid", "hybrid"], "verdict": ["FAIL", "PASS"],
                  "estimate": [1.0, 0.8], "ci_low": [1.0, 0.7], "ci_high": [1.0, 0.9], "n": [29, 40], "reason": ["1 leak", ""],
                  "blocking": [True, False]}).write_parquet(wh / "gate_verdicts" / VERSION / f"{NIGHT}.parquet")  # fmt: skip
    labels.mkdir()
    (labels / "labels_ana.jsonl").write_text('{"item": "c1", "label": 1}\n')
    plan = NightPlan(campaign="bank", night=NIGHT, golden_set_version=VERSION, golden_set_sha256="a" * 64, shipped_review="",
                     systems={"hybrid": "h"}, gates_sha256=file_sha256(DEFAULT_GATES_FILE), gates={}, certify_below=0.1,
                     gates_read="all", judge={}, metric_code="m", seed=0,
                     intended_use={"purpose": "answer fee questions", "decision": "release to the pilot branches"})  # fmt: skip
    directory = release_dir(data, VERSION, NIGHT)
    lock_plan(plan, directory)
    seal_bundle(evidence_files(data, wh, data / "golden", labels, VERSION, NIGHT, DEFAULT_GATES_FILE), data, directory, wh, labels)


def _labels(wh: Path, label: str) -> None:
    """The label store's table: one label on the night's answer (c1 × hybrid)."""
    pl.DataFrame({"case_id": ["c1"], "system_id": ["hybrid"], "dimension": ["groundedness"], "label": [label]}).write_parquet(wh / "human_labels.parquet")


def test_a_reviewer_signs_the_night_and_changed_evidence_is_named_refused_and_stale(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (scripts/setup.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    data = tmp_path / "data"
    _night(data)
    args = ["--labels-dir", str(data / "labels"), "--warehouse", str(data / "warehouse"), "--golden-dir", str(tmp_path / "golden"),
            "--curation-dir", str(tmp_path / "curation"), "--chunks", str(tmp_path / "chunks.parquet"),
            "--release-dir", str(data / "release"), "--roles", "validator"]  # fmt: skip
    SHOTS.mkdir(parents=True, exist_ok=True)
    with review_server(args) as base, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "/release")
        assert "BLOCKED" in page.locator("#decisions tr[data-system='hybrid']").inner_text()
        assert "no_pii_leak: FAIL" in page.locator("#decisions").inner_text() and "n = 29" in page.locator("#decisions").inner_text()
        assert page.locator("#verified").count() == 1 and "release to the pilot branches" in page.locator("#intended-use").inner_text()
        assert "yet to sign" in page.locator("#roles tr[data-role='validator']").inner_text()
        with page.expect_navigation():
            page.fill("#rater", "ana_validator")
            page.dispatch_event("#rater", "change")
        page.check("input[value=approve_with_conditions]")
        page.click("#sign-button")  # no note: refused, nothing written
        page.wait_for_selector("#status.bad")
        assert "the note says why" in page.locator("#status").inner_text() and read_log(data / "release" / "signoffs.jsonl") == []
        page.fill("#note", "the PII leak is fixed before the pilot")
        with page.expect_navigation():
            page.click("#sign-button")
        assert "fresh" in page.locator("#roles tr[data-role='validator']").inner_text()
        assert page.locator("#released").inner_text().startswith("signed off") and "the gates block hybrid" in page.locator("#released").inner_text()
        page.screenshot(path=str(SHOTS / "release-signed.png"), full_page=True)

        _labels(data / "warehouse", "0")  # a label on the night's answer changed after the signature
        page.reload()
        assert "a human label on this night's answers was added or changed after the night was sealed" in page.locator("#problems").inner_text()
        assert "stale" in page.locator("#roles tr[data-role='validator']").inner_text()  # its evidence changed since the signature
        page.check("input[value=approve]")
        page.click("#sign-button")
        page.wait_for_selector("#status.bad")
        assert "does not verify, nothing signed" in page.locator("#status").inner_text()

        wh, directory = data / "warehouse", release_dir(data, VERSION, NIGHT)  # the night re-run on the changed label: a new bundle
        seal_bundle(evidence_files(data, wh, data / "golden", data / "labels", VERSION, NIGHT, DEFAULT_GATES_FILE), data, directory, wh, data / "labels")
        page.reload()
        assert "stale" in page.locator("#roles tr[data-role='validator']").inner_text()
        assert page.locator("#released").inner_text().startswith("not signed off")
        page.screenshot(path=str(SHOTS / "release-stale.png"), full_page=True)
        assert errors == []
        browser.close()
    entries = read_log(data / "release" / "signoffs.jsonl")
    assert [(e["who"], e["role"], e["decision"]) for e in entries] == [("ana_validator", "validator", "approve_with_conditions")]
    assert json.loads((directory / "bundle.json").read_text())["root"] != entries[0]["bundle_root"]
