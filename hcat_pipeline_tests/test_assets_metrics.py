import json
import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from dagster import DagsterInstance

from hcat_pipeline.assets.metrics import build_metric_assets
from hcat_pipeline.assets.violations import violation_campaign
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector
from hcat_pipeline.schemas import GOLDEN_SET, RAG_RESPONSES
from hcat_pipeline_tests.stubs import stub_asset

CTX = ["The Eiffel Tower is in Paris. It was completed in 1889.", "Paris is the capital of France."]
QUERY = "When was the Eiffel Tower completed?"
PLANTED = "Records show the Eiffel Tower was only completed in 1925."


def _golden() -> pl.DataFrame:
    base = {c: None for c in GOLDEN_SET}
    rows = [
        {**base, "case_id": "c1", "version": "v1", "query": QUERY, "reference_answer": "It was completed in 1889.", "pair_id": "p1", "attribute": "gender",
         "source_chunk_ids": ["k1"]},
        {**base, "case_id": "c2", "version": "v1", "query": QUERY, "reference_answer": "It was completed in 1889.", "pair_id": "p1", "attribute": "gender"},
    ]
    return pl.DataFrame(rows, schema=GOLDEN_SET)


def _responses() -> pl.DataFrame:
    base = {c: None for c in RAG_RESPONSES}
    rows = []
    for system, answers in {"good": ["It was completed in 1889.", "The tower was completed in 1889."], "bad": ["Bananas are yellow.", None]}.items():
        for case, ans in zip(["c1", "c2"], answers):
            planted = system == "good" and case == "c1"  # a planted distractor passage, never part of groundedness
            rows.append({**base, "case_id": case, "system_id": system, "query": QUERY, "answer": ans,
                         "contexts": [*CTX, PLANTED] if planted else CTX,
                         "context_chunk_ids": ["k1", "k2", "distractor:0123456789ab"] if planted else ["k1", "k2"],
                         "error": None if ans else "rate_limit: gave up after 3 attempts"})
    return pl.DataFrame(rows, schema=RAG_RESPONSES)


_golden_set = stub_asset("golden_set", _golden, golden_set_version)


_rag_responses = stub_asset("rag_responses", _responses, campaign_run)


def test_metric_tables_and_bias_report(warehouse, embedding_model):
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    metric_tables, bias_report = build_metric_assets()
    metrics = ["context_relevancy", "groundedness_similarity", "completeness_wasserstein", "answer_relevancy", "semantic_similarity"]
    io = PolarsParquetIOManager(base_dir=str(warehouse))
    assert dg.materialize([_golden_set], partition_key="v1", instance=instance, resources={"io_manager": io}).success
    res = dg.materialize(
        [_golden_set, _rag_responses, metric_tables, bias_report],
        selection=[_rag_responses, metric_tables, bias_report],
        partition_key=campaign_run_key("v1", "2026-11-20"),
        instance=instance,
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir), "pii_detector": PIIDetector(), "nli_model": NLIModel()},
        run_config={"ops": {"metric_tables": {"config": {"metrics": metrics}}}},
    )
    assert res.success
    out = pl.read_parquet(warehouse / "metric_tables" / "v1" / "2026-11-20.parquet")
    assert out.height == 4  # the failed response is kept
    failed = out.filter(pl.col("score_skipped_reason").is_not_null())
    assert failed["system_id"].to_list() == ["bad"] and failed["groundedness_similarity"].null_count() == 1
    assert {"groundedness_smax", "least_grounded_sentence", "completeness_wasserstein_approx", "context_relevancy_smax"} <= set(out.columns)
    assert out["reference"].null_count() == 0  # reference_answer joined from the golden set
    md = res.asset_materializations_for_node("metric_tables")[0].metadata
    assert md["rows_failed"].value == 1
    means = md["means"].data
    assert means["good"]["groundedness_similarity"]["mean"] > means["bad"]["groundedness_similarity"]["mean"]
    assert means["good"]["groundedness_similarity"]["n"] == 2 and means["good"]["groundedness_similarity"]["half_width"] > 0
    assert means["bad"]["failed"] == 1 and means["bad"]["groundedness_similarity"]["n"] == 1
    c1 = out.filter((pl.col("system_id") == "good") & (pl.col("case_id") == "c1")).row(0, named=True)
    assert c1["planted_passages"] == [PLANTED] and PLANTED not in " ".join(c1["context_sentences"] or [])
    assert md["aggregation"].data["context_relevancy"] == "mean"
    assert json.loads(out["score_info"][0])["metrics_computed"] == metrics
    bias = res.asset_materializations_for_node("bias_report")[0].metadata
    assert bias["pair_rows"].value == 4


