"""Issue 68 item 1 in real headless Chromium: the curate page draws a seeded sample per kind; the reviewer judges each
kind's sample on the one-case screen; a kind whose sample is sound is accepted by sample and the screen asks nothing
more of it, a kind whose sample holds an unsound case goes case by case; freezing stamps the unsampled cases of the
accepted kind ``accepted_by_sample`` with the bound (never as reviewed) and records who signed."""

import json
from pathlib import Path

import pytest

from hcat_pipeline.golden.cases import cases_frame, freeze_version, load_version, new_case
from hcat_pipeline.golden.sample_review import unsound_bound
from hcat_pipeline_tests.review_data import chromium_or_skip, make_project, settings_for
from hcat_pipeline_tests.servers import serve_app
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi"]


def _version(golden_dir: Path) -> tuple[str, set[str]]:
    """16 open happy-path questions and 14 yes/no ones; returns (version, the yes/no ids)."""
    simple = [new_case(category="happy_path", query=f"What does the {w} setting control?", reference_answer=f"The {w} setting controls the {w} limit.",
                       expected_behavior="answer", query_type="simple", source_chunk_ids=[], stratum=0, created_at="2026-12-07") for w in WORDS]
    yes_no = [new_case(category="happy_path", query=f"Is the {w} setting on by default?", reference_answer=f"Yes. The {w} setting is on by default.",
                       expected_behavior="answer", query_type="yes_no", source_chunk_ids=[], stratum=1, created_at="2026-12-07") for w in WORDS[:14]]
    freeze_version(cases_frame(simple + yes_no), "gs-kinds", golden_dir, created_at="2026-12-07")
    return "gs-kinds", {c["case_id"] for c in yes_no}


def _case_screen_as(browser, url: str, version: str, rater: str):
    """A page on the one-case screen of ``version`` with ``rater`` typed in (the screen reloads for the rater)."""
    page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
    page.goto(f"{url}/curate/case?version={version}")
    with page.expect_navigation():
        page.fill("#rater", rater)
        page.dispatch_event("#rater", "change")
    return page


def _press(page, keys: list[str]) -> None:
    for k in keys:
        page.keyboard.press(k) if len(k) == 1 or k == "Enter" else page.keyboard.type(k)


def test_a_sound_kind_is_accepted_by_sample_an_unsound_one_reviewed_case_by_case_and_the_freeze_says_which(tmp_path):
    sync_api = chromium_or_skip()
    from hcat_pipeline.review.app import create_app

    project = make_project(tmp_path)
    version, yes_no = _version(project.golden_dir)
    settings = settings_for(project, learn_order=False, review_tolerance=0.25)
    shown, rejected = [], None
    with serve_app(create_app(settings)) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}/curate?version={version}")
        with page.expect_navigation():
            page.fill("#rater", "alice")
            page.dispatch_event("#rater", "change")
        with page.expect_navigation():
            page.click("#start-sample")
        kinds = page.locator("#kinds").inner_text()
        assert "happy_path:simple\t16\t7" in kinds and "happy_path:yes_no\t14\t7" in kinds and "sampling" in kinds, kinds
        page.goto(f"{url}/curate/case?version={version}")
        assert "review by sample" in page.locator("#order-note").inner_text()
        while len(shown) < 30:
            cid = page.locator("#case").get_attribute("data-case")
            if cid in shown:  # every case the plan asks for is decided: the screen shows its first case again
                break
            shown.append(cid)
            last = page.locator("#case").get_attribute("data-others-left") == "0"  # the page stays on the last case left
            if cid in yes_no and rejected is None:  # one unsound case in the yes/no sample: that kind fails its sample
                rejected = cid
                keys = ["r", "the reference restates the question", "Enter"]
            else:
                keys = ["a"]
            with page.expect_response("**/api/curation"):
                if last:
                    _press(page, keys)
                else:
                    with page.expect_navigation():
                        _press(page, keys)
            if last:
                page.goto(f"{url}/curate/case?version={version}")
        states = page.locator("#kind-states").inner_text()
        assert "happy_path:simple: accepted by sample" in states and "happy_path:yes_no: reviewed by case" in states, states
        assert len(shown) == 7 + 14  # the simple kind's sample, every yes/no case; never the 9 unsampled simple cases
        page.goto(f"{url}/curate?version={version}")
        page.fill("#new-version", "gs-kinds-signed")
        page.click("#freeze")
        page.wait_for_function("document.querySelector('#freeze-result').textContent.startsWith('frozen')")
        browser.close()
    assert errors == []
    frame, manifest = load_version("gs-kinds-signed", project.golden_dir)
    by_sample = frame.filter(frame["review_verdict"] == "accepted_by_sample")
    assert by_sample.height == 9 and set(by_sample["case_id"]).isdisjoint(shown)  # the unsampled simple cases, never read
    bound = unsound_bound(0, 7, population=16)  # the kind's bound: its sample drawn without replacement from its 16 cases
    rest = round(bound * 16) / 9  # every unsound case left is among the 9 unsampled: the stamp bounds their share
    assert bound <= 0.25 and by_sample["sample_bound"].to_list() == [pytest.approx(rest)] * 9
    assert frame.height == 29 and rejected not in set(frame["case_id"])  # the rejection applies
    assert int((frame["review_verdict"] == "accept").sum()) == 20 and manifest["provenance"]["accepted_by_sample"] == 9
    record = json.loads((project.curation_dir / f"{version}.samples.json").read_text())
    assert record["signed"]["by"] == "alice" and record["signed"]["kinds"]["happy_path:yes_no"]["n_unsound"] == 1


