"""A later night when only the user's HTTP service changed (issue 66 item 4): what is reused, what is recomputed, how long.

    bash scripts/campaign.sh                       # first: the default night (generates and freezes the golden set)
    python benchmarks/later_night.py [--data data] [--out benchmarks/results/later_night.json]

The default campaign file on the golden-set version the data's last night read (its answers filed, in the copy, under
an earlier night key than the two nights run, so that both read them as an earlier night's) (``golden_set_version`` pinned, no
shipped review, ``gates_read: all``) plus one HTTP system (``their_rag``, a service on loopback answering from the golden
set's references) runs two nights on a copy of ``--data`` (its frozen golden sets, warehouse with the earlier night's
answers, labels; nothing of the project's own data is written): night 1 — the service as it was; night 2 — the service
changed (a third of its answers are now "I am not sure."). Each night is ``hcat campaign --night`` in a fresh process, timed whole; per stage, the console's
"done in" seconds. Reuse read from what the night stored: the responses taken from an earlier night (``reused_from``),
the metric shards read from the score cache (``metrics.score_cache``), the reference labels' scoring, the embedding
cache. Run it alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NIGHTS = ("2025-06-02", "2025-06-03")
EARLIER = "2025-06-01"  # the data's last night's answers are filed under this night in the copy, so both nights read them as earlier
STEP = re.compile(r"✔ (\S+) done in ([0-9.]+)s")


@contextmanager
def service(golden_sets: list[Path], state: dict):
    """``their_rag`` on loopback: a golden set's reference for its question, as its answer and its context; with
    state["changed"], a third of the questions (by a hash of the question) are answered "I am not sure."."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import polars as pl

    table = {}
    for path in golden_sets:
        for r in pl.read_parquet(path).select("query", "reference_answer").to_dicts():
            third = int(hashlib.sha256(r["query"].encode()).hexdigest()[:8], 16) % 3 == 0
            table.setdefault(r["query"], (third, r["reference_answer"] or "I am not sure."))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            third, answer = table.get(body.get("question", ""), (False, "I do not know."))
            if state["changed"] and third:
                answer = "I am not sure."
            data = json.dumps({"answer": answer, "contexts": [answer]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ask"
    finally:
        server.shutdown()


def campaign_file(path: Path, url: str, version: str) -> None:
    """The default campaign file on the version the earlier night read, every case read by the gates (a user's default),
    plus ``their_rag``."""
    import yaml

    spec = yaml.safe_load((ROOT / "campaign.yaml").read_text())
    spec.update(golden_set_version=version, shipped_review="", gates_read="all")
    spec["systems"].append({"system_id": "their_rag", "http": {"url": url, "request_template": '{"question": "{{query}}"}',
                                                               "answer_path": "answer", "contexts_path": "contexts"}})  # fmt: skip
    path.write_text(yaml.safe_dump(spec, sort_keys=False))


def reuse(data: Path, night: str, log: str) -> dict:
    import polars as pl

    wh = data / "warehouse"
    out = {"responses": {}, "metric_shards": {}, "log_reuse_lines": [ln.strip() for ln in log.splitlines() if "reused" in ln][:20]}
    for path in (wh / "rag_responses").glob(f"*/{night}.parquet"):
        r = pl.read_parquet(path)
        for (sid,), g in r.group_by("system_id"):
            out["responses"][sid] = {"asked": int(g["reused_from"].is_null().sum()), "reused": int(g["reused_from"].is_not_null().sum())}
    for path in (wh / "metric_tables").glob(f"*/{night}.parquet"):
        info = json.loads(pl.read_parquet(path)["score_info"][0]) if "score_info" in pl.read_parquet_schema(path) else {}
        out["metric_shards"] = {"shards": info.get("shards"), "reused": info.get("shards_reused")}
    return out


def night(env: dict, cfg: Path, key: str) -> dict:
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "hcat_pipeline.cli", "campaign", "--config", str(cfg), "--night", key],
                         env=env, cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    wall = time.perf_counter() - t0
    if run.returncode not in (0, 3):
        sys.exit(f"night {key} failed ({run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    steps = {m.group(1): float(m.group(2)) for m in STEP.finditer(run.stdout)}
    full_log = Path(env["HCAT_DATA_DIR"]) / "logs" / f"campaign-{key}.log"
    return {"night": key, "wall_s": round(wall, 1), "steps": steps,
            "reuse": reuse(Path(env["HCAT_DATA_DIR"]), key, full_log.read_text() if full_log.exists() else run.stdout)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "data"), help="a data folder a night has run on (golden_sets, warehouse)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "later_night.json"))
    args = ap.parse_args()
    src = Path(args.data)
    versions = sorted(p for p in (src / "golden_sets").glob("*/golden_set.parquet"))
    nights = sorted((src / "warehouse" / "rag_responses").glob("*/*.parquet"), key=lambda p: p.stat().st_mtime)
    if not versions or not nights:
        sys.exit(f"{src} holds no night: run `bash scripts/campaign.sh` first")
    version = nights[-1].parent.name  # the version the last night read: its answers are the earlier night's
    tmp = Path(tempfile.mkdtemp(prefix="later-night-"))
    data = tmp / "data"
    for sub in ("golden_sets", "warehouse", "labels", "curation"):
        if (src / sub).exists():
            shutil.copytree(src / sub, data / sub)
    checkpoints = data / "warehouse" / "_checkpoints" / "rag_responses" / version
    if (checkpoints / nights[-1].stem).is_dir():  # nights are never in the future: the earlier night gets an earlier key
        shutil.copytree(checkpoints / nights[-1].stem, checkpoints / EARLIER)
    (tmp / "home").mkdir()
    shutil.copy(ROOT / "dagster.yaml", tmp / "home" / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(tmp / "home"), "HCAT_DATA_DIR": str(data)}
    for k in ("HCAT_WAREHOUSE_DIR", "HCAT_GOLDEN_SETS_DIR", "HCAT_REPORTS_DIR", "HCAT_LABELS_DIR", "HCAT_CURATION_DIR"):
        env.pop(k, None)
    state = {"changed": False}
    results = []
    with service(versions, state) as url:
        cfg = tmp / "campaign.yaml"
        campaign_file(cfg, url, version)
        for i, key in enumerate(NIGHTS):
            state["changed"] = i == 1
            results.append(night(env, cfg, key))
            r = results[-1]
            top = sorted(r["steps"].items(), key=lambda kv: -kv[1])[:8]
            print(f"night {key} ({'service changed' if i else 'service as before'}): {r['wall_s']:.1f} s whole")
            print("  slowest steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in top))
            print(f"  responses asked / reused: {r['reuse']['responses']}")
            print(f"  metric shards reused from the score cache: {r['reuse']['metric_shards']}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"nights": results, "load_before": os.getloadavg()}, indent=1))
    print(f"raw: {args.out}; scratch: {tmp}")


if __name__ == "__main__":
    main()
