"""Lineage stage: human labels (HCAT §5; golden-eval §5.3) — the label store and the review queue.

* ``human_labels``: imports every label file in ``data/labels/`` (CSV / JSONL / Parquet, format in
  ``hcat_pipeline.calibration.labels``) into the append-only, versioned store
  ``data/labels/_store/`` (``calibration.LabelStore``). A bad file is reported with file, line and
  reason and imports nothing; the rest go on. The same file twice changes nothing. Metadata: each
  file's outcome, the errors, label counts and inter-rater κ per dimension.
* ``review_queue`` (per campaign run): which case × system × dimension humans should label next — a seeded draw with
  known inclusion probabilities (``calibration.campaign.design_queue``), frozen at its first draw in
  ``data/labels/_designs/<version>/<night>.parquet`` so a re-run after labelling keeps the probabilities the labels were
  drawn with — exported to ``data/labels/review_queue.csv`` in the design's order with
  the query, contexts, answer, the metric's explanation and blank ``label`` / ``rater`` /
  ``labelled_at`` columns. A filled-in copy dropped into ``data/labels/`` is imported as it is;
  the blank export itself imports nothing (status ``pending``).

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Optional

import dagster as dg
import polars as pl

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.calibration import LabelStore, agreement
from hcat_pipeline.calibration.campaign import (
    EXPLANATION_COLUMNS,
    LABEL_MEANINGS,
    bias_cohort_flags,
    design_queue,
    explanation_text,
    extend_design,
    judge_review_flags,
    queue_columns,
)
from hcat_pipeline.calibration.design import DESIGN_COLUMNS, DesignConfig, design_file, drawn_seconds, night_start
from hcat_pipeline.calibration.labels import ERROR_SCHEMA, SUFFIXES, read_label_file
from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.partitions import campaign_run, split_run_key
from hcat_pipeline.paths import LABELS_DIR

STORE_SUBDIR = "_store"
QUEUE_FILE = "review_queue.csv"


def label_files(labels_dir: Path) -> list[Path]:
    """The label files of a folder (top level only; the store and hidden files are not label files)."""
    if not labels_dir.is_dir():
        return []
    return sorted(p for p in labels_dir.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES and not p.name.startswith("."))


class HumanLabelsConfig(dg.Config):
    labels_dir: str = ""  # empty: HCAT_LABELS_DIR or data/labels
    store_dir: str = ""  # empty: <labels_dir>/_store


def _dirs(config) -> tuple[Path, Path]:
    labels_dir = Path(config.labels_dir) if config.labels_dir else LABELS_DIR
    return labels_dir, Path(config.store_dir) if getattr(config, "store_dir", "") else labels_dir / STORE_SUBDIR


@dg.asset(
    group_name="calibration",
    description="Append-only, versioned store of human labels imported from data/labels/ (CSV / JSONL / Parquet): bad files "
    "reported with file / line / reason and not imported, the same file twice changes nothing; κ per dimension.",
)
def human_labels(context: dg.AssetExecutionContext, config: HumanLabelsConfig) -> pl.DataFrame:
    labels_dir, store_dir = _dirs(config)
    store = LabelStore(store_dir)
    results = [store.import_file(p) for p in label_files(labels_dir)]
    outcomes = pl.DataFrame(
        [{"file": r.file, "status": r.status, "version": r.version, "rows_added": r.rows_added, "rows_already_stored": r.rows_skipped,
          "rows_not_labelled_yet": r.rows_pending, "bad_rows": r.errors.height, "message": r.message} for r in results],
        schema={"file": pl.String, "status": pl.String, "version": pl.String, "rows_added": pl.Int64, "rows_already_stored": pl.Int64,
                "rows_not_labelled_yet": pl.Int64, "bad_rows": pl.Int64, "message": pl.String},
    )  # fmt: skip
    errors = pl.concat([r.errors for r in results], how="vertical") if results else pl.DataFrame(schema=ERROR_SCHEMA)
    for r in results:
        if r.status == "rejected":
            context.log.warning(r.message + ": " + "; ".join(f"line {e['line']}: {e['reason']}" for e in r.errors.head(5).iter_rows(named=True)))
    labels = store.labels()
    counts = (
        labels.group_by("dimension", "label").agg(pl.len().alias("n"), pl.col("rater").n_unique().alias("raters")).sort("dimension", "label")
        if labels.height else pl.DataFrame()
    )  # fmt: skip
    kappa = agreement(labels) if labels.height else pl.DataFrame()
    context.add_output_metadata({
        "dagster/row_count": labels.height,
        "labels_dir": str(labels_dir),
        "store_dir": str(store_dir),
        "store_versions": store.versions().height,
        "files": preview(outcomes, 100, 120),
        "files_rejected": int((outcomes["status"] == "rejected").sum()) if outcomes.height else 0,
        "rows_added": int(outcomes["rows_added"].sum()) if outcomes.height else 0,
        "errors": preview(errors, 50, 160),
        "label_counts": preview(counts, 100) if counts.height else dg.MetadataValue.md("no labels yet"),
        "kappa_by_dimension": preview(kappa, 100, 120) if kappa.height else dg.MetadataValue.md("no labels yet"),
        "label_source": "campaign (humans only: this store never holds machine or LLM verdicts)",
    })  # fmt: skip
    return labels


ReviewQueueConfig = config_from(DesignConfig, "ReviewQueueConfig",
                                labels_dir=(str, ""),  # empty: HCAT_LABELS_DIR or data/labels
                                export=(bool, True))  # write <labels_dir>/review_queue.csv


def _frozen_design(cand: pl.DataFrame, path: Path, cfg: DesignConfig, salt: str, night: str) -> tuple[pl.DataFrame, int]:
    """The night's design: read back when frozen (answers it lacks are added with ``extend_design`` and frozen too), else
    drawn now and frozen (``calibration.design.design_file``); and how many answers were added to a frozen design. Its
    ``drawn_at`` is the start of the night's date (a label dated that day or later is of this night's answers)."""
    now = night_start(night) or datetime.now(UTC).isoformat(timespec="seconds")
    key = ["case_id", "system_id", "dimension"]
    added = 0
    if path.is_file():
        frozen = pl.read_parquet(path)
        new = cand.join(frozen.select(key), on=key, how="anti")
        if new.height:
            extra = extend_design(frozen, new, cfg, salt, now)
            frozen, added = pl.concat([frozen, extra.select(DESIGN_COLUMNS)], how="diagonal_relaxed"), extra.height
            _write(frozen, path)
        return queue_columns(cand.join(frozen, on=key, how="inner")), added
    drawn = design_queue(cand, cfg, salt, now)
    _write(drawn.select(DESIGN_COLUMNS), path)
    return drawn, added


def _explanation(row: dict) -> str:
    return explanation_text(row, EXPLANATION_COLUMNS.get(row.get("metric") or "", ()))


def _write(frame: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    frame.write_parquet(tmp)
    os.replace(tmp, path)


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="calibration",
    ins={"llm_judge_scores": dg.AssetIn(metadata={"optional": True}), "judge_ensemble": dg.AssetIn(metadata={"optional": True}),
         "judge_validation": dg.AssetIn(metadata={"optional": True})},  # its bias audits raise π of the cohorts they touch
    description="Per campaign run: the case × system × dimension items humans should label next — a seeded draw with known "
    "inclusion probabilities (calibration.design: items the LLM judge is unsure of or disagrees with the metric on, "
    "or the ensemble's judges disagree on "
    "(golden-eval §5.5) and unsure conformal sets ∅ / {0,1} more likely, none certain), frozen at its first draw, exported "
    "to data/labels/review_queue.csv in the design's order.",
)
def review_queue(
    context: dg.AssetExecutionContext,
    config: ReviewQueueConfig,
    calibrated_scores: pl.DataFrame,
    metric_tables: pl.DataFrame,
    rag_responses: pl.DataFrame,
    golden_set: pl.DataFrame,
    human_labels: pl.DataFrame,
    llm_judge_scores: Optional[pl.DataFrame],
    judge_ensemble: Optional[pl.DataFrame],
    judge_validation: Optional[pl.DataFrame],
) -> pl.DataFrame:
    version, night = split_run_key(context)
    labelled = (human_labels.group_by("case_id", "system_id", "dimension").agg((pl.col("labelled_at").max().dt.epoch("ms") / 1000.0).alias("at"))
                if human_labels.height else None)  # fmt: skip
    scales = dict(human_labels.select("dimension", "scale").unique("dimension").iter_rows()) if human_labels.height else {}
    cases = golden_set.select("case_id", *[c for c in ("stratum", "stratum_label", "query_type") if c in golden_set.columns]).unique("case_id")
    cand = drop_canaries(calibrated_scores).filter(pl.col("raw_score").is_not_null())
    bias = bias_cohort_flags(llm_judge_scores, judge_validation, rag_responses.select("case_id", "system_id", "answer"))  # §5.6 audits
    flags = judge_review_flags(llm_judge_scores, calibrated_scores, judge_ensemble, bias)  # + the ensemble's disagreements (§5.5)
    cand = cand.join(cases, on="case_id", how="left").join(flags, on=["case_id", "system_id", "dimension"], how="left")
    labels_dir = Path(config.labels_dir) if config.labels_dir else LABELS_DIR
    drawn, added = _frozen_design(cand, design_file(labels_dir, version, night), to_core(DesignConfig, config), f"{version}|{night}", night)
    picked = drawn.filter(pl.col("queued")).sort("design_order")
    if labelled is not None:  # labelled since the design was drawn: answered, nobody is asked again (an older label is of
        # an earlier night's answer: asked again)
        since = labelled.join(drawn.select("case_id", "system_id", "dimension", "drawn_at"), on=["case_id", "system_id", "dimension"])
        since = since.filter(pl.col("at") >= pl.col("drawn_at").map_elements(drawn_seconds, return_dtype=pl.Float64))
        picked = picked.join(since.select("case_id", "system_id", "dimension"), on=["case_id", "system_id", "dimension"], how="anti")
    expl_cols = sorted({c for cols in EXPLANATION_COLUMNS.values() for c in cols} & set(metric_tables.columns))
    picked = picked.join(metric_tables.select("case_id", "system_id", *expl_cols), on=["case_id", "system_id"], how="left")
    picked = picked.join(rag_responses.select("case_id", "system_id", "query", "answer", "contexts"), on=["case_id", "system_id"], how="left")
    queue = pl.DataFrame({
        "case_id": picked["case_id"], "system_id": picked["system_id"], "dimension": picked["dimension"],
        "scale": [scales.get(d, "binary") for d in picked["dimension"]], "label": [None] * picked.height, "rater": [None] * picked.height,
        "labelled_at": [None] * picked.height, "comment": [None] * picked.height,
        "review_queue": [f"{version}|{night}"] * picked.height,
        "label_meaning": [LABEL_MEANINGS.get(d, "1 = the behaviour check really passed, 0 = it did not" if d.startswith("behaviour_")
                                             else "see the rubric of this dimension") for d in picked["dimension"]], "priority": picked["priority"], "reason": picked["reason"],
        "golden_set_version": [version] * picked.height, "night": [night] * picked.height,
        "design": picked["design"], "inclusion_probability": picked["inclusion_probability"], "design_order": picked["design_order"],
        "design_seed": picked["design_seed"],
        "stratum": picked["stratum"].cast(pl.String) if "stratum" in picked.columns else [None] * picked.height,
        "query_type": picked["query_type"] if "query_type" in picked.columns else [None] * picked.height,
        "metric": picked["metric"], "raw_score": picked["raw_score"], "calibrated_probability": picked["calibrated_probability"],
        "prediction_set": picked["prediction_set"], "machine_verdict": picked["machine_verdict"], "label_source": picked["label_source"],
        "query": picked["query"], "contexts": [("\n---\n".join(c) if c else "") for c in picked["contexts"].to_list()],
        "answer": picked["answer"], "explanation": [_explanation(r) for r in picked.iter_rows(named=True)],
    }, schema_overrides={c: pl.String for c in ("label", "rater", "labelled_at", "comment", "stratum", "query_type")})  # fmt: skip
    path = labels_dir / QUEUE_FILE
    if config.export and path.is_file() and read_label_file(path)[0].height:
        # someone filled in the export in place: never overwrite their labels, write tonight's queue next to it
        context.log.warning(f"{path} holds filled-in labels: not overwritten")
        path = path.with_name(f"review_queue_{version}_{night}.csv")
    if config.export:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        queue.write_csv(tmp)
        os.replace(tmp, path)
    context.add_output_metadata({
        "dagster/row_count": queue.height,
        "exported_to": str(path) if config.export else "not exported",
        "candidates": cand.height,
        "design": dg.MetadataValue.json({"name": drawn["design"][0] if drawn.height else None,
                                         "seed": int(drawn["design_seed"][0]) if drawn.height else config.seed,
                                         "drawn_at": drawn["drawn_at"][0] if drawn.height else None,
                                         "queued": int(drawn["queued"].sum()) if drawn.height else 0,
                                         "added_to_frozen_design": added, "expected_labels_per_dimension": config.budget}),
        "judge_flagged": flags.height,
        "already_labelled_left_out": 0 if labelled is None else labelled.height,
        "raised_by_judge_or_unsure_set": int(queue["reason"].str.contains("raised:").sum()),
        "by_dimension": dg.MetadataValue.json({r: int(c) for r, c in queue.group_by("dimension").len().sort("dimension").iter_rows()}),
        "by_system": dg.MetadataValue.json({r: int(c) for r, c in queue.group_by("system_id").len().sort("system_id").iter_rows()}),
        "how_to_label": dg.MetadataValue.md(
            f"Copy `{path.name}` to another name in `{path.parent}`, fill `label` (0/1), `rater` and `labelled_at` "
            "(e.g. 2025-06-01) for the rows you judged, leave the others blank; the label_file_sensor imports it."),
        "preview": preview(queue.select("priority", "system_id", "case_id", "dimension", "prediction_set", "reason", "query"), 20),
    })  # fmt: skip
    return queue
