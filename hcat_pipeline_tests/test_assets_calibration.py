"""Calibration assets on a small campaign run: human_labels (bad file, same file twice), reference scores,
calibrators (plots, insufficient labels), calibrated_scores, review_queue exported and a filled copy
imported back, metric_validity. Stub upstream run tables, the real shipped FaithDial reference set and
the real packaged MiniLM (groundedness by sentence similarity, so the test does not depend on the NLI head)."""

import base64
import csv
import json

import dagster as dg
import numpy as np
import polars as pl
import pytest

from hcat_pipeline.assets.calibrated import calibrated_scores
from hcat_pipeline.assets.calibration import calibrators, metric_validity, reference_label_scores
from hcat_pipeline.assets.labels import human_labels, review_queue
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.schemas import GOLDEN_SET, RAG_RESPONSES, RUN_COLUMNS
from hcat_pipeline_tests.stubs import stub_asset

V, NIGHT = "v1", "2026-11-20"
RUN = {"golden_set_version": V, "night": NIGHT, "campaign_sha256": "abc"}
N_CASES = 40  # × 2 systems = 80 items with groundedness labels: enough for a campaign calibrator at α = 0.1


def _score(case: int, system: str) -> float:
    return float(np.random.default_rng(case * 7 + (system == "b")).uniform(0, 1))


def _label(case: int, system: str) -> int:  # a human label that follows the score, with noise
    s = _score(case, system)
    return int(s + np.random.default_rng(1000 + case * 7 + (system == "b")).normal(0, 0.2) > 0.5)


def _golden_set_table() -> pl.DataFrame:
    base = {c: None for c in GOLDEN_SET}
    rows = [{**base, "case_id": f"c{i}", "category": "happy_path", "query_type": ["simple", "yes_no"][i % 2], "stratum": i % 3,
             "query": f"question {i}?", "tags": [], "options": [], "constraints": [], "source_chunk_ids": []} for i in range(N_CASES)]  # fmt: skip
    return pl.DataFrame(rows, schema=GOLDEN_SET)


_golden_set = stub_asset("golden_set", _golden_set_table, golden_set_version)


def _rag_responses_table() -> pl.DataFrame:
    base = {c: None for c in RAG_RESPONSES}
    rows = [{**base, **RUN, "case_id": f"c{i}", "system_id": s, "query": f"question {i}?", "answer": f"answer {i} of {s}",
             "contexts": [f"context {i}", "second passage"], "context_chunk_ids": ["k"]} for i in range(N_CASES) for s in "ab"]  # fmt: skip
    return pl.DataFrame(rows, schema={**RAG_RESPONSES, **RUN_COLUMNS})


_rag_responses = stub_asset("rag_responses", _rag_responses_table, campaign_run)


def _metric_tables_table() -> pl.DataFrame:
    rows = [{**RUN, "case_id": f"c{i}", "system_id": s, "groundedness_similarity": _score(i, s), "toxicity": 0.01 * i,
             "least_grounded_sentence": f"answer {i} of {s}", "least_grounded_smax": 0.3} for i in range(N_CASES) for s in "ab"]  # fmt: skip
    return pl.DataFrame(rows)


_metric_tables = stub_asset("metric_tables", _metric_tables_table, campaign_run)


def _behaviour_checks_table() -> pl.DataFrame:
    rows = [{**RUN, "case_id": f"c{i}", "system_id": s, "rule": "answer_correct", "verdict": "pass", "score": 0.8, "evidence": "x"}
            for i in range(N_CASES) for s in "ab"]  # fmt: skip
    return pl.DataFrame(rows)


_behaviour_checks = stub_asset("behaviour_checks", _behaviour_checks_table, campaign_run)


def _write_labels(path, rows, header=("case_id", "system_id", "dimension", "label", "rater", "labelled_at")):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _config(labels_dir, warehouse):
    return {
        "human_labels": {"config": {"labels_dir": str(labels_dir)}},
        "reference_label_scores": {"config": {"sets": ["faithdial"], "metrics_by_set": {"faithdial": ["groundedness_similarity"]}}},
        "calibrators": {"config": {"dimension_metrics": {"groundedness": "groundedness_similarity", "toxicity": "toxicity"},
                                   "warehouse_dir": str(warehouse)}},
        "review_queue": {"config": {"labels_dir": str(labels_dir), "budget": 6}},
    }  # fmt: skip


