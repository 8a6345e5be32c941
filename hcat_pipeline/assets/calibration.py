"""Lineage stage: calibrators and metric validity (HCAT §5: Stage 1 probability calibration + Stage 2
split conformal; golden-eval §5.5 judge / metric validation). Core: ``hcat_pipeline.calibration``.

* ``reference_label_scores``: the shipped public human-labelled sets (``hcat_pipeline/reference_labels``)
  scored with the project's own metrics (``score_frame``, the engine of ``metric_tables``).
* ``calibrators``: one per dimension × label source (``campaign`` from ``human_labels``, and
  ``reference:<set>``): Stage 1 model + Stage 2 q̂, evaluated on the held-out evaluation split; too
  few labels → the plain count of labels still needed. The ``active`` row of a dimension is the one
  ``calibrated_scores`` uses: campaign labels once fitted, else the reference set.
* ``metric_validity``: every metric × labelled set: AUROC, κ of the thresholded verdict, coverage and
  set size (held-out split), each with n and a 95 % interval.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import json
from pathlib import Path
from typing import Literal

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.assets._score_cache import score_cache
from hcat_pipeline.automation import ON_ANY_RUN_UPDATE
from hcat_pipeline.calibration.campaign import DIMENSION_METRICS, campaign_label_scores, long_scores
from hcat_pipeline.calibration.fitting import DEFAULT_ALPHA, CalibrationResult, fit_calibration, load_results
from hcat_pipeline.calibration.plots import figure4_png, reliability_png
from hcat_pipeline.calibration.reference import REFERENCE_SETS, load_reference, reference_manifest
from hcat_pipeline.common.images import png_markdown
from hcat_pipeline.judge.scoring import CHAPTER_14_4
from hcat_pipeline.metrics.registry import MetricUnavailable
from hcat_pipeline.metrics.scoring import score_frame
from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.schemas import CALIBRATORS as CALIBRATORS_SCHEMA
from hcat_pipeline.schemas import METRIC_VALIDITY as VALIDITY_SCHEMA


class ReferenceScoresConfig(dg.Config):
    sets: list[str] = Field(default_factory=lambda: sorted(REFERENCE_SETS), description="shipped reference sets to score")
    metrics_by_set: dict[str, list[str]] = Field(
        default_factory=lambda: {n: list(s.metrics) for n, s in REFERENCE_SETS.items()},
        description="the project's metrics that score each set (first = the dimension's metric in calibrators)",
    )


@dg.asset(
    group_name="calibration",
    description="The shipped public human-labelled reference sets (FaithDial audit → groundedness, ToxiGen demonstrations → "
    "toxicity) scored with the project's own metrics; label_source = reference:<set>.",
)
def reference_label_scores(
    context: dg.AssetExecutionContext, config: ReferenceScoresConfig, embedding_model: EmbeddingModel, nli_model: NLIModel,
    multilingual_encoder: MultilingualEncoder,
) -> pl.DataFrame:
    frames, info_all = [], {}
    cache = score_cache(embedding_model, nli_model, multilingual_encoder)  # the same labels every night: scored once
    for name in config.sets:
        ref = load_reference(name)
        metrics = config.metrics_by_set.get(name) or list(REFERENCE_SETS[name].metrics)
        try:
            scored, info = score_frame(ref.select("query", "contexts", "answer"), metrics, embed=embedding_model.embed,
                                         embed_layers=embedding_model.layer_features, nli=nli_model,
                                         multilingual=multilingual_encoder, device=embedding_model.device, cache=cache)
        except MetricUnavailable as e:
            raise dg.Failure(f"reference_label_scores: {name}: {e}") from e
        info_all[name] = {"metrics": metrics, "rows_scored": info["rows_scored"], "seconds": info["seconds"],
                          "score_cache": info.get("cache", "off")}
        long = pl.concat(
            [ref.select("set", "item_id", "dimension", "label", "split", pl.lit(m).alias("metric"), scored[m].cast(pl.Float64).alias("score"))
             for m in metrics]
        )  # fmt: skip
        frames.append(long.with_columns(pl.lit(REFERENCE_SETS[name].label_source).alias("label_source")))
    out = pl.concat(frames) if frames else pl.DataFrame(schema={  # no reference set configured: campaign labels only
        "set": pl.String, "item_id": pl.String, "dimension": pl.String, "label": pl.Int64, "split": pl.String, "metric": pl.String,
        "score": pl.Float64, "label_source": pl.String})  # fmt: skip
    manifest = reference_manifest()
    context.add_output_metadata({
        "dagster/row_count": out.height,
        "scoring": dg.MetadataValue.json(info_all),
        "sets": dg.MetadataValue.json({n: {k: manifest.get("sets", {}).get(n, {}).get(k) for k in ("n_items", "labels", "licence", "source", "exclusion")}
                                       for n in config.sets}),
        "unscored": int(out["score"].is_null().sum()) if out.height else 0,
    })  # fmt: skip
    return out


class CalibratorsConfig(dg.Config):
    method: Literal["platt", "isotonic", "ordinal"] = "platt"
    alpha: float = DEFAULT_ALPHA
    seed: int = 0
    dimension_metrics: dict[str, str] = Field(default_factory=lambda: dict(DIMENSION_METRICS))
    min_per_class_stage1: int = 10
    warehouse_dir: str = ""  # empty: HCAT_WAREHOUSE_DIR; stored metric_tables / behaviour_checks runs are read from here
    plots_dir: str = ""  # empty: <warehouse>/calibrators/ (PNG copies of the plots in metadata)


def stored_runs(warehouse: Path, dimension_metrics: dict) -> pl.DataFrame:
    """Every stored campaign run's scores, long (``long_scores``): metric_tables + behaviour_checks."""
    parts = []
    for path in sorted((warehouse / "metric_tables").glob("*/*.parquet")):
        mt = pl.read_parquet(path)
        night = path.stem
        bpath = warehouse / "behaviour_checks" / path.parent.name / path.name
        bc = pl.read_parquet(bpath) if bpath.is_file() else None
        parts.append(long_scores(mt, bc, dimension_metrics).with_columns(pl.lit(night).alias("night")))
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame(
        schema={"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "metric": pl.String, "raw_score": pl.Float64,
                "night": pl.String})  # fmt: skip