def test_metric_tables_every_metric_and_unavailable_ones(warehouse, embedding_model, tmp_path):
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    metric_tables, _ = build_metric_assets()
    io = PolarsParquetIOManager(base_dir=str(warehouse))
    assert dg.materialize([_golden_set], partition_key="v1", instance=instance, resources={"io_manager": io}).success
    no_head = NLIModel(weights_path=str(tmp_path / "missing_head.json"))

    def run(nli, config=None):
        return dg.materialize(
            [_golden_set, _rag_responses, metric_tables], selection=[_rag_responses, metric_tables],
            partition_key=campaign_run_key("v1", "2026-11-21"), instance=instance, raise_on_error=False,
            resources={"io_manager": io, "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir), "pii_detector": PIIDetector(), "nli_model": nli},
            run_config={"ops": {"metric_tables": {"config": config or {}}}},
        )  # fmt: skip

    # every default metric that applies + an opt-in one named in the campaign file (what the nightly schedule hands the run)
    from hcat_pipeline.campaign_spec import campaign_run_config, parse_campaign

    spec = parse_campaign("name: t\nmetrics: [hierarchical_consistency]\nsystems:\n  - system_id: s\n    retriever: bm25\n")
    res = run(NLIModel(), campaign_run_config(spec)["ops"]["metric_tables"]["config"])
    assert res.success
    out = pl.read_parquet(warehouse / "metric_tables" / "v1" / "2026-11-21.parquet")
    info = json.loads(out["score_info"][0])
    assert {"groundedness_nli", "toxicity", "pii_leak", "refusal", "semantic_similarity"} <= set(info["metrics_computed"])
    assert info["metrics_computed"][-1] == "hierarchical_consistency" and "hierarchy_structure" in out.columns
    assert info["metrics_unavailable"] == {} and out.filter(pl.col("error").is_null())["groundedness_nli"].null_count() == 0
    # the NLI head is missing: the asset fails, naming the metric, the cause and the fix
    res = run(no_head)
    assert not res.success
    failure = next(e for e in res.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error
    assert "groundedness_nli" in failure.message and "missing_head.json" in failure.message and "allow_unavailable" in failure.message
    # ... unless the config allows it: null column, reason in the metadata
    res = run(no_head, {"allow_unavailable": True, "metrics": ["groundedness_similarity", "groundedness_nli"]})
    assert res.success
    md = res.asset_materializations_for_node("metric_tables")[0].metadata
    assert list(md["metrics_unavailable"].data) == ["groundedness_nli"] and "hcat train-nli" in md["metrics_unavailable"].data["groundedness_nli"]
    assert md["metrics_computed"].data == ["groundedness_similarity"]
    assert pl.read_parquet(warehouse / "metric_tables" / "v1" / "2026-11-21.parquet")["groundedness_nli"].null_count() == 4


def test_long_document_faithfulness_reads_the_cases_long_source_documents(warehouse, embedding_model, tmp_path):
    # c1's source chunk k1 belongs to d1 (3 chunks: long at long_document_min_chunks 2); c2 has no source chunk
    corpus_dir = tmp_path / "corpus"
    corpus_dir.mkdir()
    doc = "The Eiffel Tower is in Paris. It was completed in 1889. It is 330 metres tall."
    pl.DataFrame({"doc_id": ["d1"], "source": ["s"], "title": ["Eiffel"], "text": [doc]}).write_parquet(corpus_dir / "corpus.parquet")
    pl.DataFrame({"chunk_id": ["k1", "k2", "k3"], "doc_id": ["d1"] * 3}).write_parquet(corpus_dir / "chunks.parquet")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    metric_tables, _ = build_metric_assets()
    io = PolarsParquetIOManager(base_dir=str(warehouse))
    assert dg.materialize([_golden_set], partition_key="v1", instance=instance, resources={"io_manager": io}).success
    config = {"metrics": ["answer_relevancy"], "extra_metrics": ["long_document_faithfulness"], "corpus_dir": str(corpus_dir),
              "long_document_min_chunks": 2}  # fmt: skip
    res = dg.materialize(
        [_golden_set, _rag_responses, metric_tables], selection=[_rag_responses, metric_tables],
        partition_key=campaign_run_key("v1", "2026-11-21"), instance=instance,
        resources={"io_manager": io, "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir), "pii_detector": PIIDetector(), "nli_model": NLIModel()},
        run_config={"ops": {"metric_tables": {"config": config}}},
    )  # fmt: skip
    assert res.success
    out = pl.read_parquet(warehouse / "metric_tables" / "v1" / "2026-11-21.parquet")
    by = {(r["system_id"], r["case_id"]): r for r in out.to_dicts()}
    assert by[("good", "c1")]["long_document_faithfulness"] == pytest.approx(1.0)  # its one sentence is in d1
    bad = by[("bad", "c1")]
    assert bad["long_document_faithfulness"] == 0.0 and bad["long_document_unfaithful"][0]["sentence"] == "Bananas are yellow."
    assert by[("good", "c2")]["long_document_faithfulness"] is None and by[("good", "c2")]["long_document_sources"] == 0
    assert "source_documents" not in out.columns  # the documents are read, never stored again


def test_violation_campaign_asset(tmp_path, warehouse, embedding_model):
    folder = tmp_path / "violations"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "violations", folder)
    with open(folder / "ground_truth.jsonl", "a") as f:
        f.write("this line is broken\n")
    res = dg.materialize(
        [violation_campaign],
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir)},
        run_config={"ops": {"violation_campaign": {"config": {"folder": str(folder)}}}},
    )
    assert res.success
    summary = pl.read_parquet(warehouse / "violation_campaign.parquet")
    assert summary["checker_version"].to_list() == ["example-checker@0.1.0"]
    row = summary.row(0, named=True)
    assert row["tp"] + row["fn"] == row["ground_truth"] == 3 and row["tp"] + row["fp"] == row["predicted"] == 3
    errors = pl.read_parquet(warehouse / "violation_file_errors.parquet")
    assert errors.to_dicts() == [{"file": "ground_truth.jsonl", "line": 4, "reason": errors["reason"][0]}]
    assert errors["reason"][0].startswith("not JSON")
    pairs = pl.read_parquet(warehouse / "violation_matches.parquet")
    assert pairs["std_match"].sum() == row["tp"]
    # the headline figure: the mean weighted score of the std matches, with its CI over the 3 texts; MiniLM rules
    matched = pairs.filter(pl.col("std_match"))["match_score"]
    assert row["rule_similarity"] == "minilm" and row["samples"] == 3
    assert row["match_score"] == pytest.approx(matched.mean()) and row["match_score_ci_low"] <= row["match_score"] <= row["match_score_ci_high"]
    assert row["f1_ci_low"] <= row["f1"] <= row["f1_ci_high"]
    # who they are, as the deck names them; no human match labels here: the defaults, said so
    assert row["split"].startswith("example_split@0.1.0#") and row["checker"] == "example-checker@0.1.0|hand-written (invented example)"
    fitted = res.asset_materializations_for_node("violation_campaign")[0].metadata["fitted_to_human_labels"].data
    assert fitted["why"].startswith("no match_labels.jsonl") and "fixed defaults" in fitted["why"]
    assert row["weights"].startswith("the deck's default weights (no match_labels.jsonl")  # said on every figure's row


