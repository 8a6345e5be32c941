"""The label-driven threshold through the asset (issue 61: gate_verdicts' calibration inputs were only ever None in
tests): a real Dagster materialization of gate_verdicts given a calibrator fitted on strict raters' labels, its
calibrated scores, the labels and the night's frozen labelling design — the groundedness gate's threshold moves to where
the raters put it (0.8, not the file's 0.5), the middling system FAILs it and the solid one PASSes, and the human-pass
rate rests on the design. Without the calibration inputs the same night PASSes both (the control)."""

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline.assets.calibration import calibrator_row
from hcat_pipeline.assets.gates import gate_verdicts
from hcat_pipeline.calibration.design import design_file
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline_tests.calibration_data import (
    calibrated_scores_of,
    night_design,
    rater_labels,
    strict_humans,
    two_systems_night,
)
from hcat_pipeline_tests.stubs import TablesIO

GATES = """version: "1"
gates:
  - name: groundedness
    kind: hard
    table: metric_tables
    metric: groundedness_nli
    statistic: mean
    direction: ">="
    threshold: 0.5
"""
VERSION, NIGHT = "v1", "2025-03-01"


def _materialize(tmp_path, with_labels: bool):
    metrics = two_systems_night()
    tables = {"metric_tables": metrics, "golden_set": pl.DataFrame({"case_id": metrics["case_id"].unique().sort(), "category": "happy_path"}),
              "behaviour_checks": pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "rule": pl.String, "verdict": pl.String}),
              "retrieval_metrics": pl.DataFrame({"case_id": ["c0"], "system_id": ["solid"], "recall_at_k": [1.0]}),
              "rag_responses": metrics.select("case_id", "system_id", pl.lit(["a passage"]).alias("contexts"), pl.lit(None, pl.String).alias("error"),
                                              pl.lit(1.0).alias("latency_s"))}  # fmt: skip
    labels_dir = tmp_path / "labels"
    if with_labels:
        res = strict_humans()
        scores = calibrated_scores_of(res, metrics)
        frame = night_design(scores)
        frozen = design_file(labels_dir, VERSION, NIGHT)
        frozen.parent.mkdir(parents=True)
        frame.write_parquet(frozen)
        tables |= {"calibrators": pl.DataFrame([calibrator_row(res, True)]), "calibrated_scores": scores, "human_labels": rater_labels(metrics, design=frame)}
    (tmp_path / "gates.yaml").write_text(GATES)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    io = TablesIO(tables)
    upstream = [dg.AssetSpec(k, partitions_def=campaign_run) for k in ("metric_tables", "behaviour_checks", "retrieval_metrics", "rag_responses",
                                                                       "llm_judge_scores", "grader_gaming", "calibrators", "calibrated_scores",
                                                                       "human_labels", "case_contamination", "judge_ensemble")]  # fmt: skip
    config = {"warehouse_dir": str(tmp_path / "wh"), "gates_file": str(tmp_path / "gates.yaml"), "labels_dir": str(labels_dir)}
    dg.materialize([*upstream, dg.AssetSpec("golden_set", partitions_def=golden_set_version), gate_verdicts],
                   partition_key=campaign_run_key(VERSION, NIGHT), instance=instance, resources={"io_manager": io},
                   run_config={"ops": {"gate_verdicts": {"config": config}}}, raise_on_error=False)  # fmt: skip
    return {r["system_id"]: r for r in io.written["gate_verdicts"].filter(pl.col("gate") == "groundedness").to_dicts()}


def test_labels_move_the_threshold_and_the_verdict_through_the_asset(tmp_path):
    out = _materialize(tmp_path, with_labels=True)
    mid, solid = out["middling"], out["solid"]
    assert mid["evidence"] == solid["evidence"] == "human_calibrated"
    assert mid["threshold"] == pytest.approx(0.8, abs=0.05) and mid["threshold_declared"] == 0.5
    assert mid["verdict"] == "FAIL" and solid["verdict"] == "PASS"
    assert mid["label_design"].startswith("active inference") and mid["n_labelled"] > 5
    assert mid["human_pass_rate"] == pytest.approx(0.0, abs=0.05) and solid["human_pass_rate"] == pytest.approx(1.0, abs=0.05)


def test_without_the_calibration_inputs_the_declared_threshold_passes_both(tmp_path):
    out = _materialize(tmp_path, with_labels=False)
    assert {s: (r["verdict"], r["evidence"]) for s, r in out.items()} == {"middling": ("PASS", "uncalibrated"), "solid": ("PASS", "uncalibrated")}