def test_human_labels_bad_file_rejected_with_lines_and_same_file_twice(tmp_path):
    labels = tmp_path / "labels"
    labels.mkdir()
    _write_labels(labels / "good.csv", [["c1", "a", "groundedness", 1, "ann", "2026-11-21"], ["c2", "a", "groundedness", 0, "ann", "2026-11-21"]])
    _write_labels(labels / "bad.csv", [["c3", "a", "groundedness", 1, "bob", "2026-11-21"], ["c4", "a", "groundedness", 7, "bob", "2026-11-21"],
                                       ["c5", "a", "groundedness", 0, "bob", "yesterday"]])  # fmt: skip
    run = {"ops": {"human_labels": {"config": {"labels_dir": str(labels)}}}}
    res = dg.materialize([human_labels], instance=dg.DagsterInstance.ephemeral(), run_config=run,
                         resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))})  # fmt: skip
    assert res.success
    md = res.asset_materializations_for_node("human_labels")[0].metadata
    stored = res.output_for_node("human_labels")
    assert sorted(stored["case_id"].to_list()) == ["c1", "c2"]  # nothing of bad.csv, not even its good first row
    assert md["files_rejected"].value == 1 and md["rows_added"].value == 2
    errors = md["errors"].value
    assert "bad.csv | 3 | label 7 outside the binary scale" in errors and "bad.csv | 4 | labelled_at 'yesterday'" in errors
    assert "bad.csv | 2 |" not in errors
    # the same files again: nothing changes (no new version, no rows)
    res2 = dg.materialize([human_labels], instance=dg.DagsterInstance.ephemeral(), run_config=run,
                          resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))})  # fmt: skip
    md2 = res2.asset_materializations_for_node("human_labels")[0].metadata
    assert md2["rows_added"].value == 0 and md2["store_versions"].value == md["store_versions"].value == 1
    assert res2.output_for_node("human_labels").equals(stored)


