"""The Dagster UI in a real browser (Debian chromium + Python playwright, never ``playwright install``)
against ``dagster dev`` started here on 127.0.0.1 with a temporary DAGSTER_HOME and data folders:
every lineage group's asset graph loads; ``golden_set`` (per version) is materialized for one partition
by clicking and the run succeeds; weakness_report's metadata shows its plot; the campaign report opens.
Screenshots are kept under the pytest tmp dir (``ui_*.png``)."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import httpx
import polars as pl
import pytest

from hcat_pipeline_tests.servers import free_port
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS, NIGHT, VERSION, materialize_reports, run_tables, store_run

ROOT = Path(__file__).resolve().parents[1]
UI_VERSION = "gs-ui"
LOCATION = "__repository__@hcat_pipeline.definitions"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (scripts/setup.sh installs it)")


def _seed(tmp: Path) -> dict:
    """Temporary home + warehouse: golden candidates to freeze, and a hand-built run's report assets."""
    from hcat_pipeline.partitions import golden_set_version
    from hcat_pipeline.schemas import GOLDEN_SET

    home, wh = tmp / "dagster_home", tmp / "warehouse"
    home.mkdir()
    wh.mkdir()
    (home / "dagster.yaml").write_text("telemetry: {enabled: false}\nnux: {enabled: false}\n")
    t = run_tables()
    gs = t["golden_set"]  # padded to the GOLDEN_SET contract: golden_set freezes it as version gs-ui
    gs.with_columns([pl.lit(None, dtype=d).alias(c) for c, d in GOLDEN_SET.items() if c not in gs.columns]).select(
        list(GOLDEN_SET)).cast(GOLDEN_SET).write_parquet(wh / "golden_candidates.parquet")
    store_run(wh, t)
    instance = dg.DagsterInstance.from_config(str(home))
    instance.add_dynamic_partitions(golden_set_version.name, [VERSION, UI_VERSION])
    materialize_reports(wh, instance, tmp / "reports", tmp / "golden_sets", n_boot=200)
    instance.dispose()
    return {"home": home, "wh": wh, "report": tmp / "reports" / VERSION / NIGHT / "report.html", "run_partition": f"{VERSION}|{NIGHT}"}


def _location_loaded(url: str) -> bool:
    """Every code location of the workspace LOADED (GraphQL ``workspaceOrError``)."""
    query = "{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus } } } }"
    try:
        reply = httpx.post(f"{url}/graphql", json={"query": query}, timeout=10)
        entries = reply.json()["data"]["workspaceOrError"].get("locationEntries") or []
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return False
    return bool(entries) and all(e.get("loadStatus") == "LOADED" for e in entries)


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui")
    seeded = _seed(tmp)
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(seeded["home"]), "HCAT_WAREHOUSE_DIR": str(seeded["wh"]),
           "HCAT_GOLDEN_SETS_DIR": str(tmp / "golden_sets"), "HCAT_REPORTS_DIR": str(tmp / "reports"),
           "HCAT_LABELS_DIR": str(tmp / "labels"), "HCAT_SOURCE_OBSERVE_CRON": "0 0 1 1 *"}  # fmt: skip
    log = open(tmp / "dagster_dev.log", "w")
    proc = subprocess.Popen([str(ROOT / ".venv" / "bin" / "dagster"), "dev", "-w", str(ROOT / "workspace.yaml"), "-h", "127.0.0.1",
                             "-p", str(port)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 900  # a stall guard: the loop ends as soon as the code location has loaded
        while True:
            assert proc.poll() is None, (tmp / "dagster_dev.log").read_text()[-3000:]
            if _location_loaded(url):  # not just /server_info, which answers before the definitions are imported
                break
            assert time.monotonic() < deadline, "dagster dev did not load the code location within 900 s"
            time.sleep(1)
        yield {**seeded, "url": url, "tmp": tmp}
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):  # our own process group only
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=20)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        log.close()


@pytest.fixture(scope="module")
def page(ui):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        pg = browser.new_page(viewport={"width": 1600, "height": 1000})
        pg.set_default_timeout(90_000)
        yield pg
        browser.close()


