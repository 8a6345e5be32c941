"""Ingest → chunk → embed throughput on the default corpus vs the floors, warm-cache speed-up, peak RSS.

floor torch = bare SentenceTransformer.encode of the chunk texts, in this process (model warm)
floor onnx  = bare int8 ONNX encoder (``OnnxSentenceEncoder.encode``) of the same texts (model warm)
pipeline    = ingest (pydoc_data topics) + sentence-aware chunking + EmbeddingModel.embed with the
              default backend (``--backend``), cold cache
warm        = the embedding stage again over the same texts with the cache now filled
agreement   = cosine of the ONNX and torch vectors of every chunk (min / mean / share below 0.999)
peak RSS    = per backend, a child process that runs only the embedding stage (cold cache), VmHWM

Usage: python benchmarks/ingest_embed_benchmark.py [--repeats 2] [--backend onnx_int8|torch]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def corpus_chunks() -> list[str]:
    from hcat_pipeline.corpus.chunking import chunk_corpus
    from hcat_pipeline.corpus.ingest import ingest

    docs, _, _ = ingest(include_embedded=True, drop_folder=None)
    return chunk_corpus(docs.select("doc_id", "text").iter_rows())["text"].to_list()


def pipeline(cache_dir: str, backend: str):
    from hcat_pipeline.resources.embedding import EmbeddingModel

    t0 = time.perf_counter()
    texts = corpus_chunks()
    t1 = time.perf_counter()
    model = EmbeddingModel(backend=backend, cache_dir=cache_dir)
    model.embed(texts)
    t2 = time.perf_counter()
    return texts, t1 - t0, t2 - t1, model


def child_embed_only(backend: str) -> None:
    from hcat_pipeline.resources.embedding import EmbeddingModel

    texts = corpus_chunks()
    before = _vm_kib("VmRSS")
    with tempfile.TemporaryDirectory() as d:
        EmbeddingModel(backend=backend, cache_dir=d).embed(texts)
    print(json.dumps({"rss_before_kb": before, "peak_rss_kb": _vm_kib("VmHWM")}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--backend", choices=["onnx_int8", "torch"], default="onnx_int8")
    ap.add_argument("--child", choices=["onnx_int8", "torch"])
    args = ap.parse_args()
    if args.child:
        child_embed_only(args.child)
        return
    from hcat_pipeline.resources.embedding import EmbeddingModel

    # the same in-process models the pipeline uses, loaded and warmed outside every timing
    bare = {b: EmbeddingModel(backend=b, use_cache=False) for b in ("torch", "onnx_int8")}
    for m in bare.values():
        m.encode_uncached(["warm up"])
    floors: dict[str, list[float]] = {b: [] for b in bare}
    vectors: dict[str, np.ndarray] = {}
    pipes, warms = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            texts, t_prep, t_embed, model = pipeline(cache, args.backend)
            pipes.append(t_prep + t_embed)
            t0 = time.perf_counter()
            model.embed(texts)
            warms.append((t_embed, time.perf_counter() - t0, model.last_stats.cache_hits))
        for b, m in bare.items():
            t0 = time.perf_counter()
            vectors[b] = m.encode_uncached(texts)  # the bare encoder: no cache, no hashing
            floors[b].append(time.perf_counter() - t0)
    floor = {b: min(v) for b, v in floors.items()}
    pipe = min(pipes)
    cold_embed, warm_embed, hits = min(warms, key=lambda w: w[1])
    cos = (vectors["torch"] * vectors["onnx_int8"]).sum(axis=1)
    rss = {}
    for b in bare:
        child = subprocess.run([sys.executable, __file__, "--child", b], capture_output=True, text=True, check=True)
        rss[b] = json.loads(child.stdout.strip().splitlines()[-1])
    n = len(texts)
    print(f"chunks: {n}  (pipeline backend: {args.backend}, model id {bare[args.backend].model_id})")
    for b in bare:
        print(f"floor {b} (bare encoder): {floor[b]:.2f} s  = {n / floor[b]:.1f} chunks/s")
    print(f"int8 ONNX speed-up over torch: {floor['torch'] / floor['onnx_int8']:.2f}x")
    print(f"cosine ONNX vs torch over the chunks: min {cos.min():.5f}  mean {cos.mean():.5f}  below 0.999: {(cos < 0.999).sum()}")
    print(f"pipeline ingest+chunk+embed (cold cache): {pipe:.2f} s  = {n / pipe:.1f} chunks/s")
    print(f"throughput ratio pipeline / {args.backend} floor: {floor[args.backend] / pipe:.3f}  (target >= 0.9); "
          f"vs torch floor: {floor['torch'] / pipe:.3f}")  # fmt: skip
    print(
        f"embedding stage cold {cold_embed:.2f} s, warm {warm_embed:.4f} s, cache hits {hits}: speed-up {cold_embed / warm_embed:.0f}x (target >= 20x)"
    )
    for b, r in rss.items():
        print(
            f"peak RSS of the {b} embedding stage process: {r['peak_rss_kb'] / 1024:.0f} MiB (before embedding {r['rss_before_kb'] / 1024:.0f} MiB)"
        )


if __name__ == "__main__":
    main()
