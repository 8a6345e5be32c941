"""`hcat review` driven in real headless Chromium (Debian ``chromium`` + Python ``playwright``): a reviewer labels
five answers with the keyboard, a second tab's stale label is caught, a second rater labels the same answers, the
label_file_sensor asks for the refit and the calibrators refit on the page's labels, the agreement page shows κ,
a case is rejected and another edited, and the curated version is frozen and seen by the golden-set sensor.
Screenshots of each screen land in data/test_artifacts/review/."""

import os
import time
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline.calibration.store import LabelStore
from hcat_pipeline.golden.cases import load_version
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline_tests.review_data import NIGHT, VERSION, make_project
from hcat_pipeline_tests.servers import review_server
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS

SHOTS = Path(os.environ.get("HCAT_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "data" / "test_artifacts")) / "review"
ALICE = ["0", "1", "0", "1", "0"]  # the hybrid system adds an unsupported claim (0), the oracle answers from the passage (1)
BOB = ["0", "1", "1", "1", "1"]  # bob passes two of the hybrid answers: κ = (0.6 − 0.44) / 0.56


def _login(context, base: str, rater: str, path: str):
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base + path)
    with page.expect_navigation():
        page.fill("#rater", rater)
        page.dispatch_event("#rater", "change")
    return page, errors


def _label_five(page, keys: list[str]):
    for i, key in enumerate(keys):
        assert page.locator("#item").get_attribute("data-index") == str(i)
        with page.expect_navigation():
            page.keyboard.press(key)  # saves and moves on to the next answer


def _refit(project):
    from hcat_pipeline.assets.calibration import calibrators, reference_label_scores
    from hcat_pipeline.assets.labels import human_labels
    from hcat_pipeline.io import PolarsParquetIOManager
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.nli import NLIModel

    run = {"ops": {"human_labels": {"config": {"labels_dir": str(project.labels_dir)}},
                   "reference_label_scores": {"config": {"sets": []}},
                   "calibrators": {"config": {"dimension_metrics": {"groundedness": "groundedness_nli"}, "warehouse_dir": str(project.warehouse),
                                              "plots_dir": str(project.root / "plots")}}}}  # fmt: skip
    return dg.materialize([human_labels, reference_label_scores, calibrators], run_config=run, instance=dg.DagsterInstance.ephemeral(),
                          resources={"io_manager": PolarsParquetIOManager(base_dir=str(project.root / "wh")),
                                     "embedding_model": EmbeddingModel(), "multilingual_encoder": MultilingualEncoder(), "nli_model": NLIModel()})  # fmt: skip


def test_label_curate_and_agree_in_a_real_browser(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (scripts/setup.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    from hcat_pipeline.sensors import build_golden_set_sensor, build_label_file_sensor

    project = make_project(tmp_path)
    SHOTS.mkdir(parents=True, exist_ok=True)
    args = ["--labels-dir", str(project.labels_dir), "--warehouse", str(project.warehouse), "--golden-dir", str(project.golden_dir),
            "--curation-dir", str(project.curation_dir), "--chunks", str(project.chunks)]  # fmt: skip
    store = LabelStore(project.labels_dir / "_store")
    with review_server(args) as base, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        alice_ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page, errors = _login(alice_ctx, base, "alice", f"/label?queue={VERSION}/{NIGHT}")
        assert page.locator("#answer mark").inner_text() == "It was added in Python 2.0."  # the flagged sentence
        page.screenshot(path=str(SHOTS / "1-label.png"))
        _label_five(page, ALICE)
        mine = store.labels().filter(pl.col("rater") == "alice").sort("labelled_at")
        assert mine.height == 5 and mine["label"].to_list() == [int(k) for k in ALICE]
        # an optional dimension (not queued) by click: stored, and the screen stays
        here = page.url
        page.locator("fieldset.dim.optional[data-dimension='answer_relevancy'] button.choice[data-value='1']").click()
        page.wait_for_selector("fieldset.dim.optional[data-dimension='answer_relevancy'].done")
        assert page.url == here and store.labels().filter(pl.col("dimension") == "answer_relevancy").height == 1
        # a note with the keyboard, then a label: both stored
        page.keyboard.press("n")
        page.keyboard.type("reads like the passage")
        page.keyboard.press("Enter")
        with page.expect_navigation():
            page.keyboard.press("1")
        assert store.labels().sort("labelled_at")["comment"][-1] == "reads like the passage"
        # two tabs on the same answer: the second tab's label is not written over the first one's without asking
        tab2 = alice_ctx.new_page()
        tab2.goto(page.url)
        page.keyboard.press("0")
        page.wait_for_url("**item=7**")
        tab2.on("dialog", lambda d: d.dismiss())  # "Cancel = keep the other label"
        tab2.keyboard.press("1")
        tab2.wait_for_selector("#status.bad")
        assert "kept the label saved in the other tab" in tab2.locator("#status").inner_text()
        assert store.labels().filter(pl.col("rater") == "alice").sort("labelled_at")["label"][-1] == 0 and store.labels().height == 8
        # a second rater on the same five answers
        bob, bob_errors = _login(browser.new_context(viewport={"width": 1400, "height": 1000}), base, "bob", f"/label?queue={VERSION}/{NIGHT}&item=0")
        _label_five(bob, BOB)
        bob.goto(base + "/agreement")
        grounded = bob.locator("#agreement tr", has_text="groundedness")
        assert grounded.locator("td.kappa").inner_text() == "0.286" and bob.locator("#disagreements tr").count() == 3
        assert "no item judged by two raters" in bob.locator("#agreement tr", has_text="answer_relevancy").inner_text()
        bob.screenshot(path=str(SHOTS / "2-agreement.png"), full_page=True)
        bob.goto(base + f"/progress?queue={VERSION}/{NIGHT}")
        assert "bob: 5 of 10 queued labels; any rater: 7 of 10" in bob.locator("#overall").inner_text()
        bob.screenshot(path=str(SHOTS / "3-progress.png"), full_page=True)
        # curation: reject the base of the typo variant, edit another case, freeze
        cur = bob
        cur.goto(base + "/curate")
        base_case = load_version(VERSION, project.golden_dir)[0].filter(pl.col("base_case_id").is_not_null())["base_case_id"][0]
        row = cur.locator(f"tr[data-case='{base_case}']")
        row.locator("button.reject").click()
        row.locator("input.reason").fill("answer is a fragment of the source sentence")
        with cur.expect_navigation():
            row.locator("input.reason").press("Enter")
        other = cur.locator("#cases tr[data-case]").filter(has_text="break statement")
        other.locator("button.open-edit").click()
        other.locator("textarea.edit-query").fill("Which loop is terminated by the break statement?")
        with cur.expect_navigation():
            other.locator("button.save-edit").click()
        assert "1 rejected (1 variant(s) leave with their base), 1 edited" in cur.locator("#curation-summary").inner_text()
        cur.screenshot(path=str(SHOTS / "4-curate.png"), full_page=True)
        cur.fill("#new-version", "gs-review-curated-1")
        cur.click("#freeze")
        cur.wait_for_function("document.querySelector('#freeze-result').textContent.startsWith('frozen')", timeout=120_000)
        cur.screenshot(path=str(SHOTS / "5-frozen.png"), full_page=True)
        cur.goto(base + "/curate?version=gs-review-curated-1")
        assert cur.locator("#cases tr[data-case]").count() == 4 and cur.locator("#version").inner_text() == "gs-review-curated-1"
        assert not errors and not bob_errors
        browser.close()
    frozen, manifest = load_version("gs-review-curated-1", project.golden_dir)
    assert manifest["source"] == "curated" and "Which loop is terminated by the break statement?" in frozen["query"].to_list()
    assert set(frozen["validity_verdict"]) == {"valid"}  # the import-cases validity checks ran on the curated cases
    # the Dagster side: the page's label files ask for labels_job (once quiet for a minute: the reviewers paused), and the
    # refit sees the page's labels
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral()) as ctx:
        for f in project.labels_dir.glob("review-page_*.jsonl"):
            os.utime(f)  # just labelled (now, whatever the browser steps above cost on a loaded machine): wait
        assert isinstance(build_label_file_sensor(str(project.labels_dir))(ctx), dg.SkipReason)
        paused = time.time() - 120
        for f in project.labels_dir.glob("review-page_*.jsonl"):
            os.utime(f, (paused, paused))
        req = build_label_file_sensor(str(project.labels_dir))(ctx)
        ctx.instance.add_dynamic_partitions("golden_set_version", [VERSION])
        new = build_golden_set_sensor(str(project.golden_dir))(ctx)
    assert isinstance(req, dg.RunRequest) and "review-page_alice.jsonl" in req.tags["label_files"] and "review-page_bob" in req.tags["label_files"]
    assert [r.partition_key for r in new.run_requests] == ["gs-review-curated-1"]
    res = _refit(project)
    assert res.success
    fitted = res.output_for_node("calibrators").filter((pl.col("label_source") == "campaign") & (pl.col("dimension") == "groundedness"))
    # 7 answers labelled; the 2 where alice and bob split are ties, left out of calibration → 5 labels, too few to fit yet
    assert fitted["n_labels"].to_list() == [5] and fitted["status"][0] == "insufficient"