def test_violation_file_sensor_reruns_the_matching_when_a_checker_version_arrives(tmp_path, warehouse, embedding_model):
    import json

    from hcat_pipeline.definitions import defs
    from hcat_pipeline.sensors import build_violation_file_sensor

    folder = tmp_path / "violations"
    folder.mkdir()
    sensor = build_violation_file_sensor(str(folder))
    instance = dg.DagsterInstance.ephemeral()
    with dg.build_sensor_context(instance=instance) as ctx:
        assert "no ground_truth.jsonl" in sensor(ctx).skip_message
        for path in (Path(__file__).resolve().parents[1] / "data" / "violations").glob("*.jsonl"):
            shutil.copy(path, folder)
        first = sensor(ctx)
        assert isinstance(first, dg.RunRequest) and "example-checker@0.1.0.jsonl" in first.tags["violation_files"]
        assert isinstance(sensor(ctx), dg.SkipReason)  # nothing changed
        gt = [json.loads(line) for line in (folder / "ground_truth.jsonl").read_text().splitlines()]
        (folder / "perfect@2.0.0.jsonl").write_text("\n".join(json.dumps(r) for r in gt) + "\n")  # a new checker version
        second = sensor(ctx)
    assert isinstance(second, dg.RunRequest) and second.run_key != first.run_key and second.tags["violation_files"].startswith("perfect@2.0.0")
    # the job the sensor names, with the run config it gives: a real run over both checker versions
    job = defs.resolve_job_def("violation_job")
    res = job.execute_in_process(run_config=second.run_config, instance=instance,
                                 resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir)})  # fmt: skip
    assert res.success
    by = {r["checker_version"]: r for r in pl.read_parquet(warehouse / "violation_campaign.parquet").to_dicts()}
    assert set(by) == {"example-checker@0.1.0", "perfect@2.0.0"} and by["perfect@2.0.0"]["f1"] == 1.0
    assert by["perfect@2.0.0"]["match_score"] == pytest.approx(1.0) and by["example-checker@0.1.0"]["f1"] < 1.0
