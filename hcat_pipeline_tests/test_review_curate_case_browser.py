"""Issue 59: the one-case-a-screen curate page driven in real headless Chromium — the order is learnt from the decisions
(the page says from how many, never shows a decided case again, and is not the validator's static order), the line of
what a signable set still lacks counts down, and the "enough" state appears once the accepted cases suffice."""

import os
from pathlib import Path

import pytest

from hcat_pipeline.golden.cases import load_version
from hcat_pipeline.golden.review import review_order
from hcat_pipeline_tests.review_data import make_project
from hcat_pipeline_tests.servers import serve_app
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS

SHOTS = Path(os.environ.get("HCAT_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "data" / "test_artifacts")) / "review"


LOOPS = ["for", "while", "nested", "outer", "inner", "infinite", "counting", "search"]
DICTS = ["keys", "values", "items", "order", "lookup", "update", "copy", "merge"]


def _two_kinds(golden_dir: Path) -> tuple[str, set[str]]:
    """A version of 16 happy-path cases the validator cannot tell apart (every score 0.5): 8 about loops, 8 about
    dictionaries; returns (version, the loop cases' ids)."""
    import polars as pl

    from hcat_pipeline.golden.cases import cases_frame, freeze_version, new_case

    cases = [new_case(category="happy_path", query=f"What does break do inside a {w} loop?", reference_answer=f"break ends the {w} loop at once.",
                      expected_behavior="answer", query_type="simple", source_chunk_ids=[], stratum=0, created_at="2026-11-29") for w in LOOPS]
    cases += [new_case(category="happy_path", query=f"How does a dictionary treat its {w}?", reference_answer=f"A dictionary keeps its {w} in insertion order.",
                       expected_behavior="answer", query_type="simple", source_chunk_ids=[], stratum=1, created_at="2026-11-29") for w in DICTS]
    frame = cases_frame(cases).with_columns(pl.lit(0.5).alias("validity_score"))
    freeze_version(frame, "gs-two-kinds", golden_dir, created_at="2026-11-29")
    return "gs-two-kinds", {c["case_id"] for c in cases[: len(LOOPS)]}


def test_the_curate_case_screen_learns_its_order_counts_what_is_missing_and_says_when_enough(tmp_path):
    """The reviewer rejects every loop case it is shown and accepts every dictionary case: after the warm-up the learnt
    order shows only dictionary cases (the rejected kind moved down) — the validator, blind to the difference, would not."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (scripts/setup.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.review.app import create_app
    from hcat_pipeline.review.views import ReviewSettings

    project = make_project(tmp_path)
    version, loops = _two_kinds(project.golden_dir)
    settings = ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                              curation_dir=project.curation_dir, chunks=project.chunks, learn_order=True,
                              needs={"happy_path": 6, "answer_correct": 6})  # fmt: skip
    app = create_app(settings)
    app.state.embed = EmbeddingModel().embed  # the packaged MiniLM, loaded before the first page (the app loads it on first use)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shown, notes, accepted = [], [], 0
    with serve_app(app) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
        page.set_default_timeout(120_000)  # a slow machine: each decision refits the order on the embeddings
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}/curate/case?version={version}")
        with page.expect_navigation():
            page.fill("#rater", "alice")
            page.dispatch_event("#rater", "change")
        assert "from your 0 decisions" in page.locator("#order-note").inner_text()
        assert "Still missing for a signable set: happy_path 6 (0 of 6)" in page.locator("#missing").inner_text()
        while not page.locator("#enough").count():
            cid = page.locator("#case").get_attribute("data-case")
            assert cid not in shown, (f"{cid} shown again after it was decided", shown, notes)
            shown.append(cid)
            with page.expect_navigation():
                if cid in loops:
                    page.keyboard.press("r")
                    page.keyboard.type("not sound for this corpus")
                    page.keyboard.press("Enter")
                else:
                    page.keyboard.press("a")
                    accepted += 1
            notes.append(page.locator("#order-note").inner_text())
            assert f"from your {len(shown)} decision" in notes[-1], notes[-1]
            if not page.locator("#enough").count():
                assert f"happy_path {6 - accepted} ({accepted} of 6)" in page.locator("#missing").inner_text()
            assert len(shown) <= 16, "never enough"
        page.screenshot(path=str(SHOTS / "5-curate-case-enough.png"), full_page=True)
        assert "The accepted cases suffice" in page.locator("#missing").inner_text() and accepted == 6
        browser.close()
    assert errors == []
    greedy = [i for i, n in enumerate(notes) if "most likely sound first" in n]
    assert greedy, notes  # the order turned greedy after the warm-up
    after = shown[greedy[0] + 1:]
    assert after and not set(after) & loops, (shown, notes)  # then only the accepted kind: the rejected one moved down
    frame, _ = load_version(version, project.golden_dir)
    assert shown != review_order(frame)[: len(shown)]  # not the validator's static order