def _png_md(png: bytes, title: str) -> str:
    return f"**{title}**\n\n{png_markdown(png, title)}"


def calibrator_row(res: CalibrationResult, active: bool) -> dict:
    """One row of the ``calibrators`` table: a fitted calibration, serialised, with its summary fields."""
    q = res.conformal.summary()["qhat"] if res.conformal is not None else None
    return {
        "dimension": res.dimension, "label_source": res.label_source, "metric": res.metric, "method": res.method, "alpha": res.alpha,
        "status": res.status, "active": active, "n_labels": sum(res.counts.values()), "qhat": q, "message": res.message,
        "label_counts": json.dumps(res.counts), "splits": json.dumps(res.splits, default=str),
        "evaluation": json.dumps(res.evaluation, default=str), "model": res.to_bytes(),
    }  # fmt: skip


def fit_all(config, human_labels: pl.DataFrame, reference_label_scores: pl.DataFrame, runs: pl.DataFrame) -> list[CalibrationResult]:
    """Campaign calibrations (every labelled dimension) and reference calibrations (each set's dimension metric)."""
    out = []
    camp = campaign_label_scores(human_labels, runs, config.dimension_metrics)
    camp = camp.filter(~pl.col("dimension").is_in(CHAPTER_14_4))  # the judge's rubric items: no metric scores them (judge_validation reads them)
    for (dim,), g in camp.group_by("dimension", maintain_order=True):
        metric = config.dimension_metrics.get(dim, "behaviour_score" if dim.startswith("behaviour_") else dim)
        out.append(fit_calibration(
            [f"{c}|{s}" for c, s in zip(g["case_id"], g["system_id"])], g["score"].to_list(), g["label_index"].to_list(),
            dimension=dim, label_source="campaign", metric=metric, n_levels=int(g["n_levels"][0]),
            method=config.method, alpha=config.alpha,
            seed=config.seed, min_per_class_stage1=config.min_per_class_stage1,
        ))  # fmt: skip
    for (src, dim), g in reference_label_scores.group_by("label_source", "dimension", maintain_order=True):
        metric = config.dimension_metrics.get(dim)
        g = g.filter(pl.col("metric") == metric)
        if g.height == 0:
            continue
        out.append(fit_calibration(
            g["item_id"].to_list(), g["score"].to_list(), g["label"].to_list(), dimension=dim, label_source=src, metric=metric,
            method=config.method, alpha=config.alpha, seed=config.seed,
            fixed_splits=g["split"].to_list(), min_per_class_stage1=config.min_per_class_stage1,
        ))  # fmt: skip
    return out


def choose_active(results: list[CalibrationResult]) -> dict[tuple[str, str], bool]:
    """Per dimension: the campaign calibration once fitted, else the first fitted reference one."""
    active = {}
    for dim in sorted({r.dimension for r in results}):
        fitted = [r for r in results if r.dimension == dim and r.status == "fitted"]
        pick = next((r for r in fitted if r.label_source == "campaign"), fitted[0] if fitted else None)
        for r in results:
            if r.dimension == dim:
                active[(dim, r.label_source)] = r is pick
    return active


