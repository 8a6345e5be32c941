"""The hybrid retriever with and without its re-ranker (exam paper §4.2), on a frozen golden set's answerable cases over
the stored chunk index: hit rate at k (a source chunk of the case among the top k) with its Wilson 95 % interval, MRR,
the paired difference hybrid_rerank − hybrid with its bootstrap CI, and the re-ranker's time per question. The
re-ranker is the packaged 0.5B LLM read as a pointwise cross-encoder (``responses.rerank``: no cross-encoder ships
offline).

    python benchmarks/rerank.py [--warehouse data/warehouse] [--golden-set gs-…] [--k 3] [--max-cases 60]

Needs a materialized night (``bash scripts/campaign.sh``: chunks, chunk_embeddings, a golden set). Run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from hcat_pipeline.common.stats import paired_bootstrap_ci, wilson_interval  # noqa: E402
from hcat_pipeline.resources.embedding import EmbeddingModel  # noqa: E402
from hcat_pipeline.resources.llm import LLM  # noqa: E402
from hcat_pipeline.responses.rerank import llm_relevance  # noqa: E402
from hcat_pipeline.responses.retrieval import RERANK_DEPTH, build_retriever  # noqa: E402


def _cases(warehouse: Path, version: str | None, n: int, seed: int) -> tuple[str, pl.DataFrame]:
    files = sorted((warehouse / "golden_set").glob("*.parquet"), key=lambda p: p.stat().st_mtime)
    path = warehouse / "golden_set" / f"{version}.parquet" if version else files[-1]
    gs = pl.read_parquet(path)
    keep = gs.filter((pl.col("category") == "happy_path") & (pl.col("source_chunk_ids").list.len() > 0))
    keep = keep.unique("query", keep="first", maintain_order=True).sort("case_id")
    rows = list(range(keep.height))
    random.Random(seed).shuffle(rows)  # a seeded sample, fixed before any result is seen
    return path.stem, keep[sorted(rows[:n])] if n else keep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warehouse", default=str(ROOT / "data" / "warehouse"))
    ap.add_argument("--golden-set", default=None, help="a version name (default: the newest stored golden set)")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--max-cases", type=int, default=60, help="a seeded sample of the happy-path cases (0 = all)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rerank.json"))
    args = ap.parse_args()
    wh = Path(args.warehouse)
    version, cases = _cases(wh, args.golden_set, args.max_cases, seed=0)
    index = pl.read_parquet(wh / "chunks.parquet").select("chunk_id", "text").join(
        pl.read_parquet(wh / "chunk_embeddings.parquet"), on="chunk_id", how="inner")  # fmt: skip
    ids, texts, matrix = index["chunk_id"].to_list(), index["text"].to_list(), index["embedding"].to_numpy()
    model, llm = EmbeddingModel(), LLM(provider="local")
    cache: dict = {}
    retrievers = {"hybrid": build_retriever("hybrid", ids, texts, matrix, model.embed, cache),
                  "hybrid_rerank": build_retriever("hybrid_rerank", ids, texts, matrix, model.embed, cache, rerank=llm_relevance(llm))}
    queries, sources = cases["query"].to_list(), [set(s) for s in cases["source_chunk_ids"].to_list()]
    depth_hits = np.array([any(p.chunk_id in src for p in ps) for ps, src in
                           zip(retrievers["hybrid"].retrieve_batch(queries, RERANK_DEPTH), sources, strict=True)], dtype=float)  # fmt: skip
    hits, rr, seconds = {}, {}, {}
    for name, r in retrievers.items():
        t0 = time.perf_counter()
        got = r.retrieve_batch(queries, args.k)
        seconds[name] = (time.perf_counter() - t0) / len(queries)
        hits[name] = np.array([any(p.chunk_id in src for p in ps) for ps, src in zip(got, sources, strict=True)], dtype=float)
        rr[name] = np.array([next((1 / p.rank for p in ps if p.chunk_id in src), 0.0) for ps, src in zip(got, sources, strict=True)])
    res = {"golden_set": version, "cases": len(queries), "chunks": len(ids), "k": args.k, "rerank_depth": RERANK_DEPTH,
           "source_in_fused_top_depth": round(float(depth_hits.mean()), 3), "load_avg": os.getloadavg(), "retrievers": {}}  # fmt: skip
    for name in retrievers:
        lo, hi = wilson_interval(int(hits[name].sum()), len(queries))
        res["retrievers"][name] = {"hit_rate": round(float(hits[name].mean()), 3), "ci": [round(lo, 3), round(hi, 3)],
                                   "mrr": round(float(rr[name].mean()), 3), "seconds_per_question": round(seconds[name], 2)}  # fmt: skip
        print(f"{name:>14}: hit@{args.k} {hits[name].mean():.3f} [{lo:.3f}, {hi:.3f}]  MRR@{args.k} {rr[name].mean():.3f}  "
              f"{seconds[name]:.2f} s/question  (n = {len(queries)})")  # fmt: skip
    diff = paired_bootstrap_ci(hits["hybrid_rerank"], hits["hybrid"], seed=0)
    mrr = paired_bootstrap_ci(rr["hybrid_rerank"], rr["hybrid"], seed=0)
    res["rerank_minus_hybrid"] = {"hit": [diff.estimate, diff.ci_low, diff.ci_high], "mrr": [mrr.estimate, mrr.ci_low, mrr.ci_high]}
    print(f"hybrid_rerank − hybrid: hit@{args.k} {diff.estimate:+.3f} [{diff.ci_low:+.3f}, {diff.ci_high:+.3f}], MRR "
          f"{mrr.estimate:+.3f} [{mrr.ci_low:+.3f}, {mrr.ci_high:+.3f}] (paired bootstrap); the source is in the fused top "
          f"{RERANK_DEPTH} for {depth_hits.mean():.3f} (the re-ranker's ceiling); golden set {version}, {len(ids)} chunks; "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    Path(args.out).write_text(json.dumps(res, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
