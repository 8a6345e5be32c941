"""Violation-detection campaign (violation-match deck): match each checker version's predicted
violations to the ground truth, from JSONL files in a folder (format: data/violations/README.md and
``hcat_pipeline.core.metrics.matching``).

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.core.metrics.matching import MatchConfig, evaluate_campaign
from hcat_pipeline.paths import DATA_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel

SUMMARY_SCHEMA = {
    "checker_version": pl.String, "texts": pl.Int64, "texts_missing": pl.Int64, "predicted": pl.Int64, "ground_truth": pl.Int64,
    "tp": pl.Int64, "fp": pl.Int64, "fn": pl.Int64, "precision": pl.Float64, "recall": pl.Float64, "f1": pl.Float64,
    "ha_tp": pl.Int64, "ha_fp": pl.Int64, "ha_fn": pl.Int64, "ha_precision": pl.Float64, "ha_recall": pl.Float64, "ha_f1": pl.Float64,
}
PAIRS_SCHEMA = {
    "checker_version": pl.String, "text_id": pl.String, "pred_start": pl.Int64, "pred_end": pl.Int64, "pred_rule": pl.String,
    "gt_start": pl.Int64, "gt_end": pl.Int64, "gt_rule": pl.String, "text_overlap": pl.Float64, "rule_similarity": pl.Float64,
    "category_match": pl.Float64, "explanation_similarity": pl.Float64, "correction_similarity": pl.Float64,
    "match_score": pl.Float64, "ha_match_score": pl.Float64, "std_match": pl.Boolean, "ha_match": pl.Boolean,
}
ERRORS_SCHEMA = {"file": pl.String, "line": pl.Int64, "reason": pl.String}


class ViolationCampaignConfig(dg.Config):
    folder: str = str(DATA_DIR / "violations")  # ground_truth.jsonl + <checker_version>.jsonl
    # weights and thresholds: the deck's defaults, defined once in core (MatchConfig)
    overlap_weight: float = MatchConfig.overlap_weight
    rule_weight: float = MatchConfig.rule_weight
    ha_overlap_weight: float = MatchConfig.ha_overlap_weight
    ha_rule_weight: float = MatchConfig.ha_rule_weight
    ha_category_weight: float = MatchConfig.ha_category_weight
    ha_explanation_weight: float = MatchConfig.ha_explanation_weight
    ha_correction_weight: float = MatchConfig.ha_correction_weight
    overlap_threshold: float = MatchConfig.overlap_threshold
    rule_similarity_threshold: float = MatchConfig.rule_similarity_threshold
    match_threshold: float = MatchConfig.match_threshold


@dg.multi_asset(
    outs={
        "violation_campaign": dg.AssetOut(description="Per checker version: TP/FP/FN, precision, recall, F1 and the human-aligned (ha_) variants."),
        "violation_matches": dg.AssetOut(description="Every (predicted, ground-truth) pair of a text: IoU, rule/category/explanation/correction similarity, scores, match decisions."),
        "violation_file_errors": dg.AssetOut(description="Bad lines / violations of the violation files: file, line, reason."),
    },
    group_name="metrics",
)
def violation_campaign(context: dg.AssetExecutionContext, config: ViolationCampaignConfig, embedding_model: EmbeddingModel):
    folder = Path(config.folder)
    if not (folder / "ground_truth.jsonl").is_file():
        raise dg.Failure(f"violation_campaign: no ground_truth.jsonl in {folder} (see data/violations/README.md for the format)")
    match_cfg = MatchConfig(**{k: getattr(config, k) for k in MatchConfig.__dataclass_fields__})
    summary, pairs, errors = evaluate_campaign(folder, embedding_model.embed, match_cfg)
    summary_df = pl.DataFrame(summary, schema=SUMMARY_SCHEMA) if summary else pl.DataFrame(schema=SUMMARY_SCHEMA)
    pairs_df = pl.DataFrame(pairs, schema=PAIRS_SCHEMA) if pairs else pl.DataFrame(schema=PAIRS_SCHEMA)
    errors_df = pl.DataFrame(errors, schema=ERRORS_SCHEMA) if errors else pl.DataFrame(schema=ERRORS_SCHEMA)
    if errors:
        context.log.warning(f"{len(errors)} bad line(s)/violation(s) in {folder}; see violation_file_errors")
    yield dg.Output(
        summary_df,
        output_name="violation_campaign",
        metadata={
            "dagster/row_count": summary_df.height,
            "checkers": summary_df.height,
            "summary": preview(summary_df, 50),
            "file_errors": len(errors),
            "errors": preview(errors_df, 20),
            "config": dg.MetadataValue.json(dict(config)),
        },
    )
    yield dg.Output(pairs_df, output_name="violation_matches", metadata={"dagster/row_count": pairs_df.height, "matches": int(pairs_df["std_match"].sum()) if pairs_df.height else 0})
    yield dg.Output(errors_df, output_name="violation_file_errors", metadata={"dagster/row_count": errors_df.height, "preview": preview(errors_df, 20)})
