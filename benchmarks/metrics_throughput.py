"""Throughput of the embedding-based metrics against the embedding floor.

Builds N (default 10,000) synthetic (query, 5-chunk context, answer) triples from the default
corpus (pydoc_data topics → ingest → chunking), seeded. Then, in one process:

1. floor: the time to embed each unique sentence of the whole set once, cold and uncached
   (``EmbeddingModel(use_cache=False).encode_uncached(unique_sentences)``);
2. ``hcat_pipeline.metrics.score`` with the embedding-based metrics and a fresh, empty cache dir
   (splitting, the one embed call through the cache, per-row similarities, exact OT).

Prints both times and their ratio (target ≤ 1.25), then NLI pairs/s on a subset if the NLI scorer
is available, and the peak RSS.

    python benchmarks/metrics_throughput.py [--rows 10000] [--seed 0] [--nli-rows 200]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time

import polars as pl

EMBEDDING_METRICS = ["context_relevancy", "groundedness_similarity", "completeness_similarity", "completeness_wasserstein", "answer_relevancy"]


def build_triples(n: int, seed: int) -> pl.DataFrame:
    from hcat_pipeline.core.chunking import chunk_corpus, split_sentences
    from hcat_pipeline.core.ingest import ingest

    docs, _, _ = ingest(include_embedded=True, drop_folder=None)
    chunks = chunk_corpus(zip(docs["doc_id"].to_list(), docs["text"].to_list()))
    texts = chunks["text"].to_list()
    doc_of = chunks["doc_id"].to_list()
    by_doc: dict[str, list[int]] = {}
    for i, d in enumerate(doc_of):
        by_doc.setdefault(d, []).append(i)
    sent_memo: dict[int, list[str]] = {}

    def sents(i: int) -> list[str]:
        if i not in sent_memo:
            sent_memo[i] = [s for s in split_sentences(texts[i]) if len(s.split()) >= 3] or [texts[i]]
        return sent_memo[i]

    rng = random.Random(seed)
    rows = []
    for k in range(n):
        src = rng.randrange(len(texts))
        same = [j for j in by_doc[doc_of[src]] if j != src]
        others = rng.sample(same, min(2, len(same)))
        while len(others) < 4:
            j = rng.randrange(len(texts))
            if j != src and j not in others:
                others.append(j)
        ctx_ids = [src, *others]
        rng.shuffle(ctx_ids)
        ss = sents(src)
        words = rng.choice(ss).split()
        start = rng.randrange(max(1, len(words) - 6))
        query = f"Question {k}: what does the reference say about '{' '.join(words[start:start + 6])}'?"
        answer = rng.sample(ss, min(len(ss), rng.randint(1, 3)))
        if rng.random() < 0.3:  # some answers carry a sentence from an unrelated chunk (a hallucination)
            answer.append(rng.choice(sents(rng.randrange(len(texts)))))
        rows.append({"query": query, "contexts": [texts[j] for j in ctx_ids], "answer": " ".join(answer)})
    return pl.DataFrame(rows, schema={"query": pl.String, "contexts": pl.List(pl.String), "answer": pl.String})


def unique_sentences(frame: pl.DataFrame) -> list[str]:
    from hcat_pipeline.core.chunking import split_sentences

    memo: dict[str, list[str]] = {}
    out: dict[str, None] = {}
    for q, ctx, a in frame.iter_rows():
        for t in (q, *ctx, a):
            if t not in memo:
                memo[t] = split_sentences(t)
            out.update(dict.fromkeys(memo[t]))
    return list(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nli-rows", type=int, default=200)
    args = ap.parse_args()

    from hcat_pipeline.metrics import score
    from hcat_pipeline.resources.embedding import EmbeddingModel

    t0 = time.perf_counter()
    frame = build_triples(args.rows, args.seed)
    uniq = unique_sentences(frame)
    print(f"triples: {frame.height}  unique sentences: {len(uniq)}  (built in {time.perf_counter() - t0:.1f}s)")

    with tempfile.TemporaryDirectory() as floor_dir, tempfile.TemporaryDirectory() as score_dir:
        floor_model = EmbeddingModel(use_cache=False, cache_dir=floor_dir)
        floor_model.encode_uncached(["warm-up sentence for the model"])  # load outside both timings
        t0 = time.perf_counter()
        floor_model.encode_uncached(uniq)
        floor = time.perf_counter() - t0
        print(f"floor (embed each unique sentence once, uncached): {floor:.1f}s = {len(uniq) / floor:.0f} sentences/s")

        model = EmbeddingModel(cache_dir=score_dir)
        t0 = time.perf_counter()
        out, info = score(frame, EMBEDDING_METRICS, embedding_model=model, explain_sentences=False, return_info=True)
        took = time.perf_counter() - t0
        print(f"score() with a fresh cache: {took:.1f}s = {frame.height / took:.0f} rows/s; timings {info['timings']}")
        print(f"embedded in score(): {info['embedding']['embed_computed']} sentences")
        print(f"RATIO score / floor = {took / floor:.3f}  (target <= 1.25)")
        means = {m: round(float(out[m].mean()), 4) for m in EMBEDDING_METRICS}
        print(f"means: {means}")

    try:
        from hcat_pipeline.resources.nli import NLIModel
        import hcat_pipeline.core.metrics.groundedness_nli  # noqa: F401
    except ImportError as e:
        print(f"NLI scorer not available ({e}); NLI throughput not measured")
    else:
        sub = frame.head(args.nli_rows)
        t0 = time.perf_counter()
        out, info = score(sub, ["groundedness_nli"], embedding_model=EmbeddingModel(cache_dir=tempfile.mkdtemp()), nli=NLIModel(), return_info=True)
        took = time.perf_counter() - t0
        pairs = int(out.filter(pl.col("nli_sigma").is_not_null())["nli_sigma"].list.len().sum() or 0)
        if "groundedness_nli" in info["metrics_unavailable"]:
            print(f"NLI failed: {info['metrics_unavailable']['groundedness_nli']}")
        else:
            print(f"NLI: {pairs} (answer sentence, context) pairs in {took:.1f}s = {pairs / took:.1f} pairs/s")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
