"""weakness_report + campaign_report materialized on a small hand-built run, and the HTML report opened in
real headless Chromium (Debian ``chromium`` + Python ``playwright``; never ``playwright install``)."""

from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance

from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS, NIGHT, VERSION, materialize_reports, run_tables, store_run


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    wh = tmp_path_factory.mktemp("wh")
    store_run(wh, run_tables())
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    result = materialize_reports(wh, instance, wh / "reports", wh / "gs", n_boot=300)
    meta = {e.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()}
    return {"wh": wh, "meta": meta, "path": wh / "reports" / VERSION / NIGHT / "report.html"}


def test_weakness_report_tables_and_plots_in_metadata(report):
    wh, meta = report["wh"], report["meta"]
    cells = pl.read_parquet(wh / "weakness_report" / VERSION / f"{NIGHT}.parquet")
    assert {"golden_set_version", "night", "campaign_sha256", "n", "mean", "ci_low", "ci_high", "claim_strength", "small",
            "weak_rank_mean", "weak_rank_ci_bound"} <= set(cells.columns)  # fmt: skip
    assert cells.filter(pl.col("n") >= 2)["ci_low"].null_count() == 0
    plots = [k for k in meta["weakness_report"] if k.startswith("plot_")]
    assert plots and all(meta["weakness_report"][k].value.startswith("![") and "data:image/png;base64," in meta["weakness_report"][k].value for k in plots)
    assert "not available" in meta["weakness_report"]["calibrated_scores"].value  # no calibrated_scores stored: said, not a crash
    for name in ("weakest_cases", "robustness_deltas", "failure_cases"):
        assert (wh / name / VERSION / f"{NIGHT}.parquet").exists()


def test_report_is_written_with_sections_and_missing_inputs_explained(report):
    html = report["path"].read_text(encoding="utf-8")
    meta = report["meta"]["campaign_report"]
    assert meta["report_path"].value == str(report["path"])
    assert "Release gates:" in meta["summary"].value and "Failures" in meta["summary"].value
    assert "Human labels wanted: 2 items (2 answers) in the review queue — `hcat review`" in meta["summary"].value
    # gates first: the gate table precedes every other table
    assert html.index('id="table-gates"') < html.index('id="table-headline"') < html.index('id="table-weakest"')
    for key in ("rankings", "pareto", "validity", "calibrated"):
        assert f'id="missing-{key}"' in html and "not available: " in html
    assert "typo costs dense" in html and "PERSON: John" in html and "gs-test" in html
    # a blocking gate failed on this (first) night: its postmortem beside the report, named in the summary (golden-eval §9.3)
    failed = pl.read_parquet(report["wh"] / "gate_verdicts" / "gs-test" / "2025-06-01.parquet").filter(pl.col("blocking") & (pl.col("verdict") == "FAIL"))
    pm = report["path"].parent / "postmortem.md"
    assert failed.height > 0 and pm.exists() and "Postmortem (golden-eval §9.3)" in meta["summary"].value
    assert f"{failed['system_id'][0]}: {failed['gate'][0]} FAILED" in pm.read_text() and "no earlier night" in pm.read_text()
    # the paired comparison of the two systems on their shared cases (golden-eval §4.3): McNemar on pass / fail
    assert 'id="table-paired"' in html and "mcnemar_exact" in html and html.index('id="table-paired"') < html.index('id="missing-pareto"')
    from hcat_pipeline.paths import REVIEW_URL

    assert html.count(REVIEW_URL) == 2  # the summary line and its link: "label these items" on the local review page
    rest = html.replace(REVIEW_URL, "")
    assert "http://" not in rest and "https://" not in rest  # nothing to fetch


def test_report_renders_in_headless_chromium_without_network(report, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (scripts/setup.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    outside: list[str] = []

    def block(route):
        outside.append(route.request.url)
        route.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route(lambda url: not url.startswith(("file:", "data:")), block)
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report["path"].as_uri(), wait_until="load")
            assert page.title().startswith("Campaign report")
            assert page.locator("h2#gates").is_visible() and page.locator("#table-gates tbody tr").count() > 0
            widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
            assert len(widths) == report["meta"]["campaign_report"]["plots"].value > 0
            assert all(w > 0 for w in widths), widths
            link = page.locator("#review-link a")  # "label these 2 items" → the review page for this run's queue
            assert link.inner_text() == "label these 2 items" and link.get_attribute("href").endswith(f"/label?queue={VERSION}/{NIGHT}")
            first = page.locator("figure img").first
            first.scroll_into_view_if_needed()
            assert first.is_visible() and first.bounding_box()["width"] > 100
            shot = tmp_path / "campaign_report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert outside == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    assert shot.stat().st_size > 10_000  # the artifact: <pytest tmp dir>/campaign_report.png
