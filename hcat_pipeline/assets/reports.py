"""Lineage stage: weakness reports and the campaign report (HCAT §6.2; golden-eval §3.4, §9.3), per campaign run.

* ``weakness_report`` (+ ``weakest_cases``, ``robustness_deltas``, ``failure_cases``): every metric —
  raw (metric_tables), behaviour score / pass (behaviour_checks), per-case retrieval (rag_responses vs
  the cases' source chunks) and calibrated (``calibrated_scores`` of this run, when stored) — broken
  down by topic, query type, category, variant kind, behaviour rule (risk category) and system, and
  by the bivariate pairs; each cell with n, mean, bootstrap CI and claim strength, small cells marked.
  Core: ``reports.weakness``, ``reports.robustness``, ``reports.failures``, ``reports.weakness_plots``.
* ``campaign_report``: one self-contained HTML page, ``data/reports/<version>/<night>/report.html``
  (Jinja2 template ``hcat_pipeline/templates/campaign_report.html.j2``): gate verdicts first, headline
  metrics with CIs, rankings, Pareto table, weaknesses with heatmaps and violins, robustness deltas,
  failure cases, metric validity, provenance. Core: ``reports.sections``, ``reports.campaign_report``.

Every table comes through the lineage as a Dagster input — gate verdicts, rankings, Pareto frontier,
calibrated scores, judge scores, metric validity, the exam report — so the asset graph shows what a
report is made of, and a report is never built from another run's leftovers. Inputs that may be absent
(``metric_validity`` and ``exam_report`` are not per run and may never have been materialized; the
rankings, Pareto frontier, judge and calibrated scores when the run was a partial job) are declared
optional (``OPTIONAL``): None, and the
report says which is missing and why. The release gates' blocking check sits on ``release_decision``,
not on ``gate_verdicts``, so a blocked release never suppresses the report a reviewer must read.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import json
from pathlib import Path
from typing import Optional

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.common.images import png_data_uri
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.gates.contamination import contamination_note, flagged_cases
from hcat_pipeline.gates.drift import scoring_models
from hcat_pipeline.gates.flags import detector_precision, precision_text, read_flag_reviews
from hcat_pipeline.golden.cases import MANIFEST_NAME, table_sha256
from hcat_pipeline.io import OPTIONAL
from hcat_pipeline.partitions import campaign_run, split_run_key
from hcat_pipeline.paths import DATA_DIR, GOLDEN_SETS_DIR, LABELS_DIR, REPORTS_DIR, WAREHOUSE_DIR
from hcat_pipeline.release.night import plan_lines, release_dir
from hcat_pipeline.reports.campaign_report import RECORD_FILE, render_report, review_link, write_record
from hcat_pipeline.reports.failures import failure_cases as failure_table
from hcat_pipeline.reports.history import render_history
from hcat_pipeline.reports.paraphrase import paraphrase_summary, paraphrase_variance
from hcat_pipeline.reports.postmortem import Night, postmortem, render_markdown
from hcat_pipeline.reports.robustness import robustness_deltas as deltas_table
from hcat_pipeline.reports.sections import (
    DEFAULT_PLOT_METRICS,
    OptionalTable,
    build_report,
    level_mismatch,
    plots_for,
    provenance,
)
from hcat_pipeline.reports.signoffs import night_signoffs, signoff_block
from hcat_pipeline.reports.validity import live_shares
from hcat_pipeline.reports.weakness import (
    DEFAULT_PAIRS,
    WeaknessConfig,
    case_scores,
    ranked_weakest,
    weakest_cells,
    weakness_cells,
    with_weak_ranks,
    worst_cases,
)
from hcat_pipeline.schemas import BEHAVIOUR_CHECKS

# The Dagster config *is* the core's WeaknessConfig (one field list, one set of defaults) + the plotted metrics.
WeaknessReportConfig = config_from(
    WeaknessConfig, "WeaknessReportConfig",
    plot_metrics=(list[str], Field(default_factory=lambda: list(DEFAULT_PLOT_METRICS), description="metrics plotted (those with values)")),
)


class CampaignReportConfig(dg.Config):
    reports_dir: str = Field(default="", description="where report.html is written (<dir>/<version>/<night>/); empty: data/reports")
    golden_sets_dir: str = Field(default="", description="where the frozen version's manifest is read; empty: data/golden_sets")
    warehouse_dir: str = Field(default="", description="where the earlier nights a postmortem compares with are read; empty: data/warehouse")
    labels_dir: str = Field(default="", description="where people's reviews of flagged answers are read (each detector's precision); "
                            "empty: HCAT_LABELS_DIR or data/labels")
    plot_metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_PLOT_METRICS))
    seed: int = Field(default=WeaknessConfig.seed, description="jitter of the violin points")


def _weakness_cfg(config) -> WeaknessConfig:
    return to_core(WeaknessConfig, config)


def _night_of(night: str, gates: pl.DataFrame, checks: pl.DataFrame, responses: pl.DataFrame, metrics: pl.DataFrame | None,
              golden_set: pl.DataFrame) -> Night:
    checks = checks.join(golden_set.select("case_id", "stratum_label"), on="case_id", how="left") if "stratum_label" in golden_set.columns else checks
    hashes = dict(responses.select("system_id", "config_hash").unique("system_id").iter_rows()) if "config_hash" in responses.columns else {}
    return Night(night, gates, checks, hashes, scoring_models(metrics))


def _write_postmortem(config, version: str, night: str, out_dir: Path, gate_verdicts: pl.DataFrame, behaviour_checks: pl.DataFrame,
                      rag_responses: pl.DataFrame, metric_tables: pl.DataFrame, golden_set: pl.DataFrame) -> Path | None:
    """postmortem.md beside the report when the night needs one (``reports.postmortem``), compared with the latest earlier
    night of the version stored in the warehouse; None otherwise."""
    wh = Path(config.warehouse_dir or WAREHOUSE_DIR)
    earlier = sorted(p.stem for p in (wh / "gate_verdicts" / version).glob("*.parquet") if p.stem < night)
    before = None
    if earlier:
        prev = earlier[-1]

        def read(table: str, cols: list[str] | None = None) -> pl.DataFrame:
            p = wh / table / version / f"{prev}.parquet"
            return drop_canaries(pl.read_parquet(p, columns=cols)) if p.exists() else pl.DataFrame()

        checks = read("behaviour_checks")
        before = _night_of(prev, read("gate_verdicts"), checks if checks.height else pl.DataFrame(schema=BEHAVIOUR_CHECKS),
                           read("rag_responses", ["system_id", "config_hash"]), read("metric_tables", ["system_id", "score_info"]), golden_set)  # fmt: skip
    pm = postmortem(_night_of(night, gate_verdicts, behaviour_checks, rag_responses, metric_tables, golden_set), before)
    if pm is None:
        return None
    out = out_dir / "postmortem.md"
    out.write_text(render_markdown(pm, version), encoding="utf-8")
    return out


def _judge_note(context: dg.AssetExecutionContext) -> str | None:
    """Why the LLM judge did not run, or ran on a tier only, this run (its materialization's metadata)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("llm_judge_scores"), asset_partitions=[str(context.partition_key)]), limit=1)
    if not records.records:
        return "did not run for this campaign run"
    meta = records.records[0].asset_materialization.metadata
    for key, say in (("skipped", "did not run — {}"), ("tier", "{}")):
        if key in meta:
            return say.format(meta[key].value)
    return None


def _live_shares(warehouse: Path, night: str) -> dict[str, float] | None:
    """Live traffic's topic shares over the monitoring days stored up to the night (the uncertainty table's selection
    bias; a later day does not change an earlier night's report), or None."""
    files = sorted(p for p in (warehouse / "production_cells").glob("*.parquet") if p.stem <= night)
    strata = warehouse / "topic_strata.parquet"
    if not files or not strata.is_file():
        return None
    labels = dict(pl.read_parquet(strata).select("stratum", "stratum_label").unique("stratum").iter_rows())
    return live_shares(pl.concat([pl.read_parquet(p) for p in files]), labels)


def _given(frame: pl.DataFrame | None, asset: str, why: str = "") -> OptionalTable:
    return OptionalTable(frame) if frame is not None else OptionalTable(None, why or f"{asset} is not materialized for this run")


@dg.multi_asset(
    partitions_def=campaign_run,
    group_name="reports",
    ins={"calibrated_scores": dg.AssetIn(metadata=OPTIONAL), "case_contamination": dg.AssetIn(metadata=OPTIONAL)},
    outs={
        "weakness_report": dg.AssetOut(automation_condition=ON_NEW_RUN_DATA, description="Per campaign run: every metric's marginal and bivariate cells (n, mean, 95% bootstrap CI, "
                                       "claim strength, small-cell flag) — HCAT §6.2."),
        "weakest_cases": dg.AssetOut(automation_condition=ON_NEW_RUN_DATA, description="The weakest cells per metric (by mean and by optimistic CI bound) and their worst cases "
                                     "with the explanation columns."),
        "robustness_deltas": dg.AssetOut(automation_condition=ON_NEW_RUN_DATA, description="Each variant kind vs its base cases, paired per system: delta, CI, statement."),
        "failure_cases": dg.AssetOut(automation_condition=ON_NEW_RUN_DATA, description="Every failing case × system: failure category, evidence, severity (golden-eval §3.4)."),
        "paraphrase_variance": dg.AssetOut(automation_condition=ON_NEW_RUN_DATA, description="Per system × paraphrase group × metric: the "
                                           "score's spread over the wordings of one intent; high-variance cases flagged (golden-eval §3.2.3)."),
    },  # fmt: skip
)
def weakness_report(
    context: dg.AssetExecutionContext,
    config: WeaknessReportConfig,
    rag_responses: pl.DataFrame,
    golden_set: pl.DataFrame,
    metric_tables: pl.DataFrame,
    behaviour_checks: pl.DataFrame,
    calibrated_scores: Optional[pl.DataFrame],
    case_contamination: Optional[pl.DataFrame],
):
    version, night = split_run_key(context)
    cfg = _weakness_cfg(config)
    contaminated = flagged_cases(case_contamination)  # golden-eval §3.5.4: out of the headline cells, shown apart
    rag_responses, metric_tables, behaviour_checks = (t.filter(~pl.col("case_id").is_in(contaminated))
                                                      for t in (rag_responses, metric_tables, behaviour_checks))
    rag_responses, metric_tables, behaviour_checks, calibrated_scores = (  # the user's systems only: canaries report apart
        drop_canaries(t) for t in (rag_responses, metric_tables, behaviour_checks, calibrated_scores))
    calibrated = _given(calibrated_scores, "calibrated_scores")
    try:
        scores = case_scores(golden_set, metric_tables, behaviour_checks, rag_responses, calibrated.frame)
    except ValueError as e:
        raise dg.Failure(f"weakness_report[{version}|{night}]: {e}") from e
    cells = weakness_cells(scores, cfg, pairs=DEFAULT_PAIRS)
    weakest = weakest_cells(cells, cfg)
    cells = with_weak_ranks(cells, weakest)
    worst = worst_cases(weakest, scores, metric_tables, behaviour_checks, rag_responses, cfg)
    deltas = deltas_table(scores, cfg)
    variance = paraphrase_variance(scores)
    failures = failure_table(golden_set, metric_tables, behaviour_checks)
    run_cols = [pl.lit(v).alias(k) for k, v in (("golden_set_version", version), ("night", night))]
    sha = metric_tables["campaign_sha256"][0] if "campaign_sha256" in metric_tables.columns and metric_tables.height else None
    run_cols.append(pl.lit(sha, dtype=pl.String).alias("campaign_sha256"))
    plots = plots_for(cells, scores, [m for m in config.plot_metrics if m in set(cells["metric"])][:2], DEFAULT_PAIRS, cfg.seed)
    images = {f"plot_{k}_{i}": dg.MetadataValue.md(f"![{p.title}]({png_data_uri(p.png)})") for k, ps in plots.items() for i, p in enumerate(ps)}
    yield dg.Output(cells.with_columns(run_cols), output_name="weakness_report", metadata={
        "dagster/row_count": cells.height,
        "campaign_run": str(context.partition_key),
        "metrics": dg.MetadataValue.json(sorted(cells["metric"].unique().to_list())),
        "calibrated_scores": "used" if calibrated.frame is not None else f"not available: {calibrated.why}",
        "small_cells": int(cells["small"].sum()),
        "cells_without_ci": int(cells["ci_low"].is_null().sum()),
        "weakest_by_bound": preview(weakest.filter((pl.col("ranking") == "ci_bound") & (pl.col("rank") == 1))
                                    .select("metric", "dims", "row", "col", "n", "mean", "ci_low", "ci_high", "claim_strength"), 40, 50),
        **images,
    })  # fmt: skip
    yield dg.Output(worst.with_columns(run_cols), output_name="weakest_cases", metadata={
        "dagster/row_count": worst.height, "preview": preview(worst.select("metric", "row", "col", "system_id", "case_id", "value", "explanation"), 20, 160)})  # fmt: skip
    yield dg.Output(deltas.with_columns(run_cols), output_name="robustness_deltas", metadata={
        "dagster/row_count": deltas.height, "statements": preview(deltas.filter(pl.col("ci_low").is_not_null()).sort("cost", descending=True)
                                                                  .select("statement", "claim_strength"), 30, 160)})  # fmt: skip
    yield dg.Output(failures.with_columns(run_cols), output_name="failure_cases", metadata={
        "dagster/row_count": failures.height,
        "by_severity": dg.MetadataValue.json({r["severity"]: r["len"] for r in failures.group_by("severity").len().sort("severity").iter_rows(named=True)}),
        "preview": preview(failures.select("severity", "failure_category", "system_id", "case_id", "evidence"), 30, 160)})  # fmt: skip
    yield dg.Output(variance.with_columns(run_cols), output_name="paraphrase_variance", metadata={
        "dagster/row_count": variance.height, "flagged": int(variance["flagged"].sum()),
        "summary": dg.MetadataValue.json(paraphrase_summary(variance)),
        "flagged_cases": preview(variance.filter(pl.col("flagged")).select("statement"), 30, 200)})  # fmt: skip


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="reports",
    ins={name: dg.AssetIn(metadata=OPTIONAL) for name in ("system_rankings", "pareto_frontier", "calibrated_scores", "llm_judge_scores",
                                                          "metric_validity", "exam_report", "exam_topics", "exam_chunking", "canary_detection", "calibrators",
                                                          "human_labels", "review_queue", "verdict_stochasticity", "case_contamination",
                                                          "judge_ensemble", "harm_judgements", "grader_gaming")},  # fmt: skip
    description="Per campaign run: the self-contained HTML campaign report (data/reports/<version>/<night>/report.html) — gate "
    "verdicts first, headline metrics with CIs, rankings, Pareto, weaknesses with plots, failures, metric validity, provenance.",
)
def campaign_report(
    context: dg.AssetExecutionContext,
    config: CampaignReportConfig,
    rag_responses: pl.DataFrame,
    golden_set: pl.DataFrame,
    metric_tables: pl.DataFrame,
    behaviour_checks: pl.DataFrame,
    retrieval_metrics: pl.DataFrame,
    weakness_report: pl.DataFrame,
    weakest_cases: pl.DataFrame,
    robustness_deltas: pl.DataFrame,
    failure_cases: pl.DataFrame,
    paraphrase_variance: pl.DataFrame,
    gate_verdicts: pl.DataFrame,
    system_rankings: Optional[pl.DataFrame],
    pareto_frontier: Optional[pl.DataFrame],
    calibrated_scores: Optional[pl.DataFrame],
    llm_judge_scores: Optional[pl.DataFrame],
    metric_validity: Optional[pl.DataFrame],
    exam_report: Optional[pl.DataFrame],
    exam_topics: Optional[pl.DataFrame],
    exam_chunking: Optional[pl.DataFrame],
    canary_detection: Optional[pl.DataFrame],
    calibrators: Optional[pl.DataFrame],
    human_labels: Optional[pl.DataFrame],
    review_queue: Optional[pl.DataFrame],
    verdict_stochasticity: Optional[pl.DataFrame],
    case_contamination: Optional[pl.DataFrame],
    judge_ensemble: Optional[pl.DataFrame],
    harm_judgements: Optional[pl.DataFrame],
    grader_gaming: Optional[pl.DataFrame],
) -> pl.DataFrame:
    version, night = split_run_key(context)
    rag_responses, metric_tables, behaviour_checks, retrieval_metrics, gate_verdicts, calibrated_scores, llm_judge_scores = (
        drop_canaries(t) for t in (rag_responses, metric_tables, behaviour_checks, retrieval_metrics, gate_verdicts,
                                   calibrated_scores, llm_judge_scores))  # canaries: their own section (canary_detection)
    optional = {
        "gate_verdicts": OptionalTable(gate_verdicts),
        "rankings": _given(system_rankings, "system_rankings"),
        "pareto": _given(pareto_frontier, "pareto_frontier"),
        "calibrated_scores": _given(calibrated_scores, "calibrated_scores"),
        "llm_judge_scores": _given(llm_judge_scores, "llm_judge_scores"),
        "metric_validity": _given(metric_validity, "metric_validity", "metric_validity is not materialized (labels_job)"),
        "exam_report": _given(exam_report, "exam_report", "exam_report is not materialized (exam_job)"),  # the latest exam, not per run
        "exam_topics": _given(exam_topics, "exam_topics", "exam_topics is not materialized (exam_job)"),
        "exam_chunking": _given(exam_chunking, "exam_chunking", "exam_chunking is not materialized (exam_job; the campaign file's exam_chunkings)"),
        "canary_detection": _given(canary_detection, "canary_detection"),
        "calibrators": _given(calibrators, "calibrators"),
        "human_labels": _given(human_labels, "human_labels"),
        "metric_tables": OptionalTable(metric_tables),  # the rubric sections (citations, formats, stated confidence)
        "behaviour_checks": OptionalTable(behaviour_checks),
        "golden_set": OptionalTable(golden_set),
        "rag_responses": OptionalTable(rag_responses),  # the test setting's systems (golden-eval §3.5.3)
        "paraphrase_variance": OptionalTable(paraphrase_variance),
        "verdict_stochasticity": _given(verdict_stochasticity, "verdict_stochasticity"),
        "judge_ensemble": _given(judge_ensemble, "judge_ensemble"),
        "harm_judgements": _given(harm_judgements, "harm_judgements"),
        "grader_gaming": _given(drop_canaries(grader_gaming) if grader_gaming is not None else None, "grader_gaming"),
    }
    manifest_path = Path(config.golden_sets_dir or GOLDEN_SETS_DIR) / version / MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    scores = case_scores(golden_set, metric_tables, behaviour_checks, rag_responses, optional["calibrated_scores"].frame)
    settings = {"weakness_report": "see its materialization", "plot_seed": config.seed}
    prov = provenance(golden_set, table_sha256(golden_set), manifest, rag_responses, metric_tables, settings)
    drop = ["golden_set_version", "night", "campaign_sha256"]
    kwargs = build_report(
        run={"version": version, "night": night, "n_rows": rag_responses.height, "judge_note": _judge_note(context),
             "review": review_link(review_queue, version, night), "suites_note": level_mismatch(manifest, gate_verdicts), "manifest": manifest,
             "live_shares": _live_shares(Path(config.warehouse_dir or WAREHOUSE_DIR), night),
             "contamination_note": contamination_note(flagged_cases(case_contamination)),
             "detector_precision": precision_text(detector_precision(read_flag_reviews(Path(config.labels_dir or LABELS_DIR)).values()))},
        cells=weakness_report.drop(drop, strict=False), weakest=ranked_weakest(weakness_report.drop(drop, strict=False)),
        worst=weakest_cases, deltas=robustness_deltas, failures=failure_cases, scores=scores, optional=optional,
        plot_metrics=config.plot_metrics, pairs=DEFAULT_PAIRS, seed=config.seed, prov=prov,
    )  # fmt: skip
    rubric_lines = kwargs.pop("rubric_lines")
    kwargs["summary"][:0] = plan_lines(release_dir(DATA_DIR, version, night), night)  # the first screen: what it was planned for
    path = Path(config.reports_dir or REPORTS_DIR) / version / night / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    pm_path = _write_postmortem(config, version, night, path.parent, gate_verdicts, behaviour_checks, rag_responses, metric_tables, golden_set)
    if pm_path:
        kwargs["summary"].append(f"Postmortem (golden-eval §9.3): {pm_path}")
    history = render_history(path.parents[2] / "history.html", Path(config.warehouse_dir or WAREHOUSE_DIR))  # nights (and days) so far
    kwargs["summary"].append(f"History of the nights and of production (golden-eval §9.3): {history}")
    html = render_report(**kwargs, signoffs=signoff_block(night_signoffs(DATA_DIR, version, night)))  # refreshed when sealed / signed
    write_record(path.with_name(RECORD_FILE), title=kwargs["title"], run=kwargs["run"], summary=kwargs["summary"],
                 sections=kwargs["sections"], provenance=kwargs["provenance"])  # fmt: skip
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    available = {k: o.frame is not None for k, o in optional.items()}
    n_plots = sum(len(v) for v in kwargs["plots"].values())
    summary_md = "\n".join(f"- {line}" for line in kwargs["summary"])
    context.add_output_metadata({
        "report_path": dg.MetadataValue.path(str(path)),
        "report_url": dg.MetadataValue.url(path.resolve().as_uri()),
        "summary": dg.MetadataValue.md(f"**Campaign report** `{path}`\n\n{summary_md}"),
        "rubric_lines": dg.MetadataValue.json(rubric_lines),  # the console's rubric block
        "sections_available": dg.MetadataValue.json(available),
        "missing": dg.MetadataValue.json({k: o.why for k, o in optional.items() if o.frame is None}),
        "plots": n_plots,
        "size_bytes": len(html.encode("utf-8")),
        "history": dg.MetadataValue.path(str(history)),
        "postmortem": dg.MetadataValue.path(str(pm_path)) if pm_path else "not needed: no blocking gate failed, no release flipped",
    })  # fmt: skip
    return pl.DataFrame({"golden_set_version": [version], "night": [night], "path": [str(path)], "plots": [n_plots],
                         "size_bytes": [len(html.encode("utf-8"))], **{f"has_{k}": [v] for k, v in available.items()}})  # fmt: skip
