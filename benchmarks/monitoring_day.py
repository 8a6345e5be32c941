"""Production monitoring at volume (issue 49): one day of 100,000 log rows through ingest (JSONL read, normalised, bad
rows named) + the two-phase sample (screen embedded for strata) + scoring (the nights' metrics on the sample) + the
anomaly tests, on this machine's cores; wall time per phase and the peak resident memory, at several sample sizes
(how the cost grows with the sample).

    python benchmarks/monitoring_day.py [--rows 100000] [--samples 100,200,400] [--screen 5000]

Run it alone (it uses every core it is given). The traffic is ``monitoring.synthetic``'s service over the embedded Python
language reference (ten strata by document), with ungrounded answers planted so the signals have failures to count.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from hcat_pipeline.monitoring.anomalies import detect  # noqa: E402
from hcat_pipeline.monitoring.day import CorpusIndex, monitor_day  # noqa: E402
from hcat_pipeline.monitoring.logs import read_day  # noqa: E402
from hcat_pipeline.monitoring.sampling import SampleConfig  # noqa: E402
from hcat_pipeline.monitoring.signals import MONITOR_METRICS  # noqa: E402
from hcat_pipeline.monitoring.synthetic import FIELDS, TrafficPlan, sentence_pools, write_traffic  # noqa: E402


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--samples", default="100,200,400")
    ap.add_argument("--screen", type=int, default=5000)
    args = ap.parse_args()
    from hcat_pipeline.metrics import score
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder
    from hcat_pipeline.resources.nli import NLIModel
    from hcat_pipeline.resources.pii import PIIDetector

    root = Path(tempfile.mkdtemp(prefix="hcat-monitor-bench-"))
    em, nli, pii, multi = EmbeddingModel(use_cache=False), NLIModel(), PIIDetector(), MultilingualEncoder()
    # the embedded Python language reference, ten strata by document: thousands of distinct sentences, so questions,
    # answers and passages rarely repeat (no cache makes the day cheaper than real traffic would be)
    from hcat_pipeline.corpus.ingest import ingest

    corpus = ingest(include_embedded=True, drop_folder=None)[0]
    strata = [i % 10 for i in range(corpus.height)]
    day_pools = sentence_pools(corpus["text"].to_list(), strata)
    chunks = [(g, " ".join(p[i : i + 3])) for g, p in day_pools.items() for i in range(0, len(p), 3)]
    vectors = np.asarray(em.embed([c for _, c in chunks]), dtype=np.float32)
    index = CorpusIndex(vectors, np.array([g for g, _ in chunks]), {g: f"docs {g}" for g in day_pools})
    plan = TrafficPlan(days=1, rows_per_day=args.rows, acute_day=1, acute_rate=0.1)
    t = time.perf_counter()
    write_traffic(root / "logs", plan, day_pools)
    print(f"corpus: {corpus.height} documents, {sum(len(p) for p in day_pools.values()):,} sentences, {len(chunks)} chunks")
    print(f"wrote {args.rows:,} rows ({sum(p.stat().st_size for p in (root / 'logs').iterdir()) / 2**20:.1f} MiB JSONL) in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    read = read_day([str(root / "logs")], plan.day(1), FIELDS)
    ingest_s = time.perf_counter() - t
    print(f"ingest: {read.rows.height:,} rows, {read.rejected.height} rejected, {ingest_s:.1f} s, peak RSS {peak_mib():.0f} MiB")

    def scorer(frame):
        return score(frame, [m for m in MONITOR_METRICS if m != "citation_presence"], embed=em.embed, embed_layers=em.layer_features,
                     nli=nli, pii=pii, multilingual=multi, record_info=False)  # fmt: skip

    timed = {"embed": 0.0}

    def embed(texts):
        t0 = time.perf_counter()
        out = em.embed(texts)
        timed["embed"] += time.perf_counter() - t0
        return out

    monitor_day(read.rows.head(500), plan.day(1), index, embed=em.embed, score=scorer, find_pii=pii.entities,
                sample_config=SampleConfig(sample_size=20, screen_size=100))  # warm-up: every model loaded once, not timed
    print("| sample | screen | screen embedding s | sample, score, mask s | anomaly tests s | rows/s (whole day) | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    runs = [(int(x), args.screen) for x in args.samples.split(",")] + [(200, 4 * args.screen)]
    for n, screen_size in runs:
        config = SampleConfig(sample_size=n, screen_size=screen_size)
        timed["embed"] = 0.0
        t = time.perf_counter()
        day = monitor_day(read.rows, plan.day(1), index, embed=embed, score=scorer, find_pii=pii.entities, sample_config=config)
        work_s = time.perf_counter() - t
        t = time.perf_counter()
        detect(pl.concat([day.cells.with_columns(pl.lit(f"2026-10-{d:02d}").alias("day")) for d in range(1, 15)]))
        detect_s = time.perf_counter() - t
        print(f"| {n} | {day.screened} | {timed['embed']:.1f} | {work_s - timed['embed']:.1f} | {detect_s:.2f} | {args.rows / (ingest_s + work_s + detect_s):,.0f} | {peak_mib():.0f} |")


if __name__ == "__main__":
    main()
