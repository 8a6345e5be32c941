"""The anomaly tests against known answers, over several seeds (issue 49): ten days of the synthetic bank service
(``monitoring.synthetic`` over ``hcat_pipeline_tests.monitoring_data``) with three planted faults — an acute
groundedness drop on day 7, a refusal drift from day 3, irrelevant answers in stratum 2 from day 5 — and the same
traffic without them (the control). Each day is sampled and scored with the packaged models, exactly as
``monitoring_job`` does; printed: what is raised as of each day, and whether day 10's anomalies are exactly the planted
three (control: none). The test suite runs one seed through Dagster and the sensor; this runs more, without Dagster.

    python benchmarks/monitoring_known_answers.py [--seeds 0,1,2] [--rows 400] [--sample 160]
"""

from __future__ import annotations

import argparse
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
from hcat_pipeline.monitoring.synthetic import FIELDS, TrafficPlan, write_traffic  # noqa: E402
from hcat_pipeline_tests.monitoring_data import pools, write_bank_corpus  # noqa: E402

PLANTED = {("acute", "ungrounded", None, 7), ("drift", "refused", None, 3), ("category", "irrelevant", 2, 5)}


def run(seed: int, planted: bool, rows: int, sample: int, index, models) -> list[dict]:
    em, nli, pii, multi = models
    from hcat_pipeline.metrics import score

    plan = TrafficPlan(seed=seed, rows_per_day=rows, **(dict(acute_day=7, drift_from=3, drift_step=0.04, category_stratum=2, category_from=5) if planted else {}))
    folder = Path(tempfile.mkdtemp(prefix="hcat-known-"))
    write_traffic(folder, plan, pools())
    cells = []
    for i in range(1, plan.days + 1):
        read = read_day([str(folder)], plan.day(i), FIELDS)
        day = monitor_day(read.rows, plan.day(i), index, embed=em.embed, find_pii=pii.entities, sample_config=SampleConfig(sample_size=sample),
                          score=lambda f: score(f, [m for m in MONITOR_METRICS if m != "citation_presence"], embed=em.embed,
                                                embed_layers=em.layer_features, nli=nli, pii=pii, multilingual=multi, record_info=False))  # fmt: skip
        cells.append(day.cells)
    found = detect(pl.concat(cells))
    return [{**a, "start": int(a["start_day"][-2:]) - int(plan.first_day[-2:]) + 1} for a in found]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rows", type=int, default=400)
    ap.add_argument("--sample", type=int, default=160)
    args = ap.parse_args()
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder
    from hcat_pipeline.resources.nli import NLIModel
    from hcat_pipeline.resources.pii import PIIDetector

    models = (EmbeddingModel(), NLIModel(), PIIDetector(), MultilingualEncoder())
    warehouse = Path(tempfile.mkdtemp(prefix="hcat-known-wh-"))
    labels = write_bank_corpus(warehouse, models[0].embed)
    j = pl.read_parquet(warehouse / "topic_strata.parquet").join(pl.read_parquet(warehouse / "chunk_embeddings.parquet"), on="chunk_id")
    index = CorpusIndex(np.asarray(j["embedding"].to_list(), dtype=np.float32), j["stratum"].to_numpy(), labels)
    print("| seed | traffic | raised as of day 10 (kind, signal, stratum, first day) | exactly as planted | s |")
    print("|---|---|---|---|---|")
    for seed in [int(s) for s in args.seeds.split(",")]:
        for planted in (True, False):
            t = time.perf_counter()
            found = run(seed, planted, args.rows, args.sample, index, models)
            got = {(a["kind"], a["signal"], a["stratum"], a["start"]) for a in found}
            want = PLANTED if planted else set()
            drift_ok = {(k, s, g) for k, s, g, _ in got} == {(k, s, g) for k, s, g, _ in want} and all(
                abs(d - dict(((k, s, g), d) for k, s, g, d in want)[(k, s, g)]) <= (1 if k == "drift" else 0) for k, s, g, d in got)
            print(f"| {seed} | {'planted' if planted else 'control'} | {sorted(got, key=str) or 'none'} | {'yes' if drift_ok else 'NO'} | "
                  f"{time.perf_counter() - t:.0f} |", flush=True)


if __name__ == "__main__":
    main()
