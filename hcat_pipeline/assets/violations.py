"""Violation-detection campaign (violation-match deck): match each checker version's predicted
violations to the ground truth, from JSONL files in a folder (format: data/violations/README.md and
``hcat_pipeline.metrics.matching``).

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import dataclasses
from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.metrics.matching import MatchConfig
from hcat_pipeline.metrics.violation_figures import FigureOptions
from hcat_pipeline.metrics.violation_files import LABELS_FILE, evaluate_campaign
from hcat_pipeline.metrics.violation_fit import fit_match_weights, read_match_labels, weights_note
from hcat_pipeline.paths import DATA_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.schemas import VIOLATION_CAMPAIGN as SUMMARY_SCHEMA
from hcat_pipeline.schemas import VIOLATION_FILE_ERRORS as ERRORS_SCHEMA
from hcat_pipeline.schemas import VIOLATION_MATCHES as PAIRS_SCHEMA

# weights, thresholds and the rule-similarity backend: the deck's defaults, defined once in the core (MatchConfig); the
# bootstrap of the figures' CIs (FigureOptions); + where the files are
ViolationCampaignConfig = config_from(
    MatchConfig, "ViolationCampaignConfig", base=config_from(FigureOptions, "ViolationFigureConfig"),
    folder=(str, Field(default=str(DATA_DIR / "violations"), description="ground_truth.jsonl + <checker_version>.jsonl")),
)


def _fitted_weights(folder: Path, embed, match_cfg: MatchConfig) -> dict:
    """The weights fitted to the team's human match labels (``match_labels.jsonl``) with the held-out agreement beside the
    fixed defaults', or why there is no fit."""
    path = folder / LABELS_FILE
    if not path.is_file():
        return {"why": f"no {LABELS_FILE} in {folder}: the weights are the deck's fixed defaults, not fitted to human judgements"}
    labels, problems = read_match_labels(path)
    return {**fit_match_weights(labels, embed, config=match_cfg), "label_problems": problems[:20]}


@dg.multi_asset(
    outs={
        "violation_campaign": dg.AssetOut(description="Per checker version: the match score (the deck's headline figure), TP/FP/FN, "
                                          "precision, recall, F1, std and human-aligned (ha_), with bootstrap CIs over texts."),
        "violation_matches": dg.AssetOut(description="Every (predicted, ground-truth) pair of a text: IoU, rule/category/explanation/correction similarity, scores, match decisions."),
        "violation_file_errors": dg.AssetOut(description="Bad lines / violations of the violation files: file, line, reason."),
    },
    group_name="metrics",
)
def violation_campaign(context: dg.AssetExecutionContext, config: ViolationCampaignConfig, embedding_model: EmbeddingModel,
                       multilingual_encoder: MultilingualEncoder):
    folder = Path(config.folder)
    if not (folder / "ground_truth.jsonl").is_file():
        raise dg.Failure(f"violation_campaign: no ground_truth.jsonl in {folder} (see data/violations/README.md for the format)")
    match_cfg = to_core(MatchConfig, config)
    rule_embed = multilingual_encoder.encode if match_cfg.rule_similarity == "use_m3" else None
    fitted = _fitted_weights(folder, embedding_model.embed, match_cfg)
    used = dataclasses.replace(match_cfg, **fitted.get("overrides", {}))  # the fitted rules that beat the defaults held out
    try:
        summary, pairs, errors = evaluate_campaign(folder, embedding_model.embed, used, rule_embed, to_core(FigureOptions, config))
    except ValueError as e:
        raise dg.Failure(f"violation_campaign: {e}") from e
    for row in summary:
        row["weights"] = weights_note(fitted)
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
            "split": summary_df["split"][0] if summary_df.height else "",
            "summary": preview(summary_df.select("checker", "samples", "match_score", "match_score_ci_low", "match_score_ci_high",
                                                 "f1", "f1_ci_low", "f1_ci_high", "ha_match_score", "ha_f1", "tp", "fp", "fn"), 50),
            "rule_similarity": match_cfg.rule_similarity,
            "file_errors": len(errors),
            "errors": preview(errors_df, 20),
            "config": dg.MetadataValue.json(dict(config)),
            "fitted_to_human_labels": dg.MetadataValue.json(fitted),
            "weights_used": weights_note(fitted),
        },
    )
    yield dg.Output(pairs_df, output_name="violation_matches", metadata={"dagster/row_count": pairs_df.height, "matches": int(pairs_df["std_match"].sum()) if pairs_df.height else 0})
    yield dg.Output(errors_df, output_name="violation_file_errors", metadata={"dagster/row_count": errors_df.height, "preview": preview(errors_df, 20)})
