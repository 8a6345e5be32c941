"""system_rankings / pareto_frontier / case_contamination / grader_gaming materialize from small synthetic tables."""

import json

import dagster as dg
import numpy as np
import polars as pl

from hcat_pipeline.assets.rankings import case_contamination, grader_gaming, pareto_frontier, system_rankings
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline_tests.stubs import TablesIO as _TablesIO


def _tables():
    rng = np.random.default_rng(0)
    cases = [f"c{i}" for i in range(30)]
    golden = pl.DataFrame({"case_id": cases, "query": [f"What does feature number {i} of the toolkit do exactly?" for i in range(30)],
                           "reference_answer": [f"Feature {i} does thing {i}." for i in range(30)], "query_type": ["simple"] * 30,
                           "expected_behavior": ["answer"] * 30})  # fmt: skip
    resp, met = [], []
    for s, q, lat, cost in (("strong", 0.8, 2.0, 0.001), ("weak", 0.5, 2.5, 0.001), ("cheap", 0.6, 0.5, 0.0)):
        for i, c in enumerate(cases):
            resp.append({"case_id": c, "system_id": s, "answer": f"Feature {i} does thing {i} according to the docs.", "contexts": ["ctx"],
                         "latency_s": lat + rng.exponential(0.1), "cost_usd": cost, "error": None})  # fmt: skip
            met.append({"case_id": c, "system_id": s, "groundedness_nli": q + rng.normal(0, 0.05), "answer_relevancy": q})
    return {"golden_set": golden, "rag_responses": pl.DataFrame(resp), "metric_tables": pl.DataFrame(met)}


def test_rankings_pareto_integrity_assets(tmp_path):
    (tmp_path / "old.jsonl").write_text(json.dumps({"query": "What does feature number 3 of the toolkit do exactly?"}) + "\n")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    io = _TablesIO(_tables())
    result = dg.materialize(
        [dg.AssetSpec("rag_responses", partitions_def=campaign_run), dg.AssetSpec("metric_tables", partitions_def=campaign_run),
         dg.AssetSpec("golden_set", partitions_def=golden_set_version), case_contamination, grader_gaming, system_rankings, pareto_frontier],
        partition_key=campaign_run_key("v1", "2025-03-01"), instance=instance,
        resources={"io_manager": io, "embedding_model": EmbeddingModel(), "multilingual_encoder": MultilingualEncoder(), "llm": LLM()},
        run_config={"ops": {"case_contamination": {"config": {"contamination_dir": str(tmp_path), "use_embeddings": False}},
                            "system_rankings": {"config": {"n_boot": 100, "metrics": ["groundedness_nli", "nope"]}}}},
    )  # fmt: skip
    assert result.success
    risk = io.written["case_contamination"]
    assert risk.filter(pl.col("risk") == "high")["case_id"].to_list() == ["c3"]
    ranks = io.written["system_rankings"]
    assert set(ranks["excluded_cases"]) == {1} and set(ranks["n_cases"]) == {29}
    for method in ("elo", "bradley_terry", "trueskill"):
        assert ranks.filter(pl.col("method") == method).sort("rank")["system_id"].to_list() == ["strong", "cheap", "weak"]
    meta = result.asset_materializations_for_node("system_rankings")[0].metadata
    assert "nope" in meta["skipped_metrics"].value
    pareto = {r["system_id"]: r for r in io.written["pareto_frontier"].to_dicts()}
    assert pareto["strong"]["on_frontier"] and pareto["cheap"]["on_frontier"] and not pareto["weak"]["on_frontier"]
    assert {d["system_id"] for d in pareto["weak"]["dominated_by"]} == {"strong", "cheap"}
    assert not io.written["grader_gaming"]["gamed"].any()