@dg.asset(automation_condition=ON_ANY_RUN_UPDATE, 
    group_name="calibration",
    deps=[dg.AssetKey("metric_tables"), dg.AssetKey("behaviour_checks")],
    description="Per dimension × label source: Stage 1 calibrator + Stage 2 conformal q̂, with reliability diagram, Figure 4, "
    "ECE / Brier before and after, coverage and set sizes on the held-out evaluation split; too few labels said plainly.",
)
def calibrators(
    context: dg.AssetExecutionContext, config: CalibratorsConfig, human_labels: pl.DataFrame, reference_label_scores: pl.DataFrame
) -> pl.DataFrame:
    warehouse = Path(config.warehouse_dir) if config.warehouse_dir else WAREHOUSE_DIR
    runs = stored_runs(warehouse, config.dimension_metrics)
    results = fit_all(config, human_labels, reference_label_scores, runs)
    active = choose_active(results)
    table = pl.DataFrame([calibrator_row(r, active[(r.dimension, r.label_source)]) for r in results], schema=CALIBRATORS_SCHEMA)
    plots_dir = Path(config.plots_dir) if config.plots_dir else warehouse / "calibrators"
    meta: dict = {}
    for r in results:
        key = f"{r.dimension}__{r.label_source.replace(':', '_')}"
        if r.status != "fitted":
            meta[f"{key}/needs_labels"] = dg.MetadataValue.md(r.message)
            continue
        ev = r.evaluation
        meta[f"{key}/summary"] = dg.MetadataValue.json({
            "active": active[(r.dimension, r.label_source)], "metric": r.metric, "method": r.method, "label_counts": r.counts,
            "qhat": r.conformal.summary(), "heldout_n": ev.get("n"), "auroc_raw": ev.get("auroc_raw"),
            "ece_before": ev.get("ece_before"), "ece_after": ev.get("ece_after"), "brier_before": ev.get("brier_before"),
            "brier_after": ev.get("brier_after"), "coverage": ev.get("coverage"), "set_sizes": ev.get("set_sizes"),
            "sets": ev.get("sets"), "errors": ev.get("errors"),
        })  # fmt: skip
        if r.eval_scores is not None and r.n_levels == 2:
            rel, fig4 = reliability_png(r), figure4_png(r)
            plots_dir.mkdir(parents=True, exist_ok=True)
            (plots_dir / f"{key}__reliability.png").write_bytes(rel)
            (plots_dir / f"{key}__figure4.png").write_bytes(fig4)
            meta[f"{key}/reliability_diagram"] = dg.MetadataValue.md(_png_md(rel, f"Reliability diagram: {r.dimension} ({r.label_source})"))
            meta[f"{key}/figure4"] = dg.MetadataValue.md(_png_md(fig4, f"Figure 4: {r.dimension} ({r.label_source})"))
            meta[f"{key}/plot_files"] = dg.MetadataValue.json([str(plots_dir / f"{key}__reliability.png"), str(plots_dir / f"{key}__figure4.png")])
    context.add_output_metadata({
        "dagster/row_count": table.height,
        "calibrators": preview(table.select("dimension", "label_source", "metric", "status", "active", "n_labels", "qhat", "message"), 50, 200),
        "active": dg.MetadataValue.json({d: s for (d, s), a in active.items() if a}),
        "campaign_labelled_items_without_score": int(campaign_label_scores(human_labels, runs, config.dimension_metrics)["score"].is_null().sum()),
        "stored_runs_read": runs["night"].n_unique() if runs.height else 0,
        **meta,
    })  # fmt: skip
    return table


class MetricValidityConfig(dg.Config):
    alpha: float = DEFAULT_ALPHA
    seed: int = 0


@dg.asset(automation_condition=ON_ANY_RUN_UPDATE, 
    group_name="calibration",
    description="Per metric × labelled set (campaign labels and the shipped reference sets): AUROC, κ of the thresholded "
    "calibrated verdict, coverage and mean set size on the held-out split, each with n and a 95 % interval.",
)
def metric_validity(
    context: dg.AssetExecutionContext, config: MetricValidityConfig, reference_label_scores: pl.DataFrame, calibrators: pl.DataFrame
) -> pl.DataFrame:
    rows = []
    for (src, dim, metric), g in reference_label_scores.group_by("label_source", "dimension", "metric", maintain_order=True):
        rows.append(fit_calibration(g["item_id"].to_list(), g["score"].to_list(), g["label"].to_list(), dimension=dim, label_source=src,
                                    metric=metric, alpha=config.alpha, seed=config.seed, fixed_splits=g["split"].to_list()))  # fmt: skip
    rows += [r for r in load_results(calibrators) if r.label_source == "campaign"]
    table = pl.DataFrame([_validity_row(r) for r in rows], schema=VALIDITY_SCHEMA)
    context.add_output_metadata({"dagster/row_count": table.height, "validity": preview(table, 50, 60)})
    return table




def _validity_row(r: CalibrationResult) -> dict:
    ev, a, c = r.evaluation, r.evaluation.get("auroc_raw") or {}, r.evaluation.get("coverage") or {}
    return {
        "metric": r.metric, "dimension": r.dimension, "labelled_set": r.label_source, "status": r.status, "heldout_n": ev.get("n", 0),
        "auroc": a.get("auroc"), "auroc_ci_low": a.get("ci_low"), "auroc_ci_high": a.get("ci_high"), "kappa_thresholded": ev.get("kappa_argmax"),
        "coverage": c.get("rate"), "coverage_ci_low": c.get("ci_low"), "coverage_ci_high": c.get("ci_high"),
        "target_coverage": 1 - r.alpha, "mean_set_size": ev.get("mean_set_size"), "brier_before": ev.get("brier_before"),
        "brier_after": ev.get("brier_after"), "note": r.message,
    }  # fmt: skip
