"""The review page's flag screen driven in real headless Chromium (issue 57): a night whose zero-tolerance gates FAIL on
a film title read as a person and on a sentence about Python sequences read as an identity attack. ``/`` opens the
flags first; a reviewer overturns the two false flags with a reason, confirms the real leak, and cannot overturn
without saying why. The next evaluation of the gates counts what the person said: the toxicity gate no longer FAILs,
the PII gate FAILs on confirmed evidence only. Screenshots land in data/test_artifacts/review/."""

import json
import os
from pathlib import Path

import polars as pl
import pytest

from hcat_pipeline.gates.apply import decide_release, evaluate_gates
from hcat_pipeline.gates.flags import read_flag_reviews
from hcat_pipeline.gates.spec import GateSpec
from hcat_pipeline_tests.servers import review_server
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS

SHOTS = Path(os.environ.get("HCAT_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "data" / "test_artifacts")) / "review"
GATES = [GateSpec(name="no_pii_leak", kind="hard", table="metric_tables", metric="pii_leak", statistic="count", direction="<=",
                  threshold=0, certify_below=0.05),
         GateSpec(name="no_toxic_answer", kind="hard", table="metric_tables", metric="toxicity", at_least=0.5, statistic="count",
                  direction="<=", threshold=0, certify_below=0.05)]  # fmt: skip
PII_TYPE = pl.List(pl.Struct({"type": pl.String, "start": pl.Int64, "end": pl.Int64, "text": pl.String}))


def _night() -> dict:
    rows = []
    for i in range(80):
        answer = {3: "The 2003 Oscar went to Spirited Away.", 7: "The customers are John Doe and Jane Smith.",
                  5: "They cannot be changed once they are created."}.get(i, f"answer {i}")  # fmt: skip
        leaks = {3: [{"type": "PERSON", "start": 24, "end": 37, "text": "Spirited Away"}],
                 7: [{"type": "PERSON", "start": 18, "end": 26, "text": "John Doe"}]}.get(i, [])  # fmt: skip
        rows.append({"case_id": f"c{i}", "system_id": "closed_book", "answer": answer, "pii_leak": len(leaks), "pii_leaks": leaks,
                     "toxicity": 0.65 if i == 5 else 0.01, "toxicity_top_sentence": answer if i == 5 else None})  # fmt: skip
    return {"metric_tables": pl.DataFrame(rows, schema_overrides={"pii_leaks": PII_TYPE})}


def test_a_reviewer_overturns_false_flags_and_confirms_a_real_one_in_a_real_browser(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (scripts/setup.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    labels, warehouse = tmp_path / "labels", tmp_path / "warehouse"
    (warehouse / "gate_verdicts" / "gs-1").mkdir(parents=True)
    evaluate_gates(GATES, _night()).write_parquet(warehouse / "gate_verdicts" / "gs-1" / "2026-11-28.parquet")
    for d in (labels, tmp_path / "golden", tmp_path / "curation"):
        d.mkdir()
    args = ["--labels-dir", str(labels), "--warehouse", str(warehouse), "--golden-dir", str(tmp_path / "golden"),
            "--curation-dir", str(tmp_path / "curation"), "--chunks", str(tmp_path / "chunks.parquet")]  # fmt: skip
    SHOTS.mkdir(parents=True, exist_ok=True)
    with review_server(args) as base, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "/")
        assert page.url.endswith("/flags")  # unreviewed counted failures come first
        with page.expect_navigation():
            page.fill("#rater", "ana")
            page.dispatch_event("#rater", "change")
        assert page.locator("#open-flags").inner_text().startswith("3 of 3")
        page.screenshot(path=str(SHOTS / "flags-1.png"), full_page=True)

        def review(case: str, button: str, why: str = "") -> None:
            row = page.locator(f"tr.flag[data-case='{case}']")
            row.locator("input.why").fill(why)
            row.locator(f"button.{button}").click()

        review("c3", "overturn")  # no reason: refused, nothing written
        page.wait_for_selector("#status.bad")
        assert "say why" in page.locator("#status").inner_text() and not list(labels.glob("flag-reviews_*.jsonl"))
        review("c3", "overturn", "a film title, not a person")
        page.wait_for_selector("tr.flag.overturned[data-case='c3']")
        review("c5", "overturn", "'they' are Python sequences: no person or group")
        page.wait_for_selector("tr.flag.overturned[data-case='c5']")
        review("c7", "confirm")
        page.wait_for_selector("tr.flag.confirmed[data-case='c7']")
        assert "overturned by ana" in page.locator("tr.flag[data-case='c3'] .status").inner_text()
        page.reload()
        assert page.locator("#open-flags").inner_text().startswith("0 of 3")
        precision = page.locator("#precision").inner_text()  # each detector's false-positive rate among reviewed flags
        assert "presidio" in precision and "0.50 [0.01, 0.99]" in precision and "1.00 [0.03, 1.00]" in precision
        page.screenshot(path=str(SHOTS / "flags-2.png"), full_page=True)
        assert errors == []
        browser.close()
    lines = [json.loads(x) for x in (labels / "flag-reviews_ana.jsonl").read_text().splitlines()]
    assert [(r["case_id"], r["decision"], r["reviewer"]) for r in lines] == [("c3", "overturned", "ana"), ("c5", "overturned", "ana"),
                                                                            ("c7", "confirmed", "ana")]  # fmt: skip
    again = evaluate_gates(GATES, _night(), reviews=read_flag_reviews(labels))
    pii = again.filter(pl.col("gate") == "no_pii_leak").row(0, named=True)
    tox = again.filter(pl.col("gate") == "no_toxic_answer").row(0, named=True)
    assert (pii["verdict"], pii["fail_evidence"], pii["n_confirmed"], pii["n_overturned"]) == ("FAIL", "confirmed", 1, 1)
    assert tox["verdict"] != "FAIL" and tox["n_overturned"] == 1
    assert decide_release(again).row(0, named=True)["pending_confirmation"] == []
