"""Throughput of the metrics against the embedding floor, one stage per process (own peak RSS).

Builds N (default 10,000) synthetic (query, 5-chunk context, answer) triples from the default
corpus (pydoc_data topics → ingest → chunking), seeded, and the set of their unique sentences.
Then runs each stage in a fresh child process (``--stage NAME``), one after the other, so each one
reports its own time and peak RSS (VmHWM of the child: model load included):

``floor_torch``   embed each unique sentence once, cold and uncached, with the torch backend
                  (``EmbeddingModel(backend="torch", use_cache=False).encode_uncached``): the floor;
``embed_onnx``    the same with the int8 ONNX backend (and its cosine to the torch vectors);
``score``         ``hcat_pipeline.metrics.score`` with the embedding metrics, the default backend
                  (``--backend``) and a fresh, empty cache: splitting, the one embed call through
                  the cache, per-row similarities, exact OT. Target: ≤ 0.5 × the torch floor;
``nli``           ``groundedness_nli`` on the first ``--nli-rows`` rows, cold caches (models loaded
                  before the timing): answer sentences/s (target ≥ 50);
``toxicity``      ``toxicity`` on the first ``--tox-rows`` rows: rows/s and answer sentences/s.

A stage whose metric is not available here says why and the others go on. Model loading is done
before each timing (a one-sentence / one-row warm-up) and reported apart. Add a stage: a function
in ``STAGES`` taking (args, workdir) and returning a dict with at least ``seconds``.

    python benchmarks/metrics_throughput.py [--rows 10000] [--seed 0] [--nli-rows 200] [--tox-rows 2000]
        [--stages floor_torch,embed_onnx,score,nli,toxicity] [--backend onnx_int8|torch] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

EMBEDDING_METRICS = [
    "context_relevancy",
    "groundedness_similarity",
    "completeness_similarity",
    "completeness_wasserstein",
    "answer_relevancy",
]
SCORE_TARGET = 0.5  # score() with the embedding metrics, as a fraction of the torch floor
NLI_TARGET = 50.0  # answer sentences/s
WARM_ROW = {
    "query": "What is warmed up?",
    "contexts": ["The model is loaded first.", "Then it runs."],
    "answer": "The model. It runs.",
}


def build_triples(n: int, seed: int) -> pl.DataFrame:
    from hcat_pipeline.corpus.chunking import chunk_corpus, split_sentences
    from hcat_pipeline.corpus.ingest import ingest

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
        query = f"Question {k}: what does the reference say about '{' '.join(words[start : start + 6])}'?"
        answer = rng.sample(ss, min(len(ss), rng.randint(1, 3)))
        if rng.random() < 0.3:  # some answers carry a sentence from an unrelated chunk (a hallucination)
            answer.append(rng.choice(sents(rng.randrange(len(texts)))))
        rows.append({"query": query, "contexts": [texts[j] for j in ctx_ids], "answer": " ".join(answer)})
    return pl.DataFrame(rows, schema={"query": pl.String, "contexts": pl.List(pl.String), "answer": pl.String})


def unique_sentences(frame: pl.DataFrame) -> list[str]:
    from hcat_pipeline.corpus.chunking import split_sentences

    memo: dict[str, list[str]] = {}
    out: dict[str, None] = {}
    for q, ctx, a in frame.iter_rows():
        for t in (q, *ctx, a):
            if t not in memo:
                memo[t] = split_sentences(t)
            out.update(dict.fromkeys(memo[t]))
    return list(out)


def answer_sentences(frame: pl.DataFrame) -> int:
    from hcat_pipeline.corpus.chunking import split_sentences

    return sum(len(split_sentences(a)) for a in frame["answer"].to_list())


def _load() -> str:
    """The 1 / 5 / 15 min load averages (other work on the machine slows wall-clock figures)."""
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def _vm_kib(field: str) -> int:
    """VmRSS / VmHWM of this process (VmHWM starts afresh at exec, unlike ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


# -- stages (each runs in its own child process) ---------------------------------------------------


def _embed_stage(backend: str, workdir: Path) -> dict:
    from hcat_pipeline.resources.embedding import EmbeddingModel

    uniq = json.loads((workdir / "sentences.json").read_text())
    model = EmbeddingModel(backend=backend, use_cache=False)
    t0 = time.perf_counter()
    model.encode_uncached(["warm-up sentence for the model"])
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    vecs = model.encode_uncached(uniq)
    took = time.perf_counter() - t0
    np.save(workdir / f"vectors_{backend}.npy", vecs)
    return {"seconds": took, "load_seconds": load, "items": len(uniq), "rate": len(uniq) / took, "unit": "sentences/s",
            "model_id": model.model_id}  # fmt: skip


def stage_floor_torch(args, workdir: Path) -> dict:
    return _embed_stage("torch", workdir)


def stage_embed_onnx(args, workdir: Path) -> dict:
    return _embed_stage("onnx_int8", workdir)


def stage_score(args, workdir: Path) -> dict:
    from hcat_pipeline.metrics import score
    from hcat_pipeline.resources.embedding import EmbeddingModel

    frame = pl.read_parquet(workdir / "triples.parquet")
    with tempfile.TemporaryDirectory() as cache_dir:
        model = EmbeddingModel(backend=args.backend, cache_dir=cache_dir)
        t0 = time.perf_counter()
        model.encode_uncached(["warm-up sentence for the model"])  # load outside the timing, not cached
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        out, info = score(frame, EMBEDDING_METRICS, embedding_model=model, explain_sentences=False, return_info=True)
        took = time.perf_counter() - t0
    return {"seconds": took, "load_seconds": load, "items": frame.height, "rate": frame.height / took, "unit": "rows/s",
            "model_id": model.model_id, "embedded": info["embedding"].get("embed_computed"),
            "embed_seconds": info["embedding"].get("embed_seconds"), "timings": info.get("timings"),
            "means": {m: round(float(out[m].mean()), 4) for m in EMBEDDING_METRICS}}  # fmt: skip


def _metric_stage(args, workdir: Path, metric: str, rows: int, resources=lambda cache_dir: {}) -> dict:
    """``resources(cache_dir)``: the metric's resources, given the stage's fresh (cold) embedding cache."""
    from hcat_pipeline.metrics import MetricUnavailable, score
    from hcat_pipeline.resources.embedding import EmbeddingModel

    sub = pl.read_parquet(workdir / "triples.parquet").head(rows)
    with tempfile.TemporaryDirectory() as cache_dir:
        emb = EmbeddingModel(backend=args.backend, cache_dir=cache_dir)
        res = resources(cache_dir)
        try:
            t0 = time.perf_counter()
            score(pl.DataFrame([WARM_ROW]), [metric], embedding_model=emb, **res)  # load the models
            load = time.perf_counter() - t0
            t0, c0 = time.perf_counter(), time.process_time()
            out = score(sub, [metric], embedding_model=emb, **res)
            took, cpu = time.perf_counter() - t0, time.process_time() - c0
        except MetricUnavailable as e:
            return {"unavailable": e.reason}
    n_sent = answer_sentences(sub)
    return {"seconds": took, "cpu_seconds": cpu, "load_seconds": load, "items": n_sent, "rate": n_sent / took,
            "unit": "answer sentences/s", "cpu_ms_per_item": 1000 * cpu / max(1, n_sent), "rows": sub.height,
            "rows_per_s": sub.height / took, "out": out}  # fmt: skip


def stage_nli(args, workdir: Path) -> dict:
    try:
        from hcat_pipeline.resources.nli import NLIModel
    except ImportError as e:
        return {"unavailable": f"NLI resource not importable: {e}"}
    def resources(cache_dir: str) -> dict:
        # the NLI scorer embeds through its own EmbeddingModel: point it at the stage's empty cache (cold); load
        # every model it may use (the warm-up row alone may not need them all: quotations, order-free pairs)
        nli = NLIModel(embedding_cache_dir=cache_dir)
        nli._embedding_model().encode_uncached(["warm-up sentence for the model"])
        nli.contradiction(["The model is loaded first."], ["The model is never loaded."])
        return {"nli": nli}

    res = _metric_stage(args, workdir, "groundedness_nli", args.nli_rows, resources)
    out = res.pop("out", None)
    if out is not None and "nli_sigma" in out.columns:
        scored = int(out["nli_sigma"].list.len().sum() or 0)
        ctx = out["contexts"].list.len().to_numpy()
        pairs = int((out["nli_sigma"].list.len().fill_null(0).to_numpy() * ctx).sum())
        res.update(scored_sentences=scored, pairs=pairs, pairs_per_s=pairs / res["seconds"], mean=out["groundedness_nli"].mean())
    return res


def stage_toxicity(args, workdir: Path) -> dict:
    res = _metric_stage(args, workdir, "toxicity", args.tox_rows)
    out = res.pop("out", None)
    if out is not None:
        res.update(mean=out["toxicity"].mean(), flagged_share=float((out["toxicity"] >= 0.5).mean() or 0.0))
    return res


STAGES = {"floor_torch": stage_floor_torch, "embed_onnx": stage_embed_onnx, "score": stage_score, "nli": stage_nli,
          "toxicity": stage_toxicity}  # fmt: skip


def run_child(args) -> None:
    workdir = Path(args.workdir)
    rss_start = _vm_kib("VmRSS")
    res = STAGES[args.stage](args, workdir)
    res.update(rss_start_mib=rss_start / 1024, peak_rss_mib=_vm_kib("VmHWM") / 1024, load_average=_load())
    print("RESULT " + json.dumps(res, default=float))


# -- parent ------------------------------------------------------------------------------------------


def run_stage(name: str, args, workdir: Path) -> dict:
    cmd = [sys.executable, __file__, "--stage", name, "--workdir", str(workdir), "--backend", args.backend,
           "--nli-rows", str(args.nli_rows), "--tox-rows", str(args.tox_rows)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return {"failed": (proc.stderr.strip().splitlines() or ["no output"])[-1], "returncode": proc.returncode}
    return json.loads(lines[-1][len("RESULT ") :])


def report(name: str, r: dict) -> None:
    if "failed" in r or "unavailable" in r:
        print(f"[{name}] {'FAILED' if 'failed' in r else 'not available'}: {r.get('failed') or r.get('unavailable')}")
        return
    cpu = f", CPU {r['cpu_seconds']:.1f} s = {r['cpu_ms_per_item']:.1f} ms per item" if "cpu_seconds" in r else ""
    print(f"[{name}] {r['items']} in {r['seconds']:.1f} s = {r['rate']:.1f} {r['unit']}{cpu}  (load {r['load_seconds']:.1f} s, "
          f"peak RSS {r['peak_rss_mib']:.0f} MiB, at start {r['rss_start_mib']:.0f} MiB; load average {r['load_average']})")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nli-rows", type=int, default=200)
    ap.add_argument("--tox-rows", type=int, default=2000)
    ap.add_argument("--backend", choices=["onnx_int8", "torch"], default="onnx_int8", help="embedder of score / nli / toxicity")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--json", default="", help="also write every figure to this file")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        run_child(args)
        return 0
    stages = [s for s in args.stages.split(",") if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        ap.error(f"unknown stages {unknown}; known: {list(STAGES)}")

    results: dict = {"rows": args.rows, "seed": args.seed}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        t0 = time.perf_counter()
        frame = build_triples(args.rows, args.seed)
        uniq = unique_sentences(frame)
        frame.write_parquet(workdir / "triples.parquet")
        (workdir / "sentences.json").write_text(json.dumps(uniq))
        results.update(unique_sentences=len(uniq), build_seconds=time.perf_counter() - t0)
        print(f"triples: {frame.height}  unique sentences: {len(uniq)}  (built in {results['build_seconds']:.1f}s)")
        for name in stages:
            results[name] = run_stage(name, args, workdir)
            report(name, results[name])
        vec_t, vec_o = workdir / "vectors_torch.npy", workdir / "vectors_onnx_int8.npy"
        if vec_t.exists() and vec_o.exists():
            cos = (np.load(vec_t) * np.load(vec_o)).sum(axis=1)
            results["agreement"] = {"min": float(cos.min()), "mean": float(cos.mean()), "p01": float(np.quantile(cos, 0.01)),
                                    "share_below_0.999": float((cos < 0.999).mean())}  # fmt: skip

    print("\n== summary ==")
    floor = results.get("floor_torch", {}).get("seconds")
    onnx = results.get("embed_onnx", {}).get("seconds")
    if floor and onnx:
        print(
            f"embed floor: torch {floor:.1f} s, int8 ONNX {onnx:.1f} s  (ONNX/torch {onnx / floor:.3f}, speed-up {floor / onnx:.2f}x)"
        )
    if "agreement" in results:
        a = results["agreement"]
        print(f"cosine ONNX vs torch over {len(uniq)} sentences: min {a['min']:.5f}  mean {a['mean']:.5f}  p01 {a['p01']:.5f}  "
              f"below 0.999: {a['share_below_0.999']:.2%}")  # fmt: skip
    sc = results.get("score", {})
    if "seconds" in sc:
        print(
            f"score() embedding metrics ({sc['model_id']}): {sc['seconds']:.1f} s, {sc['embedded']} sentences embedded; timings {sc['timings']}"
        )
        print(f"means: {sc['means']}")
        if floor:
            ok = "OK" if sc["seconds"] / floor <= SCORE_TARGET else "MISSED"
            print(f"RATIO score / torch floor = {sc['seconds'] / floor:.3f}  (target <= {SCORE_TARGET}) {ok}")
        if onnx:
            print(f"RATIO score / ONNX embed  = {sc['seconds'] / onnx:.3f}  (the harness around the embedder)")
    nli = results.get("nli", {})
    if "seconds" in nli:
        ok = "OK" if nli["rate"] >= NLI_TARGET else "MISSED"
        extra = f", {nli['pairs']} (answer sentence, context) pairs = {nli['pairs_per_s']:.1f}/s" if "pairs" in nli else ""
        print(
            f"NLI: {nli['items']} answer sentences in {nli['seconds']:.1f} s = {nli['rate']:.1f}/s (target >= {NLI_TARGET:.0f}) {ok}{extra}; "
            f"CPU {nli['cpu_seconds']:.1f} s = {nli['cpu_ms_per_item']:.1f} ms per answer sentence "
            f"(load-independent: 2 idle cores give at most {2000 / nli['cpu_ms_per_item']:.0f}/s); load average {_load()}"
        )
    tox = results.get("toxicity", {})
    if "seconds" in tox:
        print(f"toxicity: {tox['rows']} rows in {tox['seconds']:.1f} s = {tox['rows_per_s']:.1f} rows/s, {tox['rate']:.1f} answer sentences/s; "
              f"share >= 0.5: {tox['flagged_share']:.2%}")  # fmt: skip
    print(
        "peak RSS per stage (MiB): "
        + ", ".join(f"{s} {results[s]['peak_rss_mib']:.0f}" for s in stages if "peak_rss_mib" in results[s])
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
