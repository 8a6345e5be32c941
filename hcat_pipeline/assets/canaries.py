"""Lineage stage: canary_detection — would these gates catch a broken system? (core: ``gates.canaries``,
``gates.canary_detection``).

The campaign file's ``canaries:`` plant faults in copies of its systems (``rag_responses`` adds their answers as
``canary:<fault>:<parent>``); they are scored and gated like any system, then this asset checks each one against
the verdicts its fault declares. Its check ``canaries_caught`` fails when a canary was missed: the evaluator is
broken, not the user's system — it is never a release verdict (not blocking, and the release decision, rankings and
frontier of the real systems never see a canary).

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.gates.canary_detection import canary_detection as detect
from hcat_pipeline.gates.canary_detection import detection_summary
from hcat_pipeline.gates.pareto import QUALITY_METRIC, RANKING_METRICS
from hcat_pipeline.partitions import campaign_run, split_run_key

CANARY_CHECK = "canaries_caught"


class CanaryDetectionConfig(dg.Config):
    ranking_metrics: list[str] = Field(default=list(RANKING_METRICS), description="rank_below_parent reads these metric_tables columns")
    quality_metric: str = Field(default=QUALITY_METRIC, description="the Pareto quality axis of off_frontier")
    seed: int = 42


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="gates",
          check_specs=[dg.AssetCheckSpec(CANARY_CHECK, asset="canary_detection",
                                         description="every canary got the verdicts its planted fault declares (a miss: the "
                                         "evaluator would not catch such a broken system); never a release verdict")],
          description="Per campaign run, canary × expectation: the planted fault's expected verdict (gate FAIL, metric moved vs "
          "the parent, ranked below it, off the frontier), what was observed, caught or missed, and the evidence.")  # fmt: skip
def canary_detection(context: dg.AssetExecutionContext, config: CanaryDetectionConfig, gate_verdicts: pl.DataFrame,
                     metric_tables: pl.DataFrame, behaviour_checks: pl.DataFrame, rag_responses: pl.DataFrame,
                     grader_gaming: pl.DataFrame, golden_set: pl.DataFrame):  # fmt: skip
    version, night = split_run_key(context)
    table = detect(gate_verdicts, metric_tables, behaviour_checks, rag_responses, ranking_metrics=config.ranking_metrics,
                   quality_metric=config.quality_metric, seed=config.seed, gaming=grader_gaming, golden=golden_set).with_columns(
        pl.lit(version).alias("golden_set_version"), pl.lit(night).alias("night"),
        pl.lit(rag_responses["campaign_sha256"][0] if rag_responses.height else None, dtype=pl.String).alias("campaign_sha256"))  # fmt: skip
    per, rate = detection_summary(table)
    yield dg.Output(table, metadata={
        "dagster/row_count": table.height, "canaries": per.height, "detection_rate": dg.MetadataValue.json(rate),
        "per_canary": preview(per.with_columns(pl.col("missed_checks").list.join(", ")), 50, 120),
        "missed": preview(table.filter(pl.col("caught") == False).select("canary_id", "check", "observed", "evidence"), 50, 160),  # noqa: E712
    })  # fmt: skip
    missed = per.filter(pl.col("verdict") == "missed")
    yield dg.AssetCheckResult(
        check_name=CANARY_CHECK, passed=missed.height == 0, severity=dg.AssetCheckSeverity.ERROR,
        description=("no canary in this run" if per.height == 0 else f"{rate['caught']}/{rate['n']} canaries caught"),
        metadata={"caught": rate["caught"], "canaries": rate["n"],
                  "missed": dg.MetadataValue.json({r["canary_id"]: r["missed_checks"] for r in missed.to_dicts()})},
    )  # fmt: skip
