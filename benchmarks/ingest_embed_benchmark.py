"""Ingest → chunk → embed throughput on the default corpus vs the floor, warm-cache speed-up, peak RSS.

floor      = bare SentenceTransformer.encode of the same chunk texts, in this process (model warm)
pipeline   = ingest (pydoc_data topics) + sentence-aware chunking + EmbeddingModel.embed, cold cache
warm       = the embedding stage again over the same texts with the cache now filled
peak RSS   = a child process that runs only the embedding stage (cold cache), ru_maxrss

Usage: python benchmarks/ingest_embed_benchmark.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time


def pipeline(cache_dir: str):
    from hcat_pipeline.core.chunking import chunk_corpus
    from hcat_pipeline.core.ingest import ingest
    from hcat_pipeline.resources.embedding import EmbeddingModel

    t0 = time.perf_counter()
    docs, _, _ = ingest(include_embedded=True, drop_folder=None)
    chunks = chunk_corpus(docs.select("doc_id", "text").iter_rows())
    t1 = time.perf_counter()
    model = EmbeddingModel(cache_dir=cache_dir)
    model.embed(chunks["text"].to_list())
    t2 = time.perf_counter()
    return chunks["text"].to_list(), t1 - t0, t2 - t1, model


def child_embed_only() -> None:
    from hcat_pipeline.core.chunking import chunk_corpus
    from hcat_pipeline.core.ingest import ingest
    from hcat_pipeline.resources.embedding import EmbeddingModel

    docs, _, _ = ingest(include_embedded=True, drop_folder=None)
    texts = chunk_corpus(docs.select("doc_id", "text").iter_rows())["text"].to_list()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as d:
        EmbeddingModel(cache_dir=d).embed(texts)
    print(json.dumps({"rss_before_kb": before, "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        child_embed_only()
        return
    import torch

    from hcat_pipeline.models import minilm_path
    from hcat_pipeline.resources.embedding import _load_sentence_transformer

    st = _load_sentence_transformer(str(minilm_path()))  # the same in-process model both paths use
    st.encode(["warm up"], normalize_embeddings=True)
    floors, pipes, warms = [], [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            texts, t_prep, t_embed, model = pipeline(cache)
            pipes.append(t_prep + t_embed)
            t0 = time.perf_counter()
            model.embed(texts)
            warms.append((t_embed, time.perf_counter() - t0, model.last_stats.cache_hits))
        t0 = time.perf_counter()
        st.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        floors.append(time.perf_counter() - t0)
    floor, pipe = min(floors), min(pipes)
    cold_embed, warm_embed, hits = min(warms, key=lambda w: w[1])
    child = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, check=True)
    rss = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"chunks: {len(texts)}  (torch threads: {torch.get_num_threads()})")
    print(f"floor (bare SentenceTransformer.encode): {floor:.2f} s  = {len(texts) / floor:.1f} chunks/s")
    print(f"pipeline ingest+chunk+embed (cold cache): {pipe:.2f} s  = {len(texts) / pipe:.1f} chunks/s")
    print(f"throughput ratio pipeline/floor: {floor / pipe:.3f}  (target >= 0.9)")
    print(f"embedding stage cold {cold_embed:.2f} s, warm {warm_embed:.4f} s, cache hits {hits}: speed-up {cold_embed / warm_embed:.0f}x (target >= 20x)")
    print(f"peak RSS of the embedding stage process: {rss['peak_rss_kb'] / 1024:.0f} MiB (before embedding {rss['rss_before_kb'] / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