def _shot(page, ui, name: str) -> Path:
    path = ui["tmp"] / f"ui_{name}.png"
    page.screenshot(path=str(path))
    return path


def test_every_lineage_group_graph_loads(ui, page):
    from hcat_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    groups: dict[str, list[str]] = {}
    for key in graph.get_all_asset_keys():
        groups.setdefault(graph.get(key).group_name, []).append(key.to_user_string())
    for group, keys in sorted(groups.items()):
        page.goto(f"{ui['url']}/locations/{LOCATION}/asset-groups/{group}/lineage")
        # the graph is drawn (it is virtualised: off-screen nodes are not in the DOM, so: some node of the group) …
        js = "([keys, every]) => { const t = document.body.textContent.replace(/[\\u200b\\u00ad]/g, '');" \
             " return every ? keys.every(k => t.includes(k)) : keys.some(k => t.includes(k)); }"
        try:
            page.wait_for_function(js, arg=[sorted(keys), False], timeout=300_000)
        finally:
            shot = _shot(page, ui, f"group_{group}")
        assert shot.stat().st_size > 5_000
        page.goto(f"{ui['url']}/locations/{LOCATION}/asset-groups/{group}/list")  # … and lists every asset of the group
        page.wait_for_function(js, arg=[sorted(keys), True], timeout=300_000)


def test_materialize_a_golden_set_version_by_clicking(ui, page):
    page.goto(f"{ui['url']}/assets/golden_set")
    try:
        page.locator("button:has-text('Materialize')").first.click()
        dialog = page.get_by_role("dialog")
        dialog.wait_for(state="visible")
        if dialog.get_by_text("Are you sure?").count():  # golden_candidates was written outside Dagster (seeded)
            dialog.get_by_role("button", name="Confirm").click()
            page.get_by_text("Are you sure?").wait_for(state="detached")
            dialog = page.get_by_role("dialog")
            dialog.wait_for(state="visible")
        _shot(page, ui, "materialize_dialog")
        page.get_by_text("Select a partition or create one").first.click()
        page.keyboard.type(UI_VERSION)
        page.get_by_text("Select all (1)").click()  # the filtered list holds only this version
        page.keyboard.press("Escape")
        _shot(page, ui, "materialize_partition")
        dialog.get_by_role("button", name=re.compile(r"^Launch (1 run|backfill)")).click()
    finally:
        _shot(page, ui, "materialize_last")
    instance = dg.DagsterInstance.from_config(str(ui["home"]))
    deadline, run = time.monotonic() + 900, None  # a stall guard: the loop ends when the run finishes
    while time.monotonic() < deadline:
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": UI_VERSION}))
        run = runs[0] if runs else None
        if run is not None and run.is_finished:
            break
        time.sleep(2)
    assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS, run
    page.goto(f"{ui['url']}/runs/{run.run_id}")
    page.get_by_text("Success", exact=False).first.wait_for(state="visible")
    _shot(page, ui, "run_success")
    assert (ui["tmp"] / "golden_sets" / UI_VERSION / "manifest.json").exists()


def test_asset_metadata_shows_its_plot_and_the_campaign_report_opens(ui, page):
    from urllib.parse import quote

    page.goto(f"{ui['url']}/assets/weakness_report?view=events&partition={quote(ui['run_partition'])}")
    page.get_by_text("plot_", exact=False).first.wait_for(state="visible")
    _shot(page, ui, "weakness_metadata")
    page.get_by_text("plot_", exact=False).first.scroll_into_view_if_needed()
    page.get_by_text("[Show Markdown]").first.click()  # a markdown metadata value opens in a dialog
    img = page.locator("img[src^='data:image/png']").first
    img.wait_for(state="attached", timeout=30_000)
    img.scroll_into_view_if_needed()
    assert img.evaluate("i => i.complete ? i.naturalWidth : 0") > 50
    _shot(page, ui, "weakness_plot_visible")
    page.goto(ui["report"].as_uri())
    assert page.title().startswith("Campaign report")
    assert _shot(page, ui, "campaign_report").stat().st_size > 10_000
