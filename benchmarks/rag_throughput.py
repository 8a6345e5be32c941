"""Throughput of the systems under test on this machine, and the overhead of the harness itself.

* responses per minute for each default system (closed_book, bm25, dense, hybrid, oracle) on the
  local packaged LLM (llama.cpp, 2 threads), answers capped at --max-tokens;
* harness overhead per case — everything but the LLM call (retrieval incl. query embedding,
  distractor injection, ICL selection, prompt rendering, checkpoint append + fsync) — measured with
  a zero-cost LLM over many cases, and also as (wall time − LLM latency) in the real run.

Cases are built from the warehouse's chunks (query = a chunk's first words; source = that chunk),
so run the ingest job first (or the script falls back to CPython's pydoc topics, chunked here).

    python benchmarks/rag_throughput.py [--cases 4] [--overhead-cases 200] [--max-tokens 128]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from dataclasses import dataclass

import polars as pl

from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.responses.rag import CheckpointStore, RagPipeline, SystemConfig, run_responses
from hcat_pipeline.responses.retrieval import build_retriever

SYSTEMS = [
    SystemConfig("closed_book", retriever="closed_book", prompt="rag_closed_book_v1"),
    SystemConfig("bm25", retriever="bm25"),
    SystemConfig("dense", retriever="dense"),
    SystemConfig("hybrid", retriever="hybrid"),
    SystemConfig("oracle", retriever="oracle"),
]


@dataclass
class Free:
    text: str = "An answer."
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class FreeLLM:
    def generate(self, prompt, **kw):
        return Free()


def load_chunks(embedding_model):
    cpath, epath = WAREHOUSE_DIR / "chunks.parquet", WAREHOUSE_DIR / "chunk_embeddings.parquet"
    if cpath.exists() and epath.exists():
        chunks = pl.read_parquet(cpath).select("chunk_id", "text")
        emb = pl.read_parquet(epath)
        joined = chunks.join(emb, on="chunk_id")
        return joined["chunk_id"].to_list(), joined["text"].to_list(), joined["embedding"].to_numpy()
    from pydoc_data.topics import topics

    from hcat_pipeline.corpus.chunking import chunk_corpus

    out = chunk_corpus(((k, v) for k, v in sorted(topics.items())), 200, 40)
    texts = out["text"].to_list()
    return out["chunk_id"].to_list(), texts, embedding_model.embed(texts)


def make_cases(ids, texts, n, seed=0):
    rng = random.Random(seed)
    picks = rng.sample(range(len(ids)), min(n, len(ids)))
    cases = []
    for j, i in enumerate(picks):
        words = texts[i].split()[:14]
        cases.append({"case_id": f"b{j}", "query": "What does the documentation say about: " + " ".join(words) + "?",
                      "options": [], "reference_answer": " ".join(texts[i].split()[:25]), "expected_behavior": "answer",
                      "source_chunk_ids": [ids[i]], "distractor_passage": None, "base_case_id": None, "pair_id": None})
    return cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=4, help="cases per system on the real LLM")
    ap.add_argument("--overhead-cases", type=int, default=200, help="cases per system for the harness-only run")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--icl", type=int, default=0)
    args = ap.parse_args()

    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.llm import LLM

    emb = EmbeddingModel()
    ids, texts, matrix = load_chunks(emb)
    print(f"corpus: {len(ids)} chunks; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    cache: dict = {}
    t0 = time.perf_counter()
    for s in SYSTEMS:
        build_retriever(s.retriever, ids, texts, matrix, emb.embed, cache)
    print(f"index build (BM25 + dense matrix): {time.perf_counter() - t0:.2f}s")

    # 1. harness overhead: a zero-cost LLM, many cases
    cases = make_cases(ids, texts, args.overhead_cases, seed=1)
    emb.embed([c["query"] for c in cases])  # warm the model; the cache makes later query embeddings lookups
    print(f"\nharness overhead per case (zero-cost LLM, {len(cases)} cases, checkpoint fsync included):")
    for cfg in SYSTEMS:
        cfg = SystemConfig(**{**cfg.as_dict(), "icl_examples": args.icl})
        with tempfile.TemporaryDirectory() as d:
            sys_ = RagPipeline(cfg, cache[cfg.retriever], FreeLLM(), "free/0", icl_pool=cases)
            t = time.perf_counter()
            run_responses([sys_], cases, CheckpointStore(d))
            dt = time.perf_counter() - t
        print(f"  {cfg.system_id:12s} {1000 * dt / len(cases):7.2f} ms/case")

    # 2. the real local LLM
    llm = LLM(provider="local")
    llm.generate("Say OK.", max_tokens=2)  # load the model outside the timings
    cases = make_cases(ids, texts, args.cases, seed=2)
    print(f"\nlocal LLM ({llm.model_name}, max_tokens={args.max_tokens}, {len(cases)} cases per system):")
    print(f"  {'system':12s} {'resp/min':>9s} {'s/resp':>7s} {'in_tok':>7s} {'out_tok':>7s} {'overhead ms/case':>17s}")
    total_n, total_s = 0, 0.0
    for cfg in SYSTEMS:
        cfg = SystemConfig(**{**cfg.as_dict(), "icl_examples": args.icl, "max_tokens": args.max_tokens})
        with tempfile.TemporaryDirectory() as d:
            sys_ = RagPipeline(cfg, cache[cfg.retriever], llm, "local/qwen", icl_pool=cases)
            t = time.perf_counter()
            recs, stats = run_responses([sys_], cases, CheckpointStore(d))
            dt = time.perf_counter() - t
        llm_s = sum(r["latency_s"] or 0 for r in recs)
        n = len(recs)
        total_n, total_s = total_n + n, total_s + dt
        tin = sum(r["input_tokens"] or 0 for r in recs) / n
        tout = sum(r["output_tokens"] or 0 for r in recs) / n
        errs = sum(r["error"] is not None for r in recs)
        print(f"  {cfg.system_id:12s} {60 * n / dt:9.1f} {dt / n:7.2f} {tin:7.0f} {tout:7.0f} {1000 * (dt - llm_s) / n:17.1f}"
              + (f"  ({errs} errors)" if errs else ""))
    print(f"  {'all':12s} {60 * total_n / total_s:9.1f} {total_s / total_n:7.2f}")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
