"""Labelling on the review page vs the CSV export: what each costs per item, on real review-queue items.

    python benchmarks/review_labelling.py [--queue PATH] [--decisions benchmarks/data/review/labels_30.jsonl]

``--decisions``: one JSON line per item (case_id, system_id, dimension, label, why) — a reviewer's labels, given
in advance so both paths record the same judgements. Default queue: the latest stored run's (run a night first).

- Page: ``hcat review`` (a subprocess, a temporary label store) in headless Chromium; per item the screen is
  opened (``/label?case=…&system=…``, timed: server render + browser load) and one key is pressed (timed: save to
  the store + the next screen loaded). Keys pressed per item are counted.
- CSV: the review queue exported as the ``review_queue`` asset writes it; per item the physical lines of its row
  (contexts span many lines: what a reviewer scrolls past in an editor), the cells to type (label, rater,
  labelled_at) and their keystrokes; the filled copy's import into the store is timed.

A person's reading and deciding time is not measured here (it is the same on both paths); the figures are what
each path adds to it. Run it alone (it starts a browser and a server).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hcat_pipeline.calibration.store import LabelStore  # noqa: E402
from hcat_pipeline.paths import WAREHOUSE_DIR  # noqa: E402
from hcat_pipeline.review.items import find_queue, load_queue  # noqa: E402
from hcat_pipeline_tests.servers import review_server  # noqa: E402
from hcat_pipeline_tests.weakness_data import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

RATER = "bench"


def page_path(queue: Path, decisions: list[dict], labels_dir: Path) -> dict:
    from playwright.sync_api import sync_playwright

    opened, saved, keys = [], [], 0
    name = f"{queue.parent.name}/{queue.stem}"
    with review_server(["--queue", str(queue), "--labels-dir", str(labels_dir), "--warehouse", str(queue.parents[2])]) as base, \
            sync_playwright() as p:  # fmt: skip
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.add_cookies([{"name": "hcat_rater", "value": RATER, "url": base}])
        page = ctx.new_page()
        page.goto(f"{base}/label?queue={name}")  # warm: the first screen loads the queue
        for d in decisions:
            t0 = time.perf_counter()
            page.goto(f"{base}/label?queue={name}&case={d['case_id']}&system={d['system_id']}")
            opened.append(time.perf_counter() - t0)
            dims = page.locator("fieldset.dim")
            target = page.locator(f"fieldset.dim[data-dimension='{d['dimension']}']")
            if dims.count() > 1:
                target.focus()
                keys += 1
            t0 = time.perf_counter()
            with page.expect_response(lambda r: r.url.endswith("/api/labels")):
                page.keyboard.press(str(d["label"]))
            page.wait_for_load_state()
            saved.append(time.perf_counter() - t0)
            keys += 1
        browser.close()
    stored = LabelStore(labels_dir / "_store").labels()
    return {"items": len(decisions), "stored": stored.height, "keys_per_item": keys / len(decisions),
            "open_s_median": statistics.median(opened), "save_s_median": statistics.median(saved),
            "total_s": sum(opened) + sum(saved)}  # fmt: skip


def csv_path(queue: Path, decisions: list[dict], labels_dir: Path) -> dict:
    frame = load_queue(queue)
    export = labels_dir / "queue_export.csv"
    frame.with_columns(pl.col(c).cast(pl.String) for c in ("label", "rater", "labelled_at", "comment")).write_csv(export)
    text = export.read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines(keepends=True)))
    header, body = rows[0], rows[1:]
    lines = [sum(cell.count("\n") for cell in r) + 1 for r in body]
    want = {(d["case_id"], d["system_id"], d["dimension"]): d["label"] for d in decisions}
    idx = {c: header.index(c) for c in ("case_id", "system_id", "dimension", "label", "rater", "labelled_at")}
    now = datetime.now(UTC).date().isoformat()
    keystrokes, filled = 0, []
    for r in body:
        key = (r[idx["case_id"]], r[idx["system_id"]], r[idx["dimension"]])
        if key in want:
            r[idx["label"]], r[idx["rater"]], r[idx["labelled_at"]] = str(want[key]), RATER, now
            keystrokes += len(str(want[key])) + len(RATER) + len(now) + 3  # the three cells + moving between them
        filled.append(r)
    out = labels_dir / "my_labels.csv"
    with out.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, *filled])
    t0 = time.perf_counter()
    res = LabelStore(labels_dir / "_store").import_file(out)
    took = time.perf_counter() - t0
    picked = [n for r, n in zip(body, lines, strict=True) if (r[idx["case_id"]], r[idx["system_id"]], r[idx["dimension"]]) in want]
    return {"items": len(decisions), "stored": res.rows_added, "status": res.status, "rows_in_file": len(body),
            "physical_lines_in_file": sum(lines), "lines_per_row_median": statistics.median(picked), "lines_per_row_max": max(picked),
            "keys_per_item": keystrokes / len(decisions), "import_s": took}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queue", default="")
    ap.add_argument("--decisions", default=str(ROOT / "benchmarks" / "data" / "review" / "labels_30.jsonl"))
    args = ap.parse_args()
    queue = Path(args.queue) if args.queue else find_queue(WAREHOUSE_DIR)
    if queue is None or not Path(queue).is_file():
        print("no stored review queue: run a night first (bash scripts/campaign.sh) or pass --queue", file=sys.stderr)
        return 2
    decisions = [json.loads(line) for line in Path(args.decisions).read_text().splitlines() if line.strip()]
    q = load_queue(queue)
    keys = set(zip(q["case_id"], q["system_id"], q["dimension"], strict=True))
    missing = [d for d in decisions if (d["case_id"], d["system_id"], d["dimension"]) not in keys]
    if missing:
        print(f"{len(missing)} decision(s) are not items of {queue}: e.g. {missing[0]}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        page = page_path(Path(queue), decisions, Path(a))
        sheet = csv_path(Path(queue), decisions, Path(b))
    print(f"queue {queue} ({q.height} rows), {len(decisions)} decisions")
    print(f"page: {page['stored']} labels stored; per item: open {page['open_s_median']:.3f} s, key→saved→next {page['save_s_median']:.3f} s "
          f"(medians), {page['keys_per_item']:.1f} key(s); {page['total_s']:.1f} s in all")  # fmt: skip
    print(f"csv:  {sheet['stored']} labels stored ({sheet['status']}); the file has {sheet['rows_in_file']} rows on "
          f"{sheet['physical_lines_in_file']} physical lines; a labelled row spans {sheet['lines_per_row_median']} lines "
          f"(median, max {sheet['lines_per_row_max']}); {sheet['keys_per_item']:.1f} keystrokes per item; import {sheet['import_s']:.3f} s")  # fmt: skip
    print(json.dumps({"page": page, "csv": sheet}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