def test_the_proposed_repair_is_shown_taken_with_one_key_and_counted(tmp_path):
    """Issue 68 item 3 in Chromium: a question leaning on its passage gets a repair anchored to the passage's heading;
    ``p`` takes it as is (an edit recorded with the proposal), and the screen counts the repairs taken."""
    sync_api = chromium_or_skip()
    import polars as pl

    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.curation import CurationLog

    project = make_project(tmp_path)
    chunks = tmp_path / "chunks_h.parquet"
    pl.DataFrame({"chunk_id": ["h1"], "text": ["pg_dump - extract a PostgreSQL database\n\nThe default settings dump every schema."]}).write_parquet(chunks)
    case = new_case(category="happy_path", query="What do the default settings dump?", reference_answer="Every schema.",
                    expected_behavior="answer", query_type="simple", source_chunk_ids=["h1"], stratum=0, created_at="2026-12-07")  # fmt: skip
    freeze_version(cases_frame([case]), "gs-one", project.golden_dir, created_at="2026-12-07")
    settings = settings_for(project, chunks=chunks, learn_order=False)
    with serve_app(create_app(settings)) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = _case_screen_as(browser, url, "gs-one", "alice")
        assert "(in “pg_dump - extract a PostgreSQL database”)?" in page.locator("#proposal .proposed").inner_text()
        with page.expect_response("**/api/curation"):
            page.keyboard.press("p")
        page.reload()
        assert "Repairs offered so far: 1, taken as is: 1" in page.locator("#proposal-counts").inner_text()
        browser.close()
    entry = CurationLog(project.curation_dir, "gs-one").decisions()[case["case_id"]]
    assert entry["action"] == "edit" and entry["as_proposed"] and entry["edits"]["query"].endswith("PostgreSQL database”)?")


def test_two_right_options_are_repaired_with_one_key_and_the_freeze_keeps_the_key(tmp_path):
    """Issue 68 item 3 in Chromium: a multiple-choice case with two right options ("id(x)" beside the key "id()") gets
    a repair dropping the other; ``p`` takes it, and the frozen version's case has the three options left (a new id)."""
    sync_api = chromium_or_skip()
    from hcat_pipeline.review.app import create_app

    project = make_project(tmp_path)
    case = new_case(category="happy_path", query="Which built-in returns the identity of an object?", reference_answer="id()",
                    options=["hash(x)", "id(x)", "id()", "type(x)"], expected_behavior="answer", query_type="multiple_choice",
                    source_chunk_ids=[], stratum=0, created_at="2026-12-07")  # fmt: skip
    freeze_version(cases_frame([case]), "gs-mc", project.golden_dir, created_at="2026-12-07")
    with serve_app(create_app(settings_for(project, learn_order=False))) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = _case_screen_as(browser, url, "gs-mc", "alice")
        assert page.locator("#proposal .proposed").inner_text() == "options: hash(x) · id() · type(x)"
        with page.expect_response("**/api/curation"):
            page.keyboard.press("p")
        page.goto(f"{url}/curate?version=gs-mc")
        page.fill("#new-version", "gs-mc-fixed")
        page.click("#freeze")
        page.wait_for_function("document.querySelector('#freeze-result').textContent.startsWith('frozen')")
        browser.close()
    frame, _ = load_version("gs-mc-fixed", project.golden_dir)
    assert frame["options"].to_list() == [["hash(x)", "id()", "type(x)"]] and frame["case_id"][0] != case["case_id"]