def test_calibration_chain_on_a_small_campaign_run(tmp_path, embedding_model):
    warehouse, labels = tmp_path / "wh", tmp_path / "labels"
    labels.mkdir()
    # campaign labels for groundedness on every item (two raters on the first 10), none for toxicity
    rows = [[f"c{i}", s, "groundedness", _label(i, s), "ann", "2026-11-21"] for i in range(N_CASES) for s in "ab"]
    rows += [[f"c{i}", "a", "groundedness", _label(i, "a") if i % 5 else 1 - _label(i, "a"), "bob", "2026-11-21"] for i in range(10)]
    _write_labels(labels / "round1.csv", rows)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [V])
    resources = {"io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir), "nli_model": NLIModel()}
    assert dg.materialize([_golden_set], partition_key=V, instance=instance, resources=resources).success
    mine = [human_labels, reference_label_scores, calibrators, calibrated_scores, review_queue, metric_validity]
    # the judge never ran for this run: the review queue's optional input is None (not stored), said in its metadata
    stubs = [_golden_set, _rag_responses, _metric_tables, _behaviour_checks, dg.AssetSpec("llm_judge_scores", partitions_def=campaign_run),
             dg.AssetSpec("judge_ensemble", partitions_def=campaign_run), dg.AssetSpec("judge_validation")]
    run_config = {"ops": _config(labels, warehouse)}
    res = dg.materialize([*stubs, *mine], selection=[*stubs[1:4], *mine], partition_key=campaign_run_key(V, NIGHT), instance=instance,
                         resources=resources, run_config=run_config)  # fmt: skip
    assert res.success

    cal = pl.read_parquet(warehouse / "calibrators.parquet")
    by = {(r["dimension"], r["label_source"]): r for r in cal.iter_rows(named=True)}
    assert by[("groundedness", "campaign")]["status"] == "fitted" and by[("groundedness", "campaign")]["active"]
    assert by[("groundedness", "reference:faithdial")]["status"] == "fitted" and not by[("groundedness", "reference:faithdial")]["active"]
    # 80 behaviour checks all labelled by nobody → no calibrator row; the metadata of calibrators has both plots as PNG
    md = res.asset_materializations_for_node("calibrators")[0].metadata
    for key in ("groundedness__campaign", "groundedness__reference_faithdial"):
        for plot in ("reliability_diagram", "figure4"):
            text = md[f"{key}/{plot}"].value
            png = base64.b64decode(text.split("base64,")[1].rstrip(")"))
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    summary = md["groundedness__reference_faithdial/summary"].data
    assert summary["brier_after"] < summary["brier_before"] and summary["heldout_n"] == 135

    out = pl.read_parquet(warehouse / "calibrated_scores" / V / f"{NIGHT}.parquet")
    g = out.filter(pl.col("dimension") == "groundedness")
    assert g.height == 2 * N_CASES and (g["label_source"] == "campaign").all() and g["machine_verdict"].is_not_null().all()
    assert set(g["prediction_set"].unique().to_list()) <= {"{0}", "{1}", "{0,1}", "∅"}
    verdict = {"{1}": "pass", "{0}": "fail", "{0,1}": "unsure", "∅": "unsure"}
    assert [verdict[s] for s in g["prediction_set"]] == g["machine_verdict"].to_list()
    t = out.filter(pl.col("dimension") == "toxicity")  # no toxicity labels in this test (toxigen not scored): not calibrated, said why
    assert t.height == 2 * N_CASES and (t["label_source"] == "none").all() and t["machine_verdict"].is_null().all()
    assert (out["golden_set_version"] == V).all() and (out["night"] == NIGHT).all()
    errs = res.asset_materializations_for_node("calibrated_scores")[0].metadata["type_I_II_errors"].data["groundedness"]
    heldout = json.loads(by[("groundedness", "campaign")]["evaluation"])["n"]
    assert errs["label_source"] == "campaign" and errs["n_heldout_items_in_this_run"] == heldout >= 15  # 20 % of 78 untied items
    assert "type_I_false_fail" in errs and "type_II_false_pass" in errs

    # the review queue: exported, blank → imports nothing; a filled-in copy is imported as it is
    queue_path = labels / "review_queue.csv"
    queue = pl.read_csv(queue_path, infer_schema=False)
    design = pl.read_parquet(labels / "_designs" / V / f"{NIGHT}.parquet")  # the design frozen at its first draw
    queued = design.filter(pl.col("queued") & (pl.col("dimension") != "groundedness"))
    assert queue.height == queued.height > 5 and queue["label"].is_null().all()
    assert set(queue["design"]) == {"sequential_poisson_v1"} and queue["inclusion_probability"].cast(pl.Float64).is_between(0, 0.95).all()
    assert design.group_by("dimension").agg(pl.col("inclusion_probability").sum())["inclusion_probability"].to_list() == pytest.approx([6] * 3)
    assert set(queue["dimension"]) <= {"toxicity", "behaviour_answer_correct"}  # groundedness is labelled already
    assert queue["system_id"].n_unique() == 2 and queue["query_type"].n_unique() == 2 and queue["stratum"].n_unique() == 3
    assert queue["answer"].is_not_null().all() and queue["query"].is_not_null().all()
    filled = queue.with_columns(pl.lit("1").alias("label"), pl.lit("carol").alias("rater"), pl.lit("2026-11-22").alias("labelled_at"))
    filled = filled.with_columns(pl.when(pl.int_range(pl.len()) < 10).then(pl.col("label")).otherwise(None).alias("label"),
                                 pl.when(pl.int_range(pl.len()) < 10).then(pl.col("rater")).otherwise(None).alias("rater"),
                                 pl.when(pl.int_range(pl.len()) < 10).then(pl.col("labelled_at")).otherwise(None).alias("labelled_at"))  # fmt: skip
    filled.write_csv(labels / "review_queue_filled.csv")
    res2 = dg.materialize([human_labels], instance=instance, resources=resources, run_config={"ops": {"human_labels": _config(labels, warehouse)["human_labels"]}})
    md2 = res2.asset_materializations_for_node("human_labels")[0].metadata
    files = md2["files"].value
    assert "review_queue.csv | pending" in files and "review_queue_filled.csv | imported" in files
    stored = res2.output_for_node("human_labels")
    carol = stored.filter(pl.col("rater") == "carol")
    assert carol.height == 10 and set(carol["dimension"]) <= {"toxicity", "behaviour_answer_correct"}

    # a queue filled in place is never overwritten by the next run: tonight's queue goes next to it
    filled.write_csv(queue_path)
    res3 = dg.materialize([*stubs, *mine], selection=[review_queue], partition_key=campaign_run_key(V, NIGHT), instance=instance,
                          resources=resources, run_config={"ops": {"review_queue": run_config["ops"]["review_queue"]}})  # fmt: skip
    assert res3.success and pl.read_csv(queue_path, infer_schema=False)["rater"].to_list()[:10] == ["carol"] * 10
    assert (labels / f"review_queue_{V}_{NIGHT}.csv").is_file()

    val = pl.read_parquet(warehouse / "metric_validity.parquet")
    ref = val.filter(pl.col("labelled_set") == "reference:faithdial").row(0, named=True)
    assert ref["metric"] == "groundedness_similarity" and ref["heldout_n"] == 135 and 0.6 < ref["auroc"] <= 1
    assert ref["auroc_ci_low"] < ref["auroc"] < ref["auroc_ci_high"] and ref["coverage_ci_low"] <= ref["coverage"] <= ref["coverage_ci_high"]


def test_label_file_sensor_requests_a_run_for_new_or_changed_files_only(tmp_path):
    from hcat_pipeline.sensors import build_label_file_sensor

    labels = tmp_path / "labels"
    labels.mkdir()
    sensor = build_label_file_sensor(str(labels))
    _write_labels(labels / "review_queue.csv", [["c1", "a", "toxicity", "", "", "", "v1|n"]],
                  header=("case_id", "system_id", "dimension", "label", "rater", "labelled_at", "review_queue"))  # fmt: skip
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral()) as ctx:
        assert isinstance(sensor(ctx), dg.SkipReason)  # a blank review queue requests nothing
        _write_labels(labels / "round1.csv", [["c1", "a", "groundedness", 1, "ann", "2026-11-21"]])
        first = sensor(ctx)
        assert isinstance(first, dg.RunRequest) and "round1.csv" in first.tags["label_files"]
        assert isinstance(sensor(ctx), dg.SkipReason)  # unchanged: nothing
        _write_labels(labels / "round1.csv", [["c1", "a", "groundedness", 0, "ann", "2026-11-22"]])
        again = sensor(ctx)
        assert isinstance(again, dg.RunRequest) and again.run_key != first.run_key
