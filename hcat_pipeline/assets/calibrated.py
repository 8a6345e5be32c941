"""Lineage stage: calibrated_scores (HCAT §5) — per campaign run, every case × system × dimension's raw
score read through the dimension's active calibrator: calibrated probability, conformal prediction
set, machine verdict (pass / fail / unsure) and the label source it rests on (``campaign`` or
``reference:<set>``; ``none`` with the reason when a dimension has no labels yet). Behaviour checks
are dimensions ``behaviour_<rule>``, calibrated once humans have labelled enough of them.

Metadata: verdict counts per dimension × label source, and the Type I / II error rates of the
machine verdict against human labels held out for evaluation (this run's items in a campaign
calibrator's evaluation split; for a reference calibrator, its held-out reference figures, marked so).

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import dagster as dg
import numpy as np
import polars as pl

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.calibration.campaign import DIMENSION_METRICS, calibrate_long, long_scores
from hcat_pipeline.calibration.fitting import error_rates, load_results
from hcat_pipeline.partitions import campaign_run, split_run_key
from hcat_pipeline.schemas import RUN_COLUMNS


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="calibration",
    description="Per campaign run, case × system × dimension: raw score, calibrated probability, conformal prediction set, "
    "machine verdict (pass / fail / unsure) and label source (campaign | reference:<set> | none).",
)
def calibrated_scores(
    context: dg.AssetExecutionContext,
    metric_tables: pl.DataFrame,
    behaviour_checks: pl.DataFrame,
    calibrators: pl.DataFrame,
    human_labels: pl.DataFrame,
) -> pl.DataFrame:
    version, night = split_run_key(context)
    results = load_results(calibrators)
    active_rows = calibrators.filter(pl.col("active"))
    active = {r.dimension: r for r, a in zip(results, calibrators["active"].to_list()) if a}
    # each dimension's metric: the active calibrator's, else the default map (behaviour_<rule> come from behaviour_checks)
    metrics = {**DIMENSION_METRICS, **{d: r.metric for d, r in active.items() if not d.startswith("behaviour_")}}
    notes = {r.dimension: r.message for r in results if r.status != "fitted" and r.dimension not in active}
    missing = {d: m for d, m in metrics.items() if m not in metric_tables.columns}
    long = long_scores(metric_tables, behaviour_checks, metrics)
    out = calibrate_long(long, active, notes)
    sha = metric_tables["campaign_sha256"][0] if "campaign_sha256" in metric_tables.columns and metric_tables.height else None
    out = out.with_columns(pl.lit(version).alias("golden_set_version"), pl.lit(night).alias("night"),
                           pl.lit(sha, dtype=RUN_COLUMNS["campaign_sha256"]).alias("campaign_sha256"))  # fmt: skip

    # Type I / II against human labels held out for evaluation (campaign calibrators' evaluation split)
    errors = {}
    for dim, res in active.items():
        if res.label_source == "campaign":
            held = set(_evaluation_ids(res))
            rows = out.filter((pl.col("dimension") == dim) & pl.col("machine_verdict").is_not_null())
            rows = rows.filter((pl.col("case_id") + "|" + pl.col("system_id")).is_in(list(held)))
            lab = _consensus(human_labels, dim)
            rows = rows.join(lab, on=["case_id", "system_id"], how="inner")
            if rows.height:
                errors[dim] = {"label_source": "campaign", "n_heldout_items_in_this_run": rows.height,
                               **error_rates(rows["machine_verdict"].to_list(), np.isin(rows["label_index"].to_numpy(), list(res.passing)))}  # fmt: skip
                continue
        errors[dim] = {"label_source": res.label_source, "note": "this run's items have no held-out human labels: the figures are the "
                       "calibrator's own held-out evaluation split", **res.evaluation.get("errors", {})}  # fmt: skip
    summary = (
        out.group_by("dimension", "label_source")
        .agg(pl.len().alias("n"), *[(pl.col("machine_verdict") == v).sum().alias(v) for v in ("pass", "fail", "unsure")],
             pl.col("machine_verdict").is_null().sum().alias("not_calibrated"))
        .sort("dimension")
    )  # fmt: skip
    context.add_output_metadata({
        "dagster/row_count": out.height,
        "campaign_run": str(context.partition_key),
        "verdicts_by_dimension": preview(summary, 100),
        "label_sources": dg.MetadataValue.json({d: s for d, s in active_rows.select("dimension", "label_source").iter_rows()}),
        "type_I_II_errors": dg.MetadataValue.json(errors),
        "not_calibrated": dg.MetadataValue.json(notes),
        "dimensions_without_their_metric_column": dg.MetadataValue.json(missing),
        "note": "machine verdicts are never human labels; label_source says which human labels each calibration rests on",
    })  # fmt: skip
    return out


def _evaluation_ids(res) -> list[str]:
    return list(res.splits.get("evaluation_ids", []))


def _consensus(human_labels: pl.DataFrame, dim: str) -> pl.DataFrame:
    from hcat_pipeline.calibration import consensus_labels

    labs = human_labels.filter(pl.col("dimension") == dim)
    if labs.height == 0:
        return pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "label_index": pl.Int64})
    return consensus_labels(labs).filter(~pl.col("tie")).select("case_id", "system_id", "label_index")
