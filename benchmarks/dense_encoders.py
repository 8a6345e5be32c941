"""The two dense encoders compared (exam paper §4.2): MiniLM (`dense`) vs the packaged multilingual USE-M3
(`dense_use`), with BM25 beside them, on a frozen golden set's answerable cases over the stored chunk index — no LLM:
hit rate at k (a source chunk of the case among the top k) with its Wilson 95 % interval, MRR, and the paired
difference dense_use − dense with its bootstrap CI.

    python benchmarks/dense_encoders.py [--warehouse data/warehouse] [--golden-set gs-…] [--k 3]

Needs a materialized night (``bash scripts/campaign.sh``: chunks, chunk_embeddings, a golden set). Run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from hcat_pipeline.common.stats import paired_bootstrap_ci, wilson_interval  # noqa: E402
from hcat_pipeline.resources.embedding import EmbeddingModel  # noqa: E402
from hcat_pipeline.resources.multilingual import MultilingualEncoder  # noqa: E402
from hcat_pipeline.responses.retrieval import build_retriever  # noqa: E402


def _cases(warehouse: Path, version: str | None) -> tuple[str, pl.DataFrame]:
    files = sorted((warehouse / "golden_set").glob("*.parquet"), key=lambda p: p.stat().st_mtime)
    path = warehouse / "golden_set" / f"{version}.parquet" if version else files[-1]
    gs = pl.read_parquet(path)
    keep = gs.filter((pl.col("expected_behavior") == "answer") & (pl.col("source_chunk_ids").list.len() > 0))
    return path.stem, keep.unique("query", keep="first", maintain_order=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warehouse", default=str(ROOT / "data" / "warehouse"))
    ap.add_argument("--golden-set", default=None, help="a version name (default: the newest stored golden set)")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dense_encoders.json"))
    args = ap.parse_args()
    wh = Path(args.warehouse)
    version, cases = _cases(wh, args.golden_set)
    index = pl.read_parquet(wh / "chunks.parquet").select("chunk_id", "text").join(
        pl.read_parquet(wh / "chunk_embeddings.parquet"), on="chunk_id", how="inner")  # fmt: skip
    ids, texts = index["chunk_id"].to_list(), index["text"].to_list()
    model, use = EmbeddingModel(), MultilingualEncoder()
    t0 = time.perf_counter()
    use_index = use.dense_index(texts)
    use_s = time.perf_counter() - t0
    cache: dict = {}
    retrievers = {name: build_retriever(name, ids, texts, index["embedding"].to_numpy(), model.embed, cache, use_index[:2])
                  for name in ("dense", "dense_use", "bm25")}  # fmt: skip
    queries, sources = cases["query"].to_list(), [set(s) for s in cases["source_chunk_ids"].to_list()]
    hits, rr = {}, {}
    for name, r in retrievers.items():
        got = r.retrieve_batch(queries, args.k)
        hits[name] = np.array([any(p.chunk_id in src for p in ps) for ps, src in zip(got, sources)], dtype=float)
        rr[name] = np.array([next((1 / p.rank for p in ps if p.chunk_id in src), 0.0) for ps, src in zip(got, sources)])
    res = {"golden_set": version, "cases": len(queries), "chunks": len(ids), "k": args.k, "use_index_seconds": round(use_s, 1),
           "load_avg": os.getloadavg(), "retrievers": {}}  # fmt: skip
    for name in retrievers:
        lo, hi = wilson_interval(int(hits[name].sum()), len(queries))
        res["retrievers"][name] = {"hit_rate": round(float(hits[name].mean()), 3), "ci": [round(lo, 3), round(hi, 3)],
                                   "mrr": round(float(rr[name].mean()), 3)}  # fmt: skip
        print(f"{name:>10}: hit@{args.k} {hits[name].mean():.3f} [{lo:.3f}, {hi:.3f}]  MRR {rr[name].mean():.3f}  (n = {len(queries)})")
    diff = paired_bootstrap_ci(hits["dense_use"], hits["dense"], seed=0)
    res["dense_use_minus_dense"] = {"estimate": diff.estimate, "ci": [diff.ci_low, diff.ci_high]}
    print(f"dense_use − dense hit@{args.k}: {diff.estimate:+.3f} [{diff.ci_low:+.3f}, {diff.ci_high:+.3f}] (paired bootstrap); "
          f"golden set {version}, {len(ids)} chunks, USE index {use_s:.1f} s")  # fmt: skip
    Path(args.out).write_text(json.dumps(res, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
