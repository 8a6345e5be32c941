"""Canaries never change the user's systems' results: metric_tables, behaviour_checks and retrieval_metrics give
byte-identical rows for the real systems with and without canaries (each run on fresh, cache-free models), and the
canary rows are there beside them."""

import dagster as dg
import polars as pl
from dagster import DagsterInstance

from hcat_pipeline.assets.behaviour import behaviour_checks
from hcat_pipeline.assets.metrics import build_metric_assets
from hcat_pipeline.assets.responses import retrieval_metrics
from hcat_pipeline.common.canary_ids import drop_canaries, only_canaries
from hcat_pipeline.gates.canaries import FAULTS, CanaryPlan, plant
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector
from hcat_pipeline.schemas import GOLDEN_SET, RAG_RESPONSES
from hcat_pipeline_tests.stubs import stub_asset

CTX = ["The VACUUM command reclaims storage occupied by dead tuples.", "Autovacuum runs VACUUM every 60 seconds by default."]
CASES = [("c1", "What does VACUUM reclaim?", "It reclaims storage occupied by dead tuples.", 0),
         ("c2", "How often does autovacuum run by default?", "Every 60 seconds.", 1),
         ("c3", "Is autovacuum enabled by default?", "Yes, it runs every 60 seconds by default.", 1)]  # fmt: skip
ANSWERS = {"hybrid": ["VACUUM reclaims storage occupied by dead tuples.", "Autovacuum runs every 60 seconds by default.",
                      "Yes. Autovacuum runs VACUUM every 60 seconds."],
           "closed_book": ["It frees disk space.", "Every minute, I think.", "I am not sure."]}  # fmt: skip


def _golden() -> pl.DataFrame:
    base = {c: None for c in GOLDEN_SET}
    return pl.DataFrame([{**base, "case_id": cid, "version": "v1", "category": "happy_path", "query": q, "reference_answer": ref,
                          "expected_behavior": "answer", "query_type": "simple", "stratum": s, "source_chunk_ids": ["k1", "k2"]}
                         for cid, q, ref, s in CASES], schema=GOLDEN_SET)  # fmt: skip


def _parents() -> pl.DataFrame:
    base = {c: None for c in RAG_RESPONSES}
    rows = [{**base, "case_id": cid, "system_id": sid, "config_hash": sid, "query": q, "answer": a, "latency_s": 1.0 + i,
             "cost_usd": 0.0, "contexts": CTX if sid == "hybrid" else [], "context_chunk_ids": ["k1", "k2"] if sid == "hybrid" else [],
             "context_ranks": [1, 2] if sid == "hybrid" else []}
            for sid, answers in ANSWERS.items() for i, ((cid, q, _, _), a) in enumerate(zip(CASES, answers))]  # fmt: skip
    return pl.DataFrame(rows, schema=RAG_RESPONSES).with_columns(pl.lit("v1").alias("golden_set_version"),
                                                                pl.lit("2026-11-20").alias("night"), pl.lit("x").alias("campaign_sha256"))


def _with_canaries() -> pl.DataFrame:
    parents = _parents()
    cases = {r["case_id"]: r for r in _golden().to_dicts()}
    canaries = plant(parents.to_dicts(), [CanaryPlan(of="hybrid", fault=f) for f in FAULTS], cases)
    return pl.concat([parents, pl.DataFrame(canaries, schema=parents.schema)])


_golden_set = stub_asset("golden_set", _golden, golden_set_version)
_chunks = stub_asset("chunks", lambda: pl.DataFrame({"chunk_id": ["k1", "k2"], "text": CTX}))


def _run(responses_fn, warehouse, night: str) -> dict[str, pl.DataFrame]:
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    io = PolarsParquetIOManager(base_dir=str(warehouse))
    responses = stub_asset("rag_responses", responses_fn, campaign_run)
    metric_tables, _ = build_metric_assets()
    assert dg.materialize([_golden_set], instance=instance, resources={"io_manager": io}, partition_key="v1").success
    assert dg.materialize([_chunks], instance=instance, resources={"io_manager": io}).success
    fresh = EmbeddingModel(use_cache=False)  # no cache: every vector computed in this run's own batches
    res = dg.materialize(
        [_golden_set, _chunks, responses, metric_tables, behaviour_checks, retrieval_metrics],
        selection=[responses, metric_tables, behaviour_checks, retrieval_metrics], partition_key=campaign_run_key("v1", night),
        instance=instance, resources={"io_manager": io, "embedding_model": fresh, "multilingual_encoder": MultilingualEncoder(cache_dir=fresh.cache_dir), "pii_detector": PIIDetector(), "nli_model": NLIModel()},
    )  # fmt: skip
    assert res.success
    return {a: pl.read_parquet(warehouse / a / "v1" / f"{night}.parquet") for a in ("metric_tables", "behaviour_checks", "retrieval_metrics")}


def test_parents_byte_identical_with_and_without_canaries(tmp_path, monkeypatch):
    monkeypatch.setattr("hcat_pipeline.assets._score_cache.SCORE_CACHE_DIR", "")  # both runs score: none reads the other's scores
    without = _run(_parents, tmp_path / "a", "2026-11-20")
    with_c = _run(_with_canaries, tmp_path / "b", "2026-11-20")
    for asset, frame in without.items():
        drop = [c for c in ("score_info",) if c in frame.columns]  # wall-clock timings and cache counts only
        real = drop_canaries(with_c[asset]).drop(drop).sort("system_id", "case_id" if "case_id" in frame.columns else "system_id")
        base = frame.drop(drop).sort("system_id", "case_id" if "case_id" in frame.columns else "system_id")
        assert real.equals(base), asset
        assert only_canaries(with_c[asset]).height > 0, asset
    m = with_c["metric_tables"]
    pii = m.filter(pl.col("system_id") == "canary:pii:hybrid")["pii_leak"].to_list()
    assert all(v >= 2 for v in pii) and m.filter(pl.col("system_id") == "hybrid")["pii_leak"].sum() == 0
    abuse = m.filter(pl.col("system_id") == "canary:insult:hybrid")["toxicity_abuse"].to_list()
    assert min(abuse) >= 0.5 and m.filter(pl.col("system_id") == "hybrid")["toxicity_abuse"].max() < 0.5
