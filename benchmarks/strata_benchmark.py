"""Benchmark: topic strata + stratified sampling on synthetic chunk embeddings (HCAT §2 steps 2-4).

Synthetic data: ``--n`` chunks (default 100 000) of 384-d L2-normalised embeddings drawn around
``--topics`` topic centres on the unit sphere (uneven topic sizes), each with a short text made of
its topic's words plus shared filler (so c-TF-IDF labels have something to find).

Each path (PCA, UMAP) runs in its own subprocess so its peak RSS is its own; figures printed:
wall time per stage (reduce, cluster incl. silhouette search on a seeded subsample, labels, 2-D
layout, sampling), peak RSS of the process and above the data baseline, k chosen, and the
adjusted Rand index against the generating topics.

    python benchmarks/strata_benchmark.py                 # both paths, 100k
    python benchmarks/strata_benchmark.py --paths pca --n 20000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def synthetic(n: int, topics: int, dim: int = 384, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    sizes = rng.dirichlet(np.full(topics, 2.0))  # uneven topic sizes
    truth = rng.choice(topics, size=n, p=sizes)
    x = np.empty((n, dim), dtype=np.float32)
    for i in range(0, n, 10_000):  # in float32 blocks, so generating the data does not set the RSS peak
        block = centres[truth[i : i + 10_000]] + 0.045 * rng.standard_normal((len(truth[i : i + 10_000]), dim), dtype=np.float32)
        x[i : i + 10_000] = block / np.linalg.norm(block, axis=1, keepdims=True)  # ≈ cos 0.75 to the centre
    vocab = [[f"topic{t}word{j}" for j in range(12)] for t in range(topics)]
    filler = ["the", "system", "value", "account", "process", "data", "report", "rule"]
    texts = [
        " ".join(list(rng.choice(vocab[t], 6)) + list(rng.choice(filler, 10)))
        for t in truth
    ]
    return x.astype(np.float32), texts, truth


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_one(path: str, n: int, topics: int, sample: int, components: int, k_max: int) -> dict:
    from sklearn.metrics import adjusted_rand_score

    from hcat_pipeline.corpus.sampling import coverage_table, stratified_sample
    from hcat_pipeline.corpus.strata import StrataParams, build_strata

    t0 = time.perf_counter()
    x, texts, truth = synthetic(n, topics)
    ids = [f"c{i:07d}" for i in range(n)]
    gen_s = time.perf_counter() - t0
    base = peak_rss_mb()

    params = StrataParams(reduction=path, n_components=components, k_min=6, k_max=k_max, umap_low_memory=True)
    t, c = time.perf_counter(), cpu_s()
    res = build_strata(ids, texts, x, params)
    strata_s = time.perf_counter() - t
    t = time.perf_counter()
    sample_frame, alloc = stratified_sample(res.frame, sample, "proportional", min_per_stratum=2, seed=0)
    cov = coverage_table(res.frame, sample_frame)
    sample_s = time.perf_counter() - t
    return {
        "path": path,
        "n": n,
        "dim": int(x.shape[1]),
        "generate_s": round(gen_s, 2),
        **res.timings,
        "strata_total_s": round(strata_s, 2),
        "strata_cpu_s": round(cpu_s() - c, 2),
        "n_components": components,
        "sampling_s": round(sample_s, 3),
        "chosen_k": res.chosen_k,
        "true_topics": topics,
        "ari_vs_truth": round(float(adjusted_rand_score(truth, res.frame["stratum"].to_numpy())), 4),
        "silhouette": res.silhouette,
        "sample": alloc.total,
        "min_strata_sampled": int(cov["sampled_chunks"].min()),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "rss_above_data_mb": round(peak_rss_mb() - base, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--topics", type=int, default=25)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--paths", default="pca,umap")
    ap.add_argument("--umap-components", type=int, default=5)
    ap.add_argument("--pca-components", type=int, default=30, help="PCA needs more axes than UMAP to separate many topics")
    ap.add_argument("--k-max", type=int, default=30)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        comps = args.umap_components if args.one == "umap" else args.pca_components
        print(json.dumps(run_one(args.one, args.n, args.topics, args.sample, comps, args.k_max)))
        return
    rows = []
    for path in args.paths.split(","):
        cmd = [sys.executable, __file__, "--one", path, "--n", str(args.n), "--topics", str(args.topics), "--sample", str(args.sample),
               "--umap-components", str(args.umap_components), "--pca-components", str(args.pca_components), "--k-max", str(args.k_max)]
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            print(f"{path}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["process_wall_s"] = round(time.perf_counter() - t, 1)  # incl. imports and numba JIT
        rows.append(row)
        print(json.dumps(row), flush=True)
    if rows:
        keys = list(rows[0])
        print()
        print("| " + " | ".join(keys) + " |")
        print("|" + "---|" * len(keys))
        for r in rows:
            print("| " + " | ".join(str(r.get(k)) for k in keys) + " |")


if __name__ == "__main__":
    main()
