"""Reviewing a golden-set version one case a screen (``/curate/case``): what the page adds to a person's reading time.

    python benchmarks/review_curation.py [--version gs-…] [--cases 50] [--golden-dir data/golden_sets] [--chunks PATH]

A scripted reviewer in headless Chromium (1400 × 900, a laptop screen) clears ``--cases`` cases of a frozen version
(default: the latest) through ``hcat review`` (a subprocess; a scratch curation folder, so the project's decisions are
untouched): per case the screen is drawn, the reviewer decides from the keyboard — ``a`` (accept) when the validator
calls the case valid, else ``r``, a reason and ``Enter`` (reject) — and the page moves on to the next unreviewed case.

Prints per case the machine time (key → decision saved → next screen drawn), the keys pressed, whether the screen fits
without scrolling (``document.scrollingElement.scrollHeight`` ≤ the window's height), and the person-time estimate at
10 s of reading a case plus the machine time. The target (issue 47): 50 cases in ≤ 10 minutes of a person's time.
Run it alone (it starts a browser and a server).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hcat_pipeline.golden.cases import latest_version, load_version  # noqa: E402
from hcat_pipeline.paths import GOLDEN_SETS_DIR, WAREHOUSE_DIR  # noqa: E402
from hcat_pipeline_tests.servers import review_server  # noqa: E402
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

READ_S = 10.0  # a person's reading and deciding time per case (assumed: the issue's ~10 s a case)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="")
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--golden-dir", default=str(GOLDEN_SETS_DIR))
    ap.add_argument("--chunks", default=str(WAREHOUSE_DIR / "chunks.parquet"))
    ap.add_argument("--screenshot", default="", help="save the first screen here (.png)")
    args = ap.parse_args()
    version = args.version or latest_version(args.golden_dir)
    if version is None:
        print("no frozen golden-set version: run a night first (bash scripts/campaign.sh) or pass --golden-dir", file=sys.stderr)
        return 2
    frame, _ = load_version(version, args.golden_dir)
    from playwright.sync_api import sync_playwright

    per_case, keys, fits, actions = [], [], [], {"accept": 0, "reject": 0}
    with tempfile.TemporaryDirectory() as scratch, \
            review_server(["--golden-dir", args.golden_dir, "--curation-dir", scratch, "--chunks", args.chunks,
                           "--labels-dir", scratch, "--warehouse", str(WAREHOUSE_DIR)]) as base, sync_playwright() as p:  # fmt: skip
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        ctx.add_cookies([{"name": "hcat_rater", "value": "bench", "url": base}])
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(f"{base}/curate/case?version={version}")
        first_s = time.perf_counter() - t0
        if args.screenshot:
            page.screenshot(path=args.screenshot)
        for _ in range(min(args.cases, frame.height)):
            fits.append(page.evaluate("document.scrollingElement.scrollHeight <= window.innerHeight"))
            valid = page.locator("#validity strong").inner_text() == "valid"
            t0 = time.perf_counter()
            with page.expect_navigation():
                if valid:
                    page.keyboard.press("a")
                    keys.append(1)
                    actions["accept"] += 1
                else:
                    page.keyboard.press("r")
                    page.keyboard.type("unsound")
                    page.keyboard.press("Enter")
                    keys.append(1 + len("unsound") + 1)
                    actions["reject"] += 1
            per_case.append(time.perf_counter() - t0)
        left = page.locator("#left").inner_text()
        browser.close()
    n = len(per_case)
    person_min = (n * READ_S + sum(per_case)) / 60
    print(f"version {version} ({frame.height} cases): {n} reviewed ({actions['accept']} accepted, {actions['reject']} rejected); "
          f"first screen {first_s:.2f} s; per case key → saved → next screen {statistics.median(per_case):.3f} s median, "
          f"{max(per_case):.3f} s max; {statistics.mean(keys):.1f} keys a case; {sum(fits)} of {n} screens fit 1400 × 900 without "
          f"scrolling; after: {left}")  # fmt: skip
    print(f"person time at {READ_S:.0f} s reading a case: {person_min:.1f} min for {n} cases (target ≤ 10 min for 50)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
